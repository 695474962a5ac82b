package rdsoverdat

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Reader roles, the socket's side (internal/tcp/tcp_reader.go has the
// transport's). A stream transport may lend the reading of a connection
// to a socket whose RecvMsg was waiting for the message just delivered:
// the socket's next RecvMsg that finds its queue empty then reads the
// connection itself, delivering whatever comes for other sockets, until
// a message for itself has been read straight into its buffer. No
// goroutine hands the message over, and none has to be woken for it.
//
// The ordering rule of direct reception (recv_direct.go) holds: a RecvMsg
// reads a message into its own buffer only while its queue is empty, and
// the role is lent only after the message that ends the transport's turn
// has been delivered.

// sockReaderRole is a socket's part in reader roles (Socket.reader).
type sockReaderRole struct {
	lent *xport.RoleRef // a role lent to this socket's receivers (Socket.mu)
	// hold is the role a RecvMsg of this socket runs now: one at a time,
	// so that whatever comes for the socket can interrupt it. Set under
	// Socket.mu, cleared by the holder (readerDone).
	hold atomic.Pointer[xport.RoleRef]
	// kicked: the socket interrupted hold since it was set. The
	// interrupt is the role's, not the socket's: one that comes before
	// the RecvMsg holds the role ends the current holder's read, and
	// the RecvMsg learns of it here when it takes the role (Take).
	kicked  atomic.Bool
	waiters atomic.Int32 // RecvMsg calls blocked on the queue
}

// readerTarget returns the socket bound to the destination of a message
// with header h when it is data (not a map, ping or handshake pong).
func (p *connPath) readerTarget(h wire.Header) *sock {
	sport, dport := h.Sport(), h.Dport()
	if h.IsCongMap() || dport == wire.PingPort || wire.IsHandshakePong(sport, dport) {
		return nil
	}
	return p.portTarget(dport)
}

// ReaderFor reports whether a message with header h is data for r, a
// socket (readerTarget's socket), and if so whether it is plain data in
// the window (plainInWindow): what a RecvMsg of that socket that reads
// the stream asks of every header (xport.StreamReceiver). Most headers
// a reader sees are plain data for the socket the path found last, so
// that case is tested first, from one load of the ports and without the
// node's map; anything else takes readerForSlow, which gives the same
// answers for it.
func (x *xpath) ReaderFor(h wire.Header, r xport.Receiver) (is, plain bool) {
	p := x.core()
	s, _ := r.(*sock)
	_ = h[wire.HeaderLen-1]
	ports := binary.BigEndian.Uint32(h[wire.SportOffset:])
	dport := ports & 0xffff
	f := wire.Flag(h[wire.FlagsOffset])
	// A sport or dport of 0 is a ping or a pong, a retransmission may
	// be a duplicate, and FlagCongBitmap alone is a map.
	if ports > 0xffff && dport != 0 && f&wire.FlagRetransmitted == 0 && f != wire.FlagCongBitmap &&
		h[wire.ExtHdrOffset] == byte(wire.ExtNone) && binary.BigEndian.Uint32(h[wire.LenOffset:]) <= wire.MaxMsgSize &&
		p.rxTarget.Load() == s && s != nil && s.nodePort.Load() == dport && !s.closed.Load() {
		return true, true
	}
	return p.readerForSlow(h, s)
}

// readerForSlow is ReaderFor for any header; s is nil for a receiver
// that is no socket.
func (p *connPath) readerForSlow(h wire.Header, s *sock) (is, plain bool) {
	sport, dport := h.Sport(), h.Dport()
	if s == nil || h.IsCongMap() || dport == wire.PingPort || wire.IsHandshakePong(sport, dport) ||
		p.portTarget(dport) != s {
		return false, false
	}
	return true, sport != wire.PingPort && p.plainData(h)
}

// portTarget returns the socket bound to port dport of the node, or nil.
func (p *connPath) portTarget(dport wire.Port) *sock {
	if s := p.rxTarget.Load(); s != nil && s.nodePort.Load() == uint32(dport) && !s.closed.Load() {
		return s // the node's map would give the same: a port is s's until it closes
	}
	s := p.conn.node.lookup(dport)
	if s != nil {
		p.rxTarget.Store(s)
	}
	return s
}

// Waiting reports whether a RecvMsg of s waits for a message
// (xport.Receiver).
func (s *sock) Waiting() bool {
	return s.reader.waiters.Load() != 0 && !s.closed.Load()
}

// Closed reports whether s is closed (xport.Receiver).
func (s *sock) Closed() bool { return s.closed.Load() }

// LendReader records r as lent to s's receivers and wakes one that waits
// (it found no role when it looked); false if s is closed.
func (s *sock) LendReader(r *xport.RoleRef) bool {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return false
	}
	s.reader.lent = r
	s.mu.Unlock()
	if s.reader.waiters.Load() > 0 {
		signal(s.rxSig)
	}
	return true
}

// ReaderDone ends a RecvMsg's run of role r: s no longer holds it, gone
// forgets it was lent, and a receiver that waited meanwhile may take it.
func (s *sock) ReaderDone(r *xport.RoleRef, gone bool) {
	s.reader.hold.Store(nil)
	if gone {
		s.mu.Lock()
		if s.reader.lent == r {
			s.reader.lent = nil
		}
		s.mu.Unlock()
		return
	}
	if s.reader.waiters.Load() > 0 {
		signal(s.rxSig)
	}
}

