package rdsoverdat

import (
	"errors"
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The receive path (rds_recv_incoming): a transport reassembles a message
// and hands it to (*connPath).Receive. Congestion maps update the peer's map.
// Everything else passes the duplicate check (a retransmitted message
// below the path's next expected sequence number is dropped), then pings
// are answered with pongs, handshake probes and pongs set the path count
// and the peer's generation, and data goes to the socket bound to the
// destination port, or is dropped silently if there is none. A socket over
// its SO_RCVBUF still accepts the message but marks its port congested.

// Errors a transport gets from NewRxMessage for a header it must not
// accept; it should drop the transport connection. A send above
// RDS_MAX_MSG_SIZE fails with ErrMsgTooBig too, which matches
// syscall.EMSGSIZE as well.
var (
	ErrMsgTooBig  error = msgTooBig{}
	ErrBadCongMap       = errors.New("rds: congestion map of the wrong length")
)

// NewRxMessage returns a message holding a copy of header h with room for
// its h_len payload bytes, which the transport then fills through
// Payload before calling Receive.
//
// It is small enough to inline into the transport's entry point
// (xpath.NewRxMessage); a refused header's accounting is badRxHeader.
func (p *connPath) NewRxMessage(h wire.Header) (*message, error) {
	l := h.Len()
	if l > wire.MaxMsgSize || h.IsCongMap() && l != wire.CongMapBytes {
		return nil, p.badRxHeader(l)
	}
	m := p.takeRxSpare(int(l))
	m.hdr = [wire.HeaderLen]byte(h) // inline moves, not a memmove call
	m.rxPath = p
	return m, nil
}

// badRxHeader counts a header NewRxMessage refuses, of h_len l, and
// returns its error.
func (p *connPath) badRxHeader(l uint32) error {
	if l > wire.MaxMsgSize {
		p.conn.node.stats.recvDropBadHeader.Add(1)
		return ErrMsgTooBig
	}
	p.conn.node.stats.recvDropBadCongMap.Add(1)
	return ErrBadCongMap
}

// Receive takes ownership of a complete incoming message.
func (p *connPath) Receive(m *message) { p.receive(m, nil) }

// receive is Receive; a data message's socket is woken through w when
// w is not nil (xport.Wakes), at once otherwise.
func (p *connPath) receive(m *message, w *xport.Wakes) {
	c := p.conn
	node := c.node
	h := m.Header()
	if h.IsCongMap() {
		c.stats.congMapsRecvd.Add(1)
		node.stats.congUpdateReceived.Add(1)
		mask := c.fcong.replace(m.buf)
		m.release()
		node.stack.congUpdated(mask)
		return
	}
	seq, sport, dport := h.Sequence(), h.Sport(), h.Dport()
	p.mu.Lock()
	if seq < p.nextRxSeq && h.Flags()&wire.FlagRetransmitted != 0 {
		p.mu.Unlock()
		c.stats.dropped.Add(1)
		node.stats.recvDropOldSeq.Add(1)
		m.release()
		return
	}
	p.nextRxSeq = seq + 1
	s, sPort := p.rxSock, p.rxPort
	p.mu.Unlock()
	c.stats.received.Add(1)

	switch {
	case dport == wire.PingPort:
		if sport != wire.PingPort {
			node.stats.recvPing.Add(1)
			if sport == wire.ProbePort {
				node.stats.recvHSProbe.Add(1)
				p.handshake(h)
				node.stats.sendPong.Add(1)
				p.sendControl(wire.PingPort, sport, true)
			} else {
				node.stats.sendPong.Add(1)
				p.sendControl(wire.PingPort, sport, false)
			}
		}
		m.release()
		return
	case wire.IsHandshakePong(sport, dport):
		node.stats.recvHSProbe.Add(1)
		p.handshake(h)
		c.startLanes()
		m.release()
		return
	}
	if sport == wire.PingPort {
		node.stats.recvPong.Add(1)
	}
	if s == nil || sPort != dport || s.closed.Load() {
		if s = node.lookup(dport); s == nil {
			c.stats.dropped.Add(1)
			node.stats.recvDropNoSock.Add(1)
			m.release()
			return
		}
		p.mu.Lock()
		p.rxSock, p.rxPort = s, dport
		p.mu.Unlock()
	}
	m.from = netip.AddrPortFrom(c.faddr, uint16(sport))
	p.rdmaIncoming(m, s)
	l := len(m.buf) // m belongs to the socket once delivered
	if !s.deliver(m, w) {
		c.stats.dropped.Add(1)
		node.stats.recvDropDeadSock.Add(1)
		m.release()
		return
	}
	node.stats.recvDelivered.Add(1)
	node.stats.recvBytes.Add(uint64(l))
}

// handshake reads NPATHS and GEN_NUM from a probe or its pong.
func (p *connPath) handshake(h wire.Header) {
	n, present := 0, false
	var gen uint32
	for it := h.Exts(); it.Next(); {
		e := it.Ext()
		if v, ok := e.NPaths(); ok {
			n, present = int(v), true
		}
		if g, ok := e.GenNum(); ok {
			gen = g
		}
		if e.Type == wire.ExtSportIdx {
			p.conn.peerSportIdx.Store(true)
		}
	}
	c := p.conn
	c.peerGenUpdate(gen)
	c.setNPaths(n, present)
}

// deliver queues m on the socket (rds_recv_incoming's tail and
// rds_recv_rcvbuf_delta): false if the socket is closing. The wake-up
// goes through w when w is not nil.
func (s *sock) deliver(m *message, w *xport.Wakes) bool {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return false
	}
	s.rxq.push(m)
	s.cancelOffer() // a direct message must not overtake m
	s.queuedUnlock(len(m.buf), w)
	return true
}

