package rdsoverdat

import (
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Delivery sinks. A daemon that pushes a socket's messages to its
// client (daemon_push.go) writes them into batches of entries handed
// ahead (rdsdproto's ahead.go). Delivered the ordinary way, each message
// would be a message object from the pool, queued on the socket and
// then copied into a batch. A socket with an armed sink instead lets a
// transport that has read a header read the payload straight into the
// sink's buffer, already in the batch's format (ClaimDirect, as for a
// waiting receiver's buffer): no message object, and a batch is one copy
// of consecutive entries.
//
// The sink is the head of the receive queue, in another form: its
// complete entries are queued messages, older than every message of
// rxq, so that everything that looks at the queue sees them as such:
// SO_RCVBUF and congestion (rcvBytes), Buffered, poll's POLLIN, and
// receives, which take them as they take queued messages. The daemon
// takes them into its batches (takeAhead) before anything of rxq.
//
// Order: a claim succeeds only while rxq is empty and no other claim is
// under way, so that every entry is older than every message of rxq. A
// claim that completes after the sink was disarmed is queued on rxq (a
// message object after all), behind the entries.
//
// Only plain messages go into a sink (no extension headers, so no RDMA
// cookie), only while no notification waits, which a receive returns
// before any message, and only below directRecvMin bytes: a message
// object costs little beside a large payload, and large entries would
// make the buffer's moves cost more than they save. The buffer grows
// up to twice SO_RCVBUF, beyond which messages are queued the ordinary
// way.

// sinkMinBuf is the least size of a sink's buffer, sinkFirstMax the
// most of its first one: made for the first message, as large as
// SO_RCVBUF lets the buffer grow, up to 1 MiB (13000 queued 64 B
// messages), so that a stream's first messages neither wait for the
// buffer to grow nor bring on collections by its growth, a socket
// with a large SO_RCVBUF that sees little holds no more, and one that
// only sends holds none.
const (
	sinkMinBuf   = 64 << 10
	sinkFirstMax = 1 << 20
)

// rxSink is a socket's delivery sink (sock.sink, under sock.mu).
// buf[start:done] holds complete entries, n of them; buf[done:end] is the
// entry a transport's claim is filling, if claimed.
type rxSink struct {
	armed            bool
	buf              []byte
	start, done, end int
	n                int
	claimed          bool
}

// sinkClaim is a socket as the transport sees it during a claim into
// its sink: the same receiver, whose DirectDone completes an entry.
type sinkClaim sock

// armSink arms or disarms s's sink: armed, plain messages for s may go
// into it. It reports whether it changed.
func (s *sock) armSink(on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sink.armed == on || (on && (s.closed.Load() || s.node == nil)) {
		return false
	}
	s.sink.armed = on
	if on {
		s.node.sinks.Add(1)
	} else {
		s.node.sinks.Add(-1)
	}
	return true
}

// sinkRoom makes room for an entry of need bytes at the end of the sink
// (s.mu held, no claim under way): it moves the entries to the front, or
// into a larger buffer, and reports false if the sink may not hold so
// much.
func (s *sock) sinkRoom(need int) bool {
	k := &s.sink
	live := k.end - k.start
	limit := max(2*s.rcvbuf, sinkMinBuf)
	if live+need > limit {
		// Also in a buffer made larger before SO_RCVBUF shrank.
		return false
	}
	if len(k.buf)-k.end >= need {
		return true
	}
	if live+need <= len(k.buf)/4 {
		// Moving at most a quarter of the buffer to free three
		// quarters: each byte is moved a third of a time on average.
		k.end = copy(k.buf, k.buf[k.start:k.end])
		k.start, k.done = 0, k.end
		return true
	}
	grow := 2 * len(k.buf)
	if grow == 0 {
		grow = sinkFirstMax
	}
	size := min(max(grow, sinkMinBuf, live+need), limit)
	buf := make([]byte, size)
	k.end = copy(buf, k.buf[k.start:k.end])
	k.buf, k.start, k.done = buf, 0, k.end
	return true
}

// claimSink reserves the entry of a message with header h in s's sink,
// if s may take it there; s.mu is held.
func (s *sock) claimSink(h wire.Header, p *connPath) (xport.Direct, bool) {
	k := &s.sink
	if !k.armed || k.claimed || s.closed.Load() || s.rxq.n > 0 || len(s.rdma.notes) > 0 || s.congNotify != 0 {
		return xport.Direct{}, false
	}
	l := int(h.Len())
	if l >= directRecvMin {
		return xport.Direct{}, false
	}
	need := rdsdproto.AheadHeaderLen + l
	if k.start == k.end {
		k.start, k.done, k.end = 0, 0, 0
	}
	if !s.sinkRoom(need) {
		return xport.Direct{}, false
	}
	at := k.end
	k.end += need
	k.claimed = true
	seq, retx := h.Sequence(), h.Flags()&wire.FlagRetransmitted != 0
	return xport.Direct{Buf: k.buf[at+rdsdproto.AheadHeaderLen : k.end : k.end], Sink: (*sinkClaim)(s),
		Path: (*xpath)(p), Seq: seq, Sport: h.Sport(), Retx: retx}, true
}

// ClaimSink offers a transport that has read header h, and not yet its
// payload, the delivery sink of the socket the message is for, as
// ClaimDirect does; unlike ClaimDirect it never claims a waiting
// receiver's buffer, so that a RecvMsg running a reader role may call it
// (a claim it leaves unfinished is finished by the next holder).
func (p *connPath) ClaimSink(h wire.Header) (xport.Direct, bool) {
	if p.conn.node.sinks.Load() == 0 || !p.plainInWindow(h) {
		return xport.Direct{}, false
	}
	s := p.conn.node.lookup(h.Dport())
	if s == nil {
		return xport.Direct{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimSink(h, p)
}

// DirectDone ends a claim into the sink (xport.DirectSink): with ok, and
// unless the message is a duplicate, the entry is complete and queued,
// on rxq if the sink was disarmed meanwhile.
func (c *sinkClaim) DirectDone(d xport.Direct, ok bool) {
	s := (*sock)(c)
	p := d.Path.(*xpath).core()
	var from netip.AddrPort
	if ok {
		from = netip.AddrPortFrom(p.conn.faddr, uint16(d.Sport))
		ok = p.acceptSink(d.Seq, d.Retx)
	}
	k := &s.sink
	s.mu.Lock()
	at := k.end - len(d.Buf) - rdsdproto.AheadHeaderLen
	k.claimed = false
	switch {
	case !ok || s.closed.Load():
		k.end = at
		s.mu.Unlock()
		if ok {
			p.conn.stats.dropped.Add(1)
			p.conn.node.stats.recvDropDeadSock.Add(1)
		}
		return
	case !k.armed:
		// Nobody may take entries any more: queue it on rxq.
		m := newMessage(len(d.Buf))
		copy(m.buf, d.Buf)
		m.from = from
		k.end = at
		s.mu.Unlock()
		if !s.deliver(m, d.Wakes) {
			m.release()
			p.conn.stats.dropped.Add(1)
			p.conn.node.stats.recvDropDeadSock.Add(1)
			return
		}
		p.conn.node.stats.recvDelivered.Add(1)
		p.conn.node.stats.recvBytes.Add(uint64(len(d.Buf)))
		return
	}
	rdsdproto.AheadEntry(k.buf[at:]).Set(len(d.Buf), from)
	k.done = k.end
	k.n++
	s.node.stats.recvDelivered.Add(1)
	s.node.stats.recvBytes.Add(uint64(len(d.Buf)))
	s.queuedUnlock(len(d.Buf), d.Wakes)
}

// sinkHead returns the oldest entry of the sink (s.mu held, k.n > 0):
// its payload and sender.
func (s *sock) sinkHead() ([]byte, netip.AddrPort) {
	k := &s.sink
	e := rdsdproto.AheadEntry(k.buf[k.start:])
	at := k.start + rdsdproto.AheadHeaderLen
	return k.buf[at : at+int(e.Len())], e.From()
}

// sinkPop forgets the oldest entry, of l payload bytes (s.mu held); the
// caller moves its bytes out of rcvBytes.
func (s *sock) sinkPop(l int) {
	k := &s.sink
	k.start += rdsdproto.AheadHeaderLen + l
	k.n--
	if k.start == k.end {
		k.start, k.done, k.end = 0, 0, 0
	}
}

// takeSink appends to body the oldest entries of the sink, up to
// maxMsgs messages and room payload bytes, and forgets them (s.mu held);
// it returns the body, the entries and their payload bytes, which the
// caller moves from rcvBytes to what it counts.
func (s *sock) takeSink(body []byte, maxMsgs, room int) ([]byte, int, int) {
	k := &s.sink
	at, n, bytes := k.start, 0, 0
	for n < k.n && n < maxMsgs {
		l := int(rdsdproto.AheadEntry(k.buf[at:]).Len())
		if l > room-bytes {
			break
		}
		at += rdsdproto.AheadHeaderLen + l
		n++
		bytes += l
	}
	if n == 0 {
		return body, 0, 0
	}
	body = append(body, k.buf[k.start:at]...)
	k.start, k.n = at, k.n-n
	if k.start == k.end {
		k.start, k.done, k.end = 0, 0, 0
	}
	return body, n, bytes
}

// dropSink forgets the sink's entries and disarms it (s.mu held): s
// closed. A claim under way ends on the closed socket.
func (s *sock) dropSink() {
	k := &s.sink
	k.start, k.n = k.done, 0
	if k.armed {
		k.armed = false
		s.node.sinks.Add(-1)
	}
}

// The rest of a sinkClaim is its socket's receiver.

func (c *sinkClaim) Waiting() bool                       { return (*sock)(c).Waiting() }
func (c *sinkClaim) Closed() bool                        { return (*sock)(c).Closed() }
func (c *sinkClaim) QueueEmpty() bool                    { return (*sock)(c).QueueEmpty() }
func (c *sinkClaim) LendReader(r *xport.RoleRef) bool    { return (*sock)(c).LendReader(r) }
func (c *sinkClaim) ReaderDone(r *xport.RoleRef, g bool) { (*sock)(c).ReaderDone(r, g) }
func (c *sinkClaim) Interrupted() bool                   { return (*sock)(c).Interrupted() }
