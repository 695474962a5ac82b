package rdsoverdat

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// connection is the RDS connection between a node and one remote address over
// one transport (the kernel's rds_connection). It never goes away: its
// paths go up and down, and its sequence numbers and queues survive
// reconnects. A multipath transport runs up to wire.MPathWorkers paths;
// the number in use (npaths) is negotiated by the NPATHS probe exchange.
type connection struct {
	node  *rdsNode
	faddr netip.Addr
	ttype TransportType
	nt    nodeTransport
	loop  bool // loop transport: peer map is the peer node's local map
	// ackBySeq: the transport is an ackBySequence one; ack keys are
	// sequence numbers, set by NextTx.
	ackBySeq bool

	maxPaths int
	paths    [wire.MPathWorkers]*connPath
	// npaths is the negotiated path count, 0 until the handshake
	// completes (or forever for a single-path transport, which uses 1).
	npaths    atomic.Int32
	peerGen   atomic.Uint32
	mapQueued atomic.Bool // local congestion map to (re)send
	pinged    atomic.Bool // a handshake probe is outstanding
	// ponged: the peer answered our handshake probe, so it knows our
	// path count. Only then may lanes > 0 connect: a 6.1 kernel that
	// has not yet read our NPATHS accepts only path 0 and resets the
	// others (rds_tcp_accept_one_path over max(1, c_npaths) slots).
	ponged atomic.Bool
	// peerSportIdx: the peer announced RDS_EXTHDR_SPORT_IDX, so the TCP
	// source port of its path i connection is i modulo wire.MPathWorkers.
	peerSportIdx atomic.Bool
	fcong        *congMap
	stats        connCounters
	hsWait       chan struct{} // closed and replaced when npaths becomes known
	hsMu         sync.Mutex
	rdmaAddrs    rdmaAddrCache // where the peer's mappings start (rdma_mr.go)
}

func newConn(n *rdsNode, faddr netip.Addr, t TransportType, nt nodeTransport) *connection {
	c := &connection{node: n, faddr: faddr, ttype: t, nt: nt, loop: t == TransLoop, maxPaths: 1,
		hsWait: make(chan struct{})}
	_, c.ackBySeq = nt.(ackBySequence)
	if mp, ok := nt.(multipather); ok && mp.MaxPaths() > 1 {
		c.maxPaths = min(mp.MaxPaths(), wire.MPathWorkers)
	}
	if c.loop {
		if peer := n.stack.nodeAt(faddr); peer != nil {
			c.fcong = &peer.lcong
		} else {
			c.fcong = new(congMap)
		}
		c.npaths.Store(1)
	} else {
		c.fcong = new(congMap)
		if c.maxPaths == 1 {
			c.npaths.Store(1)
		}
	}
	for i := range c.maxPaths {
		c.paths[i] = &connPath{conn: c, index: i, nextTxSeq: 1}
	}
	return c
}

// Node returns the local node.
func (c *connection) Node() *rdsNode { return c.node }

// LocalAddr and RemoteAddr return the connection's addresses.
func (c *connection) LocalAddr() netip.Addr  { return c.node.addr }
func (c *connection) RemoteAddr() netip.Addr { return c.faddr }

// Transport returns the transport type.
func (c *connection) Transport() TransportType { return c.ttype }

// Path returns path i (0 <= i < MaxPaths).
func (c *connection) Path(i int) *connPath { return c.paths[i] }

// MaxPaths is the number of paths this connection may use.
func (c *connection) MaxPaths() int { return c.maxPaths }

// NPaths is the negotiated path count (0 while unknown).
func (c *connection) NPaths() int { return int(c.npaths.Load()) }

// Stats returns a snapshot of the connection's counters.
func (c *connection) Stats() ConnStats { return c.stats.snapshot() }

// PeerGenNum is the generation number the peer announced (0 if none).
func (c *connection) PeerGenNum() uint32 { return c.peerGen.Load() }

func (c *connection) allPaths() []*connPath { return c.paths[:c.maxPaths] }