// queuedUnlock counts n bytes just queued on s (rxq or the delivery
// sink) against SO_RCVBUF, releases s.mu, and wakes what waits for
// them (Wake), at once or, with w and a daemon's socket, when the
// transport's reader is done with what it has read; then it announces
// the port congested if those bytes took it past the limit, at once,
// since senders must stop.
func (s *sock) queuedUnlock(n int, w *xport.Wakes) {
	s.rcvBytes += n
	congest := s.congestLocked()
	// Only a daemon's socket (its sink armed) waits for the end of the
	// read: its pusher hands the read's messages ahead in one batch. A
	// receiver in process takes one message a call, and waking it later
	// measured no better (docs/RDSD.md, run 8).
	later := w != nil && s.sink.armed
	if later && !s.wakeDue.Load() {
		s.wakeDue.Store(true)
	}
	s.mu.Unlock()
	if later {
		w.Add(s)
	} else {
		s.wake(false)
	}
	if congest {
		s.syncCong()
	}
}

// Wake wakes what waits for s's messages (xport.Waker): a receiver
// that waits, pollers and a RecvMsg of s running another connection's
// reader role.
func (s *sock) Wake() { s.wake(true) }

// wake is Wake; read says a transport's reader calls it at the end of a
// read (xport.Wakes), where a pusher asleep may be spared: the messages
// go to its client from here, and it wakes only if some could not.
//
// rxSig gets a token only for a waiter. A RecvMsg counts itself in
// reader.waiters in the hold of s.mu that found the queue empty, and
// the message was queued in a later or earlier hold before this call:
// so either that RecvMsg saw the message or this call sees its count.
// The pusher marks itself idle (pushIdle) before its look, which this
// call's clearing of wakeDue precedes, so one of the two sees the
// other's store. A token for nobody would cost a channel look per
// message and wake the next blocking RecvMsg for nothing.
func (s *sock) wake(read bool) {
	if s.wakeDue.Load() {
		s.wakeDue.Store(false)
	}
	if s.pushIdle.Load() {
		if !read || !s.pushNow() {
			signal(s.rxSig)
		}
	} else if s.reader.waiters.Load() > 0 {
		signal(s.rxSig)
	}
	s.signalPoll()
	s.interruptReader()
}

// uncongestLocked clears s's congestion once what it holds has fallen
// below half of SO_RCVBUF, and reports whether this call did (s.mu
// held).
func (s *sock) uncongestLocked() bool {
	if !s.congested || s.rcvBytes+s.ahead >= s.rcvbuf/2 {
		return false
	}
	s.congested = false
	return true
}

// congestLocked marks s congested when what it holds (queued and
// handed ahead) exceeds SO_RCVBUF, and reports whether this call did
// (s.mu held).
func (s *sock) congestLocked() bool {
	if s.congested || s.rcvBytes+s.ahead <= s.rcvbuf {
		return false
	}
	s.congested = true
	return true
}

// syncCong makes the node's congestion bit for port follow s.congested.
// The bit cannot be changed under s.mu (announcing a change locks every
// socket), so a delivery that congests the port and a read that
// uncongests it can reach the map in the wrong order: the read clears a
// bit not yet set, the delivery then sets it, and the port stays
// congested with nobody left to clear it (senders wait for good). Each
// caller changes s.congested under s.mu and then calls syncCong, which
// applies the state current at that moment, serialized by congMu: the
// last call applies the last change.
//
// The node and the port are read here, in the same hold: they never
// change once s is bound, and its callers, on every message's path,
// need them only when the congestion changed.
func (s *sock) syncCong() {
	s.congMu.Lock()
	defer s.congMu.Unlock()
	s.mu.Lock()
	want, node, port := s.congested, s.node, wire.Port(s.bound.Port())
	s.mu.Unlock()
	if want {
		node.congSet(port)
	} else {
		node.congClear(port)
	}
}

