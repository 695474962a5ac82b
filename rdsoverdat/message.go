package rdsoverdat

import (
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// message is one RDS message inside the node (the kernel's rds_message on
// the send side and rds_incoming on the receive side): its 48-byte header
// and payload, plus the bookkeeping that queues it on a path or a socket.
//
// Ownership: a message is pooled. On the send side the path owns it from
// queueing until it is acknowledged or cancelled; a transport that took
// it with (*connPath).NextTx holds an extra reference and gives it back with
// (*connPath).TxDone. On the receive side the transport builds it with
// (*connPath).NewRxMessage and hands it over with (*connPath).Receive; from then
// on the core owns it.
type message struct {
	msgState
	// rdmaOp is the storage of rdma, set only while rdma points to it:
	// half the message, which a message without an op need not clear.
	rdmaOp rdmaOp
}

// msgState is a message but for its RDMA op's storage: what unref
// clears for every message.
type msgState struct {
	hdr  [wire.HeaderLen]byte
	buf  []byte // payload storage; len is h_len
	refs atomic.Int32

	// Send side, protected by the owning path's mu.
	sock     *sock // nil for pings, pongs, probes and congestion maps
	dport    wire.Port
	flags    msgFlag
	txFlags  msgFlag // flags as NextTx handed m over, for the transport to read without mu
	ackKey   uint64  // transport's ack position: TCP stream end offset, DAT sequence
	prev     *message
	next     *message
	onList   *msgList
	congMap  bool // payload is a congestion map snapshot; unsequenced
	probe    bool // handshake probe or pong: carries extension headers
	sequence wire.Seq
	rdma     *rdmaOp // an RDMA op to post before the message (rdma.go): nil or &rdmaOp

	// Receive side, protected by the receiving socket's mu.
	from      netip.AddrPort
	rxNext    *message
	cookie    Cookie // RDMA_DEST extension, delivered as RDMADest
	hasCookie bool
	rxPath    *connPath // the path whose NewRxMessage made it
}

type msgFlag uint8

const (
	msgRetransmitted msgFlag = 1 << iota // requeued by a reconnect
	msgAckRequired                       // sender wants a prompt ack (DAT)
	msgCanceled                          // cancelled by close or RDS_CANCEL_SENT_TO
	msgFlush                             // peer restarted: drop instead of retransmit
)

// msgPool keeps messages with at most reserveBuf bytes of payload
// storage, midPool those with up to maxPooledBuf. Apart, a small message
// never draws a large buffer: one that did (a congestion map's 8 KiB,
// say) could not stay among its socket's spares (spareBuf) and would go
// through the pool on every round of a request-response sender's
// spares.
var (
	msgPool = sync.Pool{New: func() any {
		if m := msgReserve.take(); m != nil {
			return m
		}
		return new(message)
	}}
	midPool = sync.Pool{New: func() any { return new(message) }}
)

// maxPooledBuf bounds the payload storage a message keeps in midPool, so
// that messages of up to that size never hold on to a large buffer.
const maxPooledBuf = 256 << 10

// bigPools keep Messages with large payload storage, one pool per size
// class (cap 512 KiB and 1 MiB, wire.MaxMsgSize): without them every
// message above maxPooledBuf costs a fresh buffer on each side, and the
// garbage collection that 2 MiB per 1 MiB message drives falls behind
// on a loaded machine and stalls such streams. A
// sync.Pool lets the collector drop what stays unused, so a burst of
// large messages pins nothing for good.
var bigPools = [2]sync.Pool{
	{New: func() any { return &message{msgState: msgState{buf: make([]byte, 0, 2*maxPooledBuf)}} }},
	{New: func() any { return &message{msgState: msgState{buf: make([]byte, 0, wire.MaxMsgSize)}} }},
}

// bigPool returns the pool for payload capacity c (> maxPooledBuf).
func bigPool(c int) *sync.Pool {
	if c <= 2*maxPooledBuf {
		return &bigPools[0]
	}
	return &bigPools[1]
}

// spareBuf is the most payload storage a socket's spare message keeps
// (sock.spares).
const spareBuf = reserveBuf

// sparable reports whether m, just freed (unref), may be kept aside for
// reuse, as a socket's or a path's spare: its buffer holds at most limit
// bytes, and no daemon's reserve wants messages back.
func (m *message) sparable(limit int) bool {
	return cap(m.buf) <= limit && !msgReserve.low.Load()
}

// spareList is a bounded list of freed, reset messages linked by next,
// kept for reuse (a socket's spares, a path's received ones); its
// owner's lock guards it.
type spareList struct {
	head *message
	n    int
}

// push adds m unless the list holds max already, and reports whether it
// did.
func (l *spareList) push(m *message, max int) bool {
	if l.n >= max {
		return false
	}
	m.next, l.head = l.head, m
	l.n++
	return true
}

// pop returns a message of the list, or nil.
func (l *spareList) pop() *message {
	m := l.head
	if m != nil {
		l.head, m.next = m.next, nil
		l.n--
	}
	return m
}

// takeAll empties the list and returns its messages, linked by next.
func (l *spareList) takeAll() *message {
	m := l.head
	*l = spareList{}
	return m
}

// recycleList recycles messages linked by next.
func recycleList(m *message) {
	for m != nil {
		next := m.next
		m.next = nil
		m.recycle()
		m = next
	}
}

// reuseMessage returns spare, a reset message or nil, as a message with
// room for n payload bytes if it has the room, else a new one. Callers
// on every message's path write it out as
//
//	if !m.ready(n) {
//		m = replaceMessage(m, n)
//	}
//
// to take a spare with the room, the common case, inline: the call to
// replaceMessage keeps reuseMessage itself above the inlining budget.
func reuseMessage(spare *message, n int) *message {
	if spare.ready(n) {
		return spare
	}
	return replaceMessage(spare, n)
}

// ready makes m, a reset message or nil, one of n payload bytes with
// one reference, and reports whether it could: m is not nil and has
// the room.
func (m *message) ready(n int) bool {
	if m == nil || cap(m.buf) < n {
		return false
	}
	m.buf = m.buf[:n]
	m.refs.Store(1)
	return true
}

// replaceMessage is reuseMessage for a spare that is nil or has not
// the room: the spare, if any, goes back to its pool.
func replaceMessage(spare *message, n int) *message {
	if spare != nil {
		spare.recycle()
	}
	return newMessage(n)
}

// newMessage returns a message with room for n payload bytes.
func newMessage(n int) *message {
	var m *message
	switch {
	case n <= reserveBuf:
		m = msgPool.Get().(*message)
	case n <= maxPooledBuf:
		m = midPool.Get().(*message)
	case n <= wire.MaxMsgSize:
		m = bigPool(n).Get().(*message)
	default:
		m = msgPool.Get().(*message)
	}
	if cap(m.buf) < n {
		c := 64
		for c < n {
			c <<= 1
		}
		m.buf = make([]byte, n, c)
	}
	m.buf = m.buf[:n]
	m.refs.Store(1)
	return m
}

// release drops one reference; the last one returns m to the pool of its
// buffer's size. A reference that is not the last (a transport's TxDone
// before the ack) costs the atomic and no call.
func (m *message) release() {
	if r := m.refs.Add(-1); r <= 0 {
		m.lastRelease(r)
	}
}

// lastRelease is release of the last reference, which left r.
func (m *message) lastRelease(r int32) {
	if m.last(r) {
		m.recycle()
	}
}

// unref drops one reference and reports whether it was the last, in
// which case m is reset (keeping its buffer) and belongs to the caller.
// Inline, a reference that is not the last costs no call.
func (m *message) unref() bool {
	r := m.refs.Add(-1)
	return r <= 0 && m.last(r)
}

// last resets m, whose last reference was just dropped leaving r
// (0 unless released once too often), and reports true.
func (m *message) last(r int32) bool {
	if r < 0 {
		panic("rdsoverdat: message released twice")
	}
	if m.rdma != nil {
		if m.rdma.pin != nil {
			m.rdma.pin.Release()
		}
		m.rdmaOp = rdmaOp{}
	}
	m.reset()
	return true
}

// reset clears what m.msgState = msgState{buf: m.buf[:0]} clears, field
// by field: assigning the whole struct, which holds pointers, goes
// through the runtime's typed clear of all 200 bytes behind a
// write-barrier check, and a message is reset twice per message sent
// (once on each side). refs is already 0 (unref's last reference).
// TestMessageResetClearsAll checks that no field is left out.
func (m *msgState) reset() {
	m.hdr = [wire.HeaderLen]byte{}
	m.buf = m.buf[:0]
	m.sock = nil
	m.dport = 0
	m.flags, m.txFlags = 0, 0
	m.ackKey = 0
	m.prev, m.next, m.onList = nil, nil, nil
	m.congMap, m.probe = false, false
	m.sequence = 0
	m.rdma = nil
	m.from = netip.AddrPort{}
	m.rxNext = nil
	m.cookie, m.hasCookie = 0, false
	m.rxPath = nil
}

// recycle returns a reset message to the pool of its buffer's size.
func (m *message) recycle() {
	switch c := cap(m.buf); {
	case c <= reserveBuf:
		if !msgReserve.put(m) {
			msgPool.Put(m)
		}
	case c <= maxPooledBuf:
		midPool.Put(m)
	case c <= wire.MaxMsgSize:
		bigPool(c).Put(m)
	}
}

// Hold takes one more reference (xport.Msg).
func (m *message) Hold() { m.refs.Add(1) }

// Release drops one reference (xport.Msg).
func (m *message) Release() { m.release() }

// Header returns the message's header; transports may set the flag,
// ack, credit and checksum fields just before transmitting it.
func (m *message) Header() wire.Header { return wire.Header(m.hdr[:]) }

// Payload returns the payload (h_len bytes). For a receive message built
// by NewRxMessage the transport fills it.
func (m *message) Payload() []byte { return m.buf }

// Retransmitted reports whether m is being resent after a reconnect; the
// transport puts wire.FlagRetransmitted in the header then.
func (m *message) Retransmitted() bool { return m.txFlags&msgRetransmitted != 0 }

// AckRequired reports whether the sender wants a prompt ack (transports
// with RDS-level acks put wire.FlagAckRequired in the header).
func (m *message) AckRequired() bool { return m.txFlags&msgAckRequired != 0 }

// IsCongMap reports whether m is a congestion map update (unsequenced,
// never retransmitted, exactly wire.FlagCongBitmap in h_flags).
func (m *message) IsCongMap() bool { return m.congMap }

// SetAckKey records where the transport will see m acknowledged: the TCP
// transport stores the stream offset just past m's last byte, a transport
// with RDS acks its sequence number. (*connPath).DropAcked compares against it.
func (m *message) SetAckKey(k uint64) { m.ackKey = k }

// WireFlags returns the h_flags a transport without RDS-level acks (TCP)
// sends for m: FlagCongBitmap for a map, FlagRetransmitted for a resend.
func (m *message) WireFlags() wire.Flag {
	switch {
	case m.congMap:
		return wire.FlagCongBitmap
	case m.txFlags&msgRetransmitted != 0:
		return wire.FlagRetransmitted
	}
	return 0
}

// msgList is an intrusive doubly-linked FIFO of messages (a path's send
// queue or retransmit list). A message is on at most one list.
type msgList struct {
	head, tail *message
	n          int
}

func (l *msgList) pushBack(m *message) {
	m.onList, m.prev, m.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
	l.n++
}

func (l *msgList) remove(m *message) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.prev, m.next, m.onList = nil, nil, nil
	l.n--
}