// pathFor picks the path for a socket's messages: its hash over the
// negotiated paths, path 0 while the count is unknown. Sockets keep the
// path of their first message to a connection (Socket.lanes): a socket
// that started on path 0 before the handshake stays there, because TCP
// acknowledging path 0's messages does not mean the receiver has read
// them, so moving to another lane could overtake them.
func (c *connection) pathFor(s *sock) *connPath {
	n := c.npaths.Load()
	if n <= 1 {
		return c.paths[0]
	}
	return c.paths[s.pathHash%uint32(n)]
}

// kickAny wakes a path that can carry the pending congestion map.
func (c *connection) kickAny() {
	for _, p := range c.allPaths() {
		if p.IsUp() {
			c.nt.Kick(p)
			return
		}
	}
	c.nt.Connect(c.paths[0])
}

// startLanes connects lanes 1..npaths-1 once the peer has answered our
// probe (rds_start_mprds; the transport connects only from the smaller
// address).
func (c *connection) startLanes() {
	c.ponged.Store(true)
	for _, q := range c.paths[1:max(c.NPaths(), 1)] {
		c.nt.Connect(q)
	}
}

// setNPaths records the negotiated path count (rds_recv_hs_exthdrs).
func (c *connection) setNPaths(peer int, present bool) {
	n := int(c.npaths.Load())
	if present {
		n = min(peer, c.maxPaths)
	}
	n = max(n, 1)
	old := c.npaths.Swap(int32(n))
	c.pinged.Store(false)
	if old == 0 {
		c.hsMu.Lock()
		close(c.hsWait)
		c.hsWait = make(chan struct{})
		c.hsMu.Unlock()
	}
}

// peerGenUpdate handles a GEN_NUM from the peer (rds_conn_peer_gen_update):
// a different non-zero number than before means the peer restarted, so the
// sequence spaces start over and unacknowledged messages are not resent.
//
// Messages still queued are renumbered in the new space (and are no longer
// retransmissions: the new peer never saw them), so that everything sent
// from now on carries increasing sequence numbers. A transport acking by
// sequence number depends on that: an ack frees the messages up to it in
// send order, and one old, higher number queued behind the reset would
// hold every new message behind it forever.
func (c *connection) peerGenUpdate(g uint32) {
	if g == 0 {
		return
	}
	old := c.peerGen.Swap(g)
	if old == 0 || old == g {
		return
	}
	for _, p := range c.allPaths() {
		p.mu.Lock()
		p.nextTxSeq, p.nextRxSeq = 1, 0
		for m := p.retrans.head; m != nil; m = m.next {
			m.flags |= msgFlush
		}
		for m := p.sendQ.head; m != nil; {
			next := m.next
			if m.rdma != nil && m.flags&msgRetransmitted != 0 {
				// Its op ran for the previous incarnation, if at all:
				// never again (see NextTx).
				p.sendQ.remove(m)
				c.node.stats.sendFlushed.Add(1)
				m.rdma.dropped()
				p.complete(m)
				m = next
				continue
			}
			m.flags &^= msgRetransmitted
			m.sequence = p.nextTxSeq
			p.nextTxSeq++
			m.Header().SetSequence(m.sequence)
			m = next
		}
		p.mu.Unlock()
	}
}

type pathState uint8

const (
	pathDown pathState = iota
	pathUp
)