// recvmsg is Socket.RecvMsg.
func (s *sock) recvmsg(m *Msg, flags MsgFlags) (int, error) {
	m.Flags = 0
	m.Control = m.Control[:0]
	m.Addr = netip.AddrPort{} // a notification has no sender
	if flags&MsgOOB != 0 {
		return 0, nil
	}
	var until time.Time
	tryReader, first := true, true
	for {
		s.mu.Lock()
		if first {
			// SO_RCVTIMEO in the loop's first hold of the lock rather
			// than a hold of its own: a call that finds its message
			// at once then takes the lock once.
			until, first = opEnd(s.rcvTimeo), false
		}
		if s.closed.Load() {
			s.mu.Unlock()
			return 0, errClosed
		}
		if s.takeNotes(m) {
			s.mu.Unlock()
			return 0, nil
		}
		if s.congNotify != 0 {
			m.Control = append(m.Control, CongUpdate(s.congNotify))
			s.congNotify = 0
			s.mu.Unlock()
			return 0, nil
		}
		if s.sink.n > 0 {
			return s.recvSinkHead(m, flags)
		}
		if in := s.rxq.head; in != nil {
			n := copy(m.Data, in.buf)
			if len(in.buf) > len(m.Data) {
				m.Flags |= MsgTrunc
			}
			if flags&MsgTrunc != 0 {
				n = len(in.buf)
			}
			m.Addr = in.from
			if in.hasCookie {
				m.Control = append(m.Control, RDMADest(in.cookie))
			}
			if flags&MsgPeek != 0 {
				s.mu.Unlock()
				signal(s.rxSig) // still there for the next reader
				return n, nil
			}
			s.rxq.pop()
			s.rcvBytes -= len(in.buf)
			uncongest := s.uncongestLocked()
			more := s.rxq.n > 0
			s.mu.Unlock()
			in.releaseRx()
			if more {
				signal(s.rxSig)
			}
			if uncongest {
				s.syncCong()
			}
			return n, nil
		}
		if flags&MsgDontWait != 0 {
			r := s.dropReader()
			s.mu.Unlock()
			if r != nil {
				r.R.GiveBack() // the caller will wait elsewhere, if at all
			}
			return 0, eAGAIN
		}
		if r := s.reader.lent; r != nil && tryReader && s.reader.hold.Load() == nil {
			// A connection's reader role is lent to this socket and no
			// other RecvMsg of it runs one: read it here (recv_reader.go).
			var limit time.Time
			var limitErr error
			if !s.rdeadline.IsZero() || !until.IsZero() { // most have neither
				limit, limitErr = recvLimit(s.rdeadline, until)
			}
			s.holdReader(r)
			s.mu.Unlock()
			if !limit.IsZero() && time.Until(limit) <= 0 {
				s.ReaderDone(r, false)
				return 0, limitErr
			}
			n, from, res := r.R.Run(s, m.Data, flags&MsgPeek != 0, limit)
			switch res {
			case xport.RRFilled:
				m.Addr = from
				return n, nil
			case xport.RRTimedOut:
				return 0, limitErr
			case xport.RRBusy, xport.RRGone:
				tryReader = false // wait the ordinary way
			}
			continue
		}
		offered := s.offerDirect(m.Data, flags)
		s.reader.waiters.Add(1)
		s.mu.Unlock()
		var err error
		if !offered {
			err = s.block(s.rxSig, until, true)
		} else {
			err = s.blockOr(s.rxSig, s.rxw.wake, until, true)
		}
		s.reader.waiters.Add(-1)
		tryReader = true
		if offered {
			if n, from, ok := s.withdrawDirect(); ok {
				m.Addr = from
				return n, nil // read straight into m.Data (recv_direct.go)
			}
		}
		if err != nil {
			return 0, err
		}
	}
}

// recvSinkHead is recvmsg's take of the oldest entry of the delivery
// sink (recv_sink.go), older than anything on rxq; s.mu is held, and
// released.
func (s *sock) recvSinkHead(m *Msg, flags MsgFlags) (int, error) {
	data, from := s.sinkHead()
	n := copy(m.Data, data)
	if len(data) > len(m.Data) {
		m.Flags |= MsgTrunc
	}
	if flags&MsgTrunc != 0 {
		n = len(data)
	}
	m.Addr = from
	if flags&MsgPeek != 0 {
		s.mu.Unlock()
		signal(s.rxSig) // still there for the next reader
		return n, nil
	}
	s.sinkPop(len(data))
	s.rcvBytes -= len(data)
	uncongest := s.uncongestLocked()
	more := s.rxq.n > 0 || s.sink.n > 0
	s.mu.Unlock()
	if more {
		signal(s.rxSig)
	}
	if uncongest {
		s.syncCong()
	}
	return n, nil
}