func (l *msgList) popFront() *message {
	m := l.head
	if m != nil {
		l.remove(m)
	}
	return m
}

// moveFrontTo moves l's first message, if any, to the back of o and
// returns it: popFront and pushBack without remove's clearing of m's
// links, which pushBack sets again. A list's head has no prev.
func (l *msgList) moveFrontTo(o *msgList) *message {
	m := l.head
	if m == nil {
		return nil
	}
	if l.head = m.next; l.head != nil {
		l.head.prev = nil
	} else {
		l.tail = nil
	}
	l.n--
	o.pushBack(m)
	return m
}

// spliceFront moves all of o, in order, in front of l's messages.
func (l *msgList) spliceFront(o *msgList) {
	if o.head == nil {
		return
	}
	for m := o.head; m != nil; m = m.next {
		m.onList = l
	}
	o.tail.next = l.head
	if l.head != nil {
		l.head.prev = o.tail
	} else {
		l.tail = o.tail
	}
	l.head = o.head
	l.n += o.n
	*o = msgList{}
}

// rxQueue is a socket's singly-linked receive FIFO.
type rxQueue struct {
	head, tail *message
	n          int
}

func (q *rxQueue) push(m *message) {
	m.rxNext = nil
	if q.tail != nil {
		q.tail.rxNext = m
	} else {
		q.head = m
	}
	q.tail = m
	q.n++
}

func (q *rxQueue) pop() *message {
	m := q.head
	if m != nil {
		q.head = m.rxNext
		if q.head == nil {
			q.tail = nil
		}
		m.rxNext = nil
		q.n--
	}
	return m
}