// connPath is one lane of a connection (the kernel's rds_conn_path): its own
// send queue, retransmit list and sequence numbers, carried by one
// transport connection at a time.
//
// Locking: mu protects the queues, sequence numbers and state. Lock order
// is connPath.mu before Socket.mu; the core never calls a transport with mu
// held.
//
// Generations: the transport connections that carry a path one after the
// other are numbered (gen). A transport reads the number for a connection
// (Gen) after the previous connection's Down has returned and before it
// reports Up for it (Up kicks, and the round it starts needs the number),
// and takes messages for it only with NextTx(gen). NextTx moves each
// message it hands out to the retransmit list under mu; Down, under mu,
// puts the retransmit list back in front of the send queue and ends the
// number in the same critical section. So when Down runs, every message
// handed out for the ending connection has been acknowledged, given back
// (TxAbort) or is requeued then, and NextTx refuses the number from then
// on. Without it, a round that loaded the connection before its Down and
// runs on after the path came up on the next one (the dat transport's
// kicker holds an EP across NextTx calls; the tcp writer reports Down
// itself, after its last NextTx) would take a message for the dead
// connection: posted there, left on the retransmit list where no Down of
// its own requeues it, it would be freed unsent by the next connection's
// ack of a later sequence. What such a round took before the Down is
// requeued already: posting it on the dead connection loses nothing, and
// its TxDone or TxAbort only releases it.
type connPath struct {
	conn  *connection
	index int

	// TransportData is the transport's per-path state, set by the
	// transport (its own synchronization).
	TransportData atomic.Value

	mu        sync.Mutex
	state     pathState
	sendQ     msgList // queued, not yet transmitted; retransmissions first
	retrans   msgList // transmitted, waiting for the peer's ack
	nextTxSeq wire.Seq
	nextRxSeq wire.Seq
	// rxSock is the socket bound to rxPort, where the last message
	// received went: a socket keeps its port until it closes, so while
	// it is open the next message to that port goes to it without the
	// node's map and its read lock (receive).
	rxSock *sock
	rxPort wire.Port
	// rxTarget is the socket readerTarget found last, kept likewise
	// (valid while open and its nodePort is the port asked for); atomic,
	// as transports may look up from more than one goroutine.
	rxTarget atomic.Pointer[sock]
	// rxSpare is a received message that a RecvMsg freed, kept for the
	// path's next NewRxMessage (rx_spare.go).
	rxSpare atomic.Pointer[message]
	// rxSpares holds up to maxRxSpares more small freed messages
	// (linked by next) under rxSpareMu, for a stream (rx_spare.go).
	rxSpareMu sync.Mutex
	rxSpares  spareList
	ups       uint64
	gen       uint64 // the carrying connection's generation: Downs that ended an up
}

// Conn returns the connection the path belongs to.
func (p *connPath) Conn() *connection { return p.conn }

// Index returns the path's index in its connection.
func (p *connPath) Index() int { return p.index }

// IsUp reports whether the path is up.
func (p *connPath) IsUp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == pathUp
}

// HasWork reports whether the path has messages (or a map) to transmit
// or unacknowledged messages: a reason to bring it up.
func (p *connPath) HasWork() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sendQ.n > 0 || p.retrans.n > 0
}

// Gen returns the generation of the transport connection that carries,
// or is to carry, the path: the one a transport passes to NextTx for its
// messages. It is read once the previous connection's Down has returned,
// before Up is reported for the new one.
func (p *connPath) Gen() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// Up is called by the transport when the path can carry messages. The
// local congestion map is queued as the first message (the kernel does so
// on every path that comes up), then everything queued is transmitted.
func (p *connPath) Up() {
	c := p.conn
	p.mu.Lock()
	p.state = pathUp
	p.ups++
	p.mu.Unlock()
	if !c.loop {
		c.mapQueued.Store(true)
	}
	c.node.stack.log.Debug().Stringer("laddr", c.node.addr).Stringer("faddr", c.faddr).
		Int("path", p.index).Msg("rds path up")
	c.nt.Kick(p)
}

