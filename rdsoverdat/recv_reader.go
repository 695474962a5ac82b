package rdsoverdat

import (
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Reader roles, the socket's side (tcp_reader.go has the transport's). A
// stream transport may lend the reading of a connection to a socket
// whose RecvMsg was waiting for the message just delivered: the socket's
// next RecvMsg that finds its queue empty then reads the connection
// itself, delivering whatever comes for other sockets, until a message
// for itself has been read straight into its buffer. No goroutine hands
// the message over, and none has to be woken for it.
//
// The ordering rule of direct reception (recv_direct.go) holds: a RecvMsg
// reads a message into its own buffer only while its queue is empty, and
// the role is lent only after the message that ends the transport's turn
// has been delivered.

// readerRole is a transport connection's reader role as a socket sees it.
type readerRole interface {
	// run takes the role if it is idle and reads until a message for s
	// has been read into buf (rrFilled), a message for s was queued
	// or s must look at its queue again (rrAgain), limit passed
	// (rrTimedOut), or it could not be taken: another RecvMsg runs it
	// (rrBusy) or it went back to the transport (rrGone). It clears
	// s's hold (readerDone) before it returns.
	run(s *sock, buf []byte, flags MsgFlags, limit time.Time) (int, netip.AddrPort, rrResult)
	// interrupt ends a blocked read of the RecvMsg running the role, if
	// any, or the next read.
	interrupt()
	// giveBack returns the role to the transport if it is idle.
	giveBack()
}

// readerRoleRef is a role as sockets hold it: one per transport connection,
// so that storing it allocates nothing.
type readerRoleRef struct{ r readerRole }

// rrResult is how a run of a reader role ended.
type rrResult uint8

const (
	rrAgain    rrResult = iota // look at the queue again
	rrFilled                   // buf holds a message for the caller
	rrQueued                   // a message for the caller was queued (the transport's; run returns rrAgain)
	rrTimedOut                 // the caller's limit passed
	rrBusy                     // another RecvMsg runs the role
	rrGone                     // the role went back to the transport
)

// sockReaderRole is a socket's part in reader roles (Socket.reader).
type sockReaderRole struct {
	lent *readerRoleRef // a role lent to this socket's receivers (Socket.mu)
	// hold is the role a RecvMsg of this socket runs now: one at a time,
	// so that whatever comes for the socket can interrupt it. Set under
	// Socket.mu, cleared by the holder (readerDone).
	hold    atomic.Pointer[readerRoleRef]
	waiters atomic.Int32 // RecvMsg calls blocked on the queue
}

// readerTarget returns the socket bound to the destination of a message
// with header h when it is data (not a map, ping or handshake pong).
func (p *connPath) readerTarget(h wire.Header) *sock {
	sport, dport := h.Sport(), h.Dport()
	if h.IsCongMap() || dport == wire.PingPort || wire.IsHandshakePong(sport, dport) {
		return nil
	}
	return p.conn.node.lookup(dport)
}

// readerWanted returns s if a RecvMsg of s waits for a message (nil for a
// nil s).
func (s *sock) readerWanted() *sock {
	if s == nil || s.reader.waiters.Load() == 0 || s.closed.Load() {
		return nil
	}
	return s
}

// lendReader records r as lent to s's receivers and wakes one that waits
// (it found no role when it looked); false if s is closed.
func (s *sock) lendReader(r *readerRoleRef) bool {
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

// readerDone ends a RecvMsg's run of role r: s no longer holds it, gone
// forgets it was lent, and a receiver that waited meanwhile may take it.
func (s *sock) readerDone(r *readerRoleRef, gone bool) {
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
// poller look at the socket again.
func (s *sock) interruptReader() {
	if r := s.reader.hold.Load(); r != nil {
		r.r.interrupt()
	}
}

// dropReader gives a role lent to s back to its transport (s.mu held): s
// closes, or waits where no read of the connection can wake it (Poll,
// MsgDontWait). The caller calls the returned ref's giveBack, if any,
// after unlocking.
func (s *sock) dropReader() *readerRoleRef {
	r := s.reader.lent
	s.reader.lent = nil
	return r
}

// queueEmpty reports whether nothing waits in s's queue, so that a
// message read into a caller's buffer overtakes nothing.
func (s *sock) queueEmpty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rxq.n == 0 && !s.closed.Load()
}

// plainInWindow reports whether a message with header h is plain data a
// receiver may take as is: no extension headers, not a map, ping or pong,
// not a duplicate.
func (p *connPath) plainInWindow(h wire.Header) bool {
	sport, dport := h.Sport(), h.Dport()
	if h.Len() > wire.MaxMsgSize || h.IsCongMap() || h.ExtArea()[0] != byte(wire.ExtNone) ||
		dport == wire.PingPort || sport == wire.PingPort || wire.IsHandshakePong(sport, dport) {
		return false
	}
	p.mu.Lock()
	dup := h.Flags()&wire.FlagRetransmitted != 0 && h.Sequence() < p.nextRxSeq
	p.mu.Unlock()
	return !dup
}

// acceptDirect counts a message of l bytes with sequence number seq that
// was read straight into a receiver's buffer, as Receive would count it.
// It returns false for a retransmitted message the path already has (a
// restart handshake moved the window since the header was checked): the
// receiver then discards it.
func (p *connPath) acceptDirect(seq wire.Seq, retx bool, l int) bool {
	p.mu.Lock()
	if retx && seq < p.nextRxSeq {
		p.mu.Unlock()
		return false
	}
	p.nextRxSeq = seq + 1
	p.mu.Unlock()
	c := p.conn
	c.stats.received.Add(1)
	c.node.stats.recvDelivered.Add(1)
	c.node.stats.recvDirect.Add(1)
	c.node.stats.recvBytes.Add(uint64(l))
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
