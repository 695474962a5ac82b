package rdsoverdat

import (
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Receive leases, run to completion for stream transports. Direct
// reception (recv_direct.go) saves a copy but not the hand-off: the
// transport's reader goroutine reads the payload and wakes the receiver,
// one goroutine wake-up per message, and while the receiver is away the
// reader reads ahead the ordinary way. A lease hands the connection
// itself to the receiver: the transport's reader, having read the header
// of a plain data message for a socket whose receiver waits (or kept
// receiving the same way until just now), parks and lends its
// connection to that socket. The socket's next RecvMsg then reads the
// payload straight into its buffer in its own goroutine and, if the next
// header has already arrived and is again for it, keeps the lease and
// returns; the RecvMsg after that goes on without any goroutine hand-off,
// the way the kernel hands data to a waiting reader. The lease goes back
// to the reader when no complete header is waiting, when the next message
// is for someone else, on a read error, and when the socket's receivers
// stop driving it: RecvMsg with MsgPeek or MsgDontWait, Close, or no
// RecvMsg for a while (the transport reclaims it, so other sockets'
// messages behind the pending one wait at most that long).
//
// Locking: the transport's own lock before Socket.mu. A socket holds at
// most one lease (rxWaiter.lease, under Socket.mu).

// rxLender is a transport connection a socket may hold on lease.
type rxLender interface {
	// drive reads the pending message, which is for s, into buf when it
	// is plain data that fits, and otherwise delivers it to s the
	// ordinary way; then it reads the next header if it has arrived
	// already. leaseFilled: buf holds a message of n bytes from from;
	// leaseAgain: RecvMsg looks at the queue again; leaseBusy: another
	// receiver of s drives, and RecvMsg waits on rxSig.
	drive(s *Socket, buf []byte) (n int, from netip.AddrPort, st leaseState)
	// recall gives the connection back to the transport, which delivers
	// the pending message the ordinary way. It returns false if another
	// receiver of s is driving it: that drive ends the lease and wakes
	// s's receivers (rxSig).
	recall(s *Socket) bool
}

// leaseTarget returns the socket to which a transport that has read
// header h may lend its connection, or nil: a plain data message (as for
// ClaimDirect) to a socket with nothing queued and no other lease, whose
// receiver waits in RecvMsg with a buffer on offer or has been driving a
// lease until now (rxWaiter.streaming).
func (p *Path) leaseTarget(h wire.Header) *Socket {
	s := p.directTarget(h)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ok := !s.closed.Load() && s.rxq.n == 0 && s.rxw.lease == nil &&
		(s.rxw.state == waitOffered || s.rxw.streaming)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return s
}

// lend records l as s's lease and wakes a RecvMsg waiting on s. It fails
// if s changed since leaseTarget (closed, a message queued, or another
// lease), and the transport reads the message itself.
func (s *Socket) lend(l rxLender) bool {
	s.mu.Lock()
	ok := !s.closed.Load() && s.rxq.n == 0 && s.rxw.lease == nil
	if ok {
		s.rxw.lease = l
		s.cancelOffer() // the waiter drives the lease instead
	}
	s.mu.Unlock()
	if ok {
		signal(s.rxw.wake)
		signal(s.rxSig)
	}
	return ok
}

// unlend clears s's lease if it is still l; the lender's lock is held.
// streaming says whether the receiver was driving it (so that the next
// message may be lent again without a waiting receiver).
func (s *Socket) unlend(l rxLender, streaming bool) {
	s.mu.Lock()
	if s.rxw.lease == l {
		s.rxw.lease = nil
	}
	s.rxw.streaming = streaming
	s.mu.Unlock()
}

// recallLease gives back s's lease, if any (Close, MsgPeek, MsgDontWait);
// false if a receiver of s is driving it (see rxLender.recall).
func (s *Socket) recallLease() bool {
	s.mu.Lock()
	l := s.rxw.lease
	s.rxw.streaming = false
	s.mu.Unlock()
	return l == nil || l.recall(s)
}

// acceptDirect counts a message of l bytes with sequence number seq that
// was read straight into a receiver's buffer, as Receive would count it.
// It returns false for a retransmitted message the path has already
// received (a restart handshake moved the window since the header was
// checked): the caller then discards it.
func (p *Path) acceptDirect(seq wire.Seq, retx bool, l int) bool {
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