// Down is called by the transport when the path lost its transport
// connection. Every transmitted but unacknowledged message goes back to
// the front of the send queue, flagged retransmitted, unless the peer's
// restart flushed it (rds_send_path_reset). The connection's generation
// ends in the same critical section, so that nothing more is handed out
// for it (see connPath). A Down of a path that is not up ends none: a
// repeated report leaves the number the next connection has read alone.
//
// A message with an RDMA op goes back too, although it is never sent
// again: the peer may have received it and only its ack been lost, and
// the next connection's handshake (DropAckedSeq) then says so, which
// makes the op's outcome SUCCESS. What the handshake does not cover is
// dropped by NextTx, as rds_send_xmit drops it. Dropping it here would
// notify RDS_RDMA_DROPPED for an op whose data and message had arrived.
func (p *connPath) Down(err error) {
	c := p.conn
	p.mu.Lock()
	if p.state == pathUp {
		p.gen++
	}
	if p.state != pathUp && p.retrans.n == 0 {
		p.state = pathDown
		p.mu.Unlock()
		return
	}
	p.state = pathDown
	var requeue msgList
	for m := p.retrans.popFront(); m != nil; m = p.retrans.popFront() {
		if m.flags&msgFlush != 0 {
			c.node.stats.sendFlushed.Add(1)
			m.rdma.dropped()
			p.complete(m)
			continue
		}
		m.flags |= msgRetransmitted | msgAckRequired
		requeue.pushBack(m)
		c.stats.retransmitted.Add(1)
		c.node.stats.sendRetransmit.Add(1)
	}
	p.sendQ.spliceFront(&requeue)
	p.mu.Unlock()
	if p.index == 0 {
		c.pinged.Store(false) // a probe lost with the connection is sent again
	}
	c.stats.resets.Add(1)
	c.node.stats.connReset.Add(1)
	ev := c.node.stack.log.Debug()
	if ev.Enabled() {
		ev.Stringer("laddr", c.node.addr).Stringer("faddr", c.faddr).Int("path", p.index).
			AnErr("err", err).Msg("rds path down")
	}
}

// NextTx returns the next message to transmit on the transport
// connection of generation gen (Gen), or nil when there is none, the
// path is down or that connection's Down has run. A pending congestion
// map goes first. The message moves to the retransmit list (except a
// map) and the caller holds a reference until TxDone.
func (p *connPath) NextTx(gen uint64) *message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nextTxLocked(gen)
}

// NextTxStream is NextTx for a transport that writes into a byte stream
// (xport.Path): m's header gets its WireFlags and m, unless a
// congestion map, the ack key of the stream offset past it when written
// at off, under the same hold of the lock, which also reads the numbers
// of queued and unacknowledged messages.
func (p *connPath) NextTxStream(gen, off uint64) (m *message, queued, unacked int) {
	p.mu.Lock()
	if m = p.nextTxLocked(gen); m != nil {
		m.Header().SetFlags(m.WireFlags())
		if !m.congMap {
			m.ackKey = off + wire.HeaderLen + uint64(len(m.buf))
		}
	}
	queued, unacked = p.sendQ.n, p.retrans.n
	p.mu.Unlock()
	return m, queued, unacked
}

func (p *connPath) nextTxLocked(gen uint64) *message {
	c := p.conn
	if p.state != pathUp || gen != p.gen {
		return nil
	}
	// A load first: a map is rarely queued, and the swap is a locked
	// instruction per message.
	if !c.loop && c.mapQueued.Load() && c.mapQueued.CompareAndSwap(true, false) {
		m := newMessage(wire.CongMapBytes)
		f := wire.CongMapFields()
		m.Header().Encode(&f)
		m.congMap = true
		c.node.lcong.encode(m.buf)
		c.stats.congMapsSent.Add(1)
		c.node.stats.congUpdateSent.Add(1)
		return m
	}
	m := p.sendQ.head
	for m != nil && m.rdma != nil && m.flags&msgRetransmitted != 0 {
		// An RDMA op never runs twice (rds_send_xmit): its message went
		// out on an earlier connection and this one's handshake did not
		// acknowledge it, so the peer never had it.
		p.sendQ.remove(m)
		m.rdma.dropped()
		p.complete(m)
		m = p.sendQ.head
	}
	if m == nil {
		return nil
	}
	p.sendQ.moveFrontTo(&p.retrans)
	// A transport acking by sequence number (dat) takes acks on another
	// goroutine, so the key is set here, under mu. Any other transport
	// sets it once it knows where m goes (NextTxStream, SetAckKey); until
	// then nothing acknowledges m, not even the key of its previous
	// transmission.
	if c.ackBySeq {
		m.ackKey = uint64(m.sequence)
	} else {
		m.ackKey = ^uint64(0)
	}
	m.txFlags = m.flags
	m.refs.Add(1)
	c.stats.sent.Add(1)
	return m
}