// interruptReader makes a RecvMsg of s that reads a connection in the
// poller, or is about to, look at the socket again.
func (s *sock) interruptReader() {
	if r := s.reader.hold.Load(); r != nil {
		s.reader.kicked.Store(true)
		r.R.Interrupt()
	}
}

// holdReader records that a RecvMsg of s, having found nothing to
// return, runs role r next (s.mu held). The kick is cleared before hold
// is set, so that an interrupt that sees hold is seen by Take.
func (s *sock) holdReader(r *xport.RoleRef) {
	s.reader.kicked.Store(false)
	s.reader.hold.Store(r)
}

// Interrupted reports whether s was interrupted since its RecvMsg
// decided to run a role (xport.Receiver).
func (s *sock) Interrupted() bool { return s.reader.kicked.Load() }

// dropReader gives a role lent to s back to its transport (s.mu held): s
// closes, or waits where no read of the connection can wake it (Poll,
// MsgDontWait). The caller calls the returned ref's giveBack, if any,
// after unlocking.
func (s *sock) dropReader() *xport.RoleRef {
	r := s.reader.lent
	s.reader.lent = nil
	return r
}

// releaseReader gives a role lent to s back to its transport before a
// send of s blocks: what frees the room or the port it waits for (acks,
// credits, congestion maps) may come only through that role.
func (s *sock) releaseReader() {
	s.mu.Lock()
	r := s.dropReader()
	s.mu.Unlock()
	if r != nil {
		r.R.GiveBack()
	}
}

// QueueEmpty reports whether nothing waits in s's queue, so that a
// message read into a caller's buffer overtakes nothing.
func (s *sock) QueueEmpty() bool {
	s.mu.Lock()
	empty := s.rxq.n == 0 && s.sink.n == 0 && !s.sink.claimed && !s.closed.Load()
	s.mu.Unlock()
	return empty
}

// plainInWindow reports whether a message with header h is plain data a
// receiver may take as is: no extension headers, not a map, ping or pong,
// not a duplicate.
func (p *connPath) plainInWindow(h wire.Header) bool {
	sport, dport := h.Sport(), h.Dport()
	if h.IsCongMap() || dport == wire.PingPort || sport == wire.PingPort || wire.IsHandshakePong(sport, dport) {
		return false
	}
	return p.plainData(h)
}

// plainData is plainInWindow for a message that is no map, ping or pong:
// its length is in bounds, it has no extension headers and it is no
// duplicate.
func (p *connPath) plainData(h wire.Header) bool {
	if h.Len() > wire.MaxMsgSize || h.ExtArea()[0] != byte(wire.ExtNone) {
		return false
	}
	if h.Flags()&wire.FlagRetransmitted == 0 {
		return true // only a resend can be a duplicate
	}
	p.mu.Lock()
	dup := h.Sequence() < p.nextRxSeq
	p.mu.Unlock()
	return !dup
}

// acceptDirect counts a message of l bytes with sequence number seq that
// was read straight into a receiver's buffer, as Receive would count it.
// It returns false for a retransmitted message the path already has (a
// restart handshake moved the window since the header was checked): the
// receiver then discards it.
func (p *connPath) acceptDirect(seq wire.Seq, retx bool, l int) bool {
	if !p.advanceRx(seq, retx) {
		return false
	}
	c := p.conn
	c.stats.received.Add(1)
	c.node.stats.recvDelivered.Add(1)
	c.node.stats.recvDirect.Add(1)
	c.node.stats.recvBytes.Add(uint64(l))
	return true
}

// acceptSink counts a message read into a socket's delivery sink as
// received on the path, as Receive counts it before delivering; false
// for a duplicate (see acceptDirect). The caller counts its delivery.
func (p *connPath) acceptSink(seq wire.Seq, retx bool) bool {
	if !p.advanceRx(seq, retx) {
		return false
	}
	p.conn.stats.received.Add(1)
	return true
}

// advanceRx moves the path's next expected sequence number past seq, a
// message read outside Receive; false for a retransmission the path
// already has (a restart handshake moved the window since the header
// was checked).
func (p *connPath) advanceRx(seq wire.Seq, retx bool) bool {
	p.mu.Lock()
	if retx && seq < p.nextRxSeq {
		p.mu.Unlock()
		return false
	}
	p.nextRxSeq = seq + 1
	p.mu.Unlock()
	return true
}

// recvLimit is when a RecvMsg running a reader role must return: at the
// read deadline dl (os.ErrDeadlineExceeded) or at until, the end of its
// SO_RCVTIMEO (ETIMEDOUT), whichever comes first; zero for never. The
// same rule as blockOr's.
func recvLimit(dl, until time.Time) (time.Time, error) {
	var limit time.Time
	var limitErr error
	if !dl.IsZero() {
		limit, limitErr = dl, errDeadline
	}
	if !until.IsZero() && (limit.IsZero() || until.Before(limit)) {
		limit, limitErr = until, eTIMEDOUT
	}
	return limit, limitErr
}