// TxDone gives back the reference NextTx handed out.
func (p *connPath) TxDone(m *message) { m.release() }

// TxAbort gives back a message NextTx handed out that the transport
// could not (completely) transmit because its connection failed under
// it: the message returns to the front of the send queue, for the path's
// next connection, and the reference is released. The transport must not
// have taken a later message meanwhile, so that order is kept. A message
// with an RDMA op is dropped instead: its op may have run in part, and
// the peer cannot have the message.
func (p *connPath) TxAbort(m *message) {
	p.mu.Lock()
	if m.onList == &p.retrans {
		p.retrans.remove(m)
		if m.rdma != nil {
			m.rdma.dropped()
			p.complete(m)
		} else {
			var one msgList
			one.pushBack(m)
			p.sendQ.spliceFront(&one)
		}
	}
	p.mu.Unlock()
	m.release()
}

// DropAcked frees the retransmit list's leading messages whose ack key
// is at most key (rds_send_path_drop_acked): the peer has them. With
// acks by sequence number, messages of the peer's previous incarnation
// (msgFlush) go with any ack: their numbers belong to the old sequence
// space, and an ack in the new one follows them on the same connection.
//
// An ack by sequence at or past the next sequence to send cannot be about
// this sequence space: it comes from a peer that has not yet heard of our
// restart and acks what our previous incarnation sent. It frees nothing
// of ours (it would free messages the peer never had).
func (p *connPath) DropAcked(key uint64) int {
	c := p.conn
	p.mu.Lock()
	if c.ackBySeq && key >= uint64(p.nextTxSeq) {
		key = 0
	}
	n := 0
	var run ackRun
	for m := p.retrans.head; m != nil && (m.ackKey <= key || c.ackBySeq && m.flags&msgFlush != 0); m = p.retrans.head {
		p.retrans.remove(m)
		m.rdma.acked()
		run.add(m)
		n++
	}
	run.done()
	p.mu.Unlock()
	if n > 0 {
		p.conn.stats.acked.Add(uint64(n))
		p.conn.node.stats.sendDropAcked.Add(uint64(n))
	}
	return n
}

// DropAckedSeq frees the messages, transmitted or requeued for
// retransmission, whose sequence number is at most seq: what the peer
// says it received when a connection comes up (the ack_seq of rds_ib's
// connection private data), so that they are not sent again. It is an
// ack like DropAcked's: an RDMA op of such a message succeeded.
func (p *connPath) DropAckedSeq(seq wire.Seq) int {
	p.mu.Lock()
	if seq >= p.nextTxSeq {
		seq = 0 // another sequence space's (see DropAcked)
	}
	n := 0
	var run ackRun
	for _, l := range []*msgList{&p.retrans, &p.sendQ} {
		for m := l.head; m != nil && m.sequence <= seq && (l == &p.retrans || m.flags&msgRetransmitted != 0); m = l.head {
			l.remove(m)
			m.rdma.acked()
			run.add(m)
			n++
		}
	}
	run.done()
	p.mu.Unlock()
	if n > 0 {
		p.conn.stats.acked.Add(uint64(n))
		p.conn.node.stats.sendDropAcked.Add(uint64(n))
	}
	return n
}

// complete ends a sent message's life on the send side: its payload no
// longer counts against the socket's SO_SNDBUF: an ackRun of one
// message. p.mu is held.
func (p *connPath) complete(m *message) {
	var run ackRun
	run.add(m)
	run.done()
}

// ackRun completes the messages one ack frees: a run of them
// that one socket sent returns its SO_SNDBUF room and its spares in one
// sendDone, one hold of the socket's lock and one signal each, instead
// of one per message. p.mu is held from add to flush.
type ackRun struct {
	s     *sock
	n     int      // payload bytes of the run
	freed *message // the run's messages freed (unref), linked by next
}

// add completes m as part of the run, flushing the run before it if m
// is another socket's.
func (r *ackRun) add(m *message) {
	s := m.sock
	if s == nil {
		m.release()
		return
	}
	if s != r.s {
		if r.s != nil {
			r.flush()
		}
		r.s = s
	}
	r.n += len(m.buf)
	if m.unref() {
		m.next, r.freed = r.freed, m
	}
}

// flush returns the run's room and spares to its socket and starts an
// empty run.
func (r *ackRun) flush() {
	r.done()
	*r = ackRun{}
}

// done returns the run's room and spares to its socket, the run's last
// use: clearing it as flush does would cost a message's ack a dozen
// instructions for nothing. It inlines: sendDone recycles what the
// socket does not keep.
func (r *ackRun) done() {
	if r.s != nil {
		r.s.sendDone(r.n, r.freed)
	}
}

// enqueue assigns the next sequence number and queues m. It fails if the
// sending socket closed meanwhile (its messages are being cancelled).
func (p *connPath) enqueue(m *message) bool {
	p.mu.Lock()
	if m.sock != nil && m.sock.closed.Load() {
		p.mu.Unlock()
		return false
	}
	m.sequence = p.nextTxSeq
	p.nextTxSeq++
	m.Header().SetSequence(m.sequence)
	p.sendQ.pushBack(m)
	up := p.state == pathUp
	p.mu.Unlock()
	if up {
		p.conn.nt.Kick(p)
	} else {
		p.conn.nt.Connect(p)
	}
	return true
}

// cancel removes the messages of s (to dst, if valid) from both queues.
func (p *connPath) cancel(s *sock, dst netip.AddrPort) {
	p.mu.Lock()
	n := 0
	for _, l := range []*msgList{&p.sendQ, &p.retrans} {
		for m := l.head; m != nil; {
			next := m.next
			if m.sock == s && (!dst.IsValid() || m.dport == wire.Port(dst.Port())) {
				l.remove(m)
				m.flags |= msgCanceled
				if m.rdma != nil {
					m.rdma.Complete(RDMACanceled)
				}
				p.complete(m)
				n++
			}
			m = next
		}
	}
	p.mu.Unlock()
	p.conn.node.stats.sendCanceled.Add(uint64(n))
}

// Pending returns the number of queued and unacknowledged messages.
func (p *connPath) Pending() (queued, unacked int) {
	p.mu.Lock()
	queued, unacked = p.sendQ.n, p.retrans.n
	p.mu.Unlock()
	return queued, unacked
}

// NextSeqs returns the next sequence numbers to send and to expect
// (rds-info's NextTX/NextRX).
func (p *connPath) NextSeqs() (tx, rx wire.Seq) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.nextTxSeq, p.nextRxSeq
}

// sendControl queues a sequenced 0-byte control message (ping, pong,
// probe) that belongs to no socket.
func (p *connPath) sendControl(sport, dport wire.Port, probe bool) {
	m := newMessage(0)
	h := m.Header()
	h.Encode(&wire.Fields{Sport: sport, Dport: dport})
	m.dport = dport
	if probe {
		m.probe = true
		c := p.conn
		_ = h.AddExt(wire.NPathsExt(uint16(c.maxPaths)))
		_ = h.AddExt(wire.GenNumExt(c.node.stack.genNum))
		if c.maxPaths > 1 {
			_ = h.AddExt(wire.SportIdxExt())
		}
	}
	p.enqueue(m)
}

// SendProbe queues a handshake probe ping (sport 1, dport 0) announcing
// this node's path count and generation number, unless one is already
// outstanding. Multipath transports call it when path 0 comes up, so the
// path count gets negotiated and the peer learns of a restart.
func (p *connPath) SendProbe() {
	c := p.conn
	if !c.pinged.CompareAndSwap(false, true) {
		return
	}
	c.node.stats.sendPing.Add(1)
	p.sendControl(wire.ProbePort, wire.PingPort, true)
}

// Reset drops every path's transport connection, as a transport error
// would; unacknowledged messages are retransmitted once the paths are up
// again (the kernel's rds_conn_drop; UEK's RDS_CONN_RESET).
func (c *connection) Reset() {
	for _, p := range c.allPaths() {
		c.nt.Reset(p)
	}
}
