package rdsoverdat

import (
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Direct reception, an optional shortcut for stream transports. The
// kernel copies a received payload once, from its socket buffers to the
// user. A transport in user space reads it out of its own socket into a
// message, and RecvMsg then copies it again into the caller's buffer.
// When a socket's RecvMsg is already blocked on an empty queue with a
// buffer big enough for the message, the transport can instead read the
// payload straight into that buffer: one copy fewer, and no message.
//
// The protocol, for one waiting RecvMsg per socket at a time:
//  1. RecvMsg, finding nothing to return, offers its buffer (rxWaiter,
//     waitOffered) and blocks as usual.
//  2. The transport, having read a header, calls (*connPath).ClaimDirect. It
//     succeeds only for a plain data message (no extension headers, not a
//     duplicate, not a ping) to a socket whose offer fits and whose queue
//     is empty, so that nothing overtakes a queued message.
//  3. The transport reads the payload into xport.Direct.Buf and calls Done,
//     with ok false if the connection failed before the payload was
//     complete. Done ends the claim and wakes RecvMsg.
//  4. RecvMsg, woken for any reason, withdraws its offer. If the offer was
//     claimed, it waits for Done whatever woke it (a deadline or Close
//     included): the transport is writing into the caller's memory until
//     then. A claim ends once the payload has arrived or the connection
//     has failed.
//
// A message delivered the ordinary way (deliver) takes the offer back, so
// that a later direct message cannot overtake it.

// directRecvMin is the smallest buffer RecvMsg offers, and the smallest
// message a transport may claim: below it the copy saved is cheaper than
// the claim.
const directRecvMin = 32 << 10

// waitState is where a socket's offered receive buffer stands.
type waitState uint8

const (
	waitIdle    waitState = iota // no offer
	waitOffered                  // RecvMsg waits; a transport may claim buf
	waitClaimed                  // a transport is reading a payload into buf
	waitFilled                   // buf holds a message of n bytes from from
	waitFailed                   // the claim ended without a message
)

// rxWaiter is a blocked RecvMsg's offer (Socket.rxw, guarded by
// Socket.mu). done carries one token per claim, from Done to RecvMsg;
// wake wakes the offering RecvMsg itself, which another receiver of the
// socket could not take from it as it could take rxSig's token.
type rxWaiter struct {
	state      waitState
	buf        []byte
	n          int
	from       netip.AddrPort
	done, wake chan struct{}
}

func newRxWaiter() rxWaiter {
	return rxWaiter{done: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
}

// offerDirect offers p for direct reception if it is big enough and no
// other receiver has an offer out; s.mu is held. It reports whether p was
// offered (the caller must then withdrawDirect after blocking).
func (s *sock) offerDirect(p []byte, flags MsgFlags) bool {
	if len(p) < directRecvMin || flags&(MsgPeek|MsgDontWait) != 0 || s.rxw.state != waitIdle || s.rxw.done == nil {
		return false
	}
	s.rxw.state, s.rxw.buf = waitOffered, p
	return true
}

// withdrawDirect takes an offer back after RecvMsg woke up. If a
// transport claimed it, it waits for the claim to end and returns the
// message's length and sender with ok true when the buffer was filled.
func (s *sock) withdrawDirect() (n int, from netip.AddrPort, ok bool) {
	s.mu.Lock()
	if s.rxw.state == waitOffered || s.rxw.state == waitIdle {
		s.rxw.state, s.rxw.buf = waitIdle, nil
		s.mu.Unlock()
		return 0, netip.AddrPort{}, false
	}
	s.mu.Unlock()
	<-s.rxw.done
	s.mu.Lock()
	ok = s.rxw.state == waitFilled
	n, from = s.rxw.n, s.rxw.from
	s.rxw.state, s.rxw.buf = waitIdle, nil
	s.mu.Unlock()
	return n, from, ok
}

// cancelOffer takes a pending offer back because a message was queued
// the ordinary way (s.mu held); the waiter finds its offer gone and reads
// the queue.
func (s *sock) cancelOffer() {
	if s.rxw.state == waitOffered {
		s.rxw.state, s.rxw.buf = waitIdle, nil
	}
}

// ClaimDirect offers a transport that has read header h, and not yet its
// payload, to read the payload straight into a waiting receiver's buffer
// (see above). It returns false when the message must go the ordinary
// way (NewRxMessage, Receive). After a true return the transport must
// call Done exactly once, and Receive nothing on this path until then.
func (p *connPath) ClaimDirect(h wire.Header) (xport.Direct, bool) {
	s := p.directTarget(h)
	if s == nil {
		return xport.Direct{}, false
	}
	l, seq, retx := h.Len(), h.Sequence(), h.Flags()&wire.FlagRetransmitted != 0
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.claimSink(h, p); ok {
		return d, true
	}
	if l < directRecvMin {
		return xport.Direct{}, false
	}
	if s.closed.Load() || s.rxw.state != waitOffered || s.rxq.n > 0 || s.sink.n > 0 || s.sink.claimed || len(s.rxw.buf) < int(l) {
		return xport.Direct{}, false
	}
	s.rxw.state = waitClaimed
	return xport.Direct{Buf: s.rxw.buf[:l], Sink: s, Path: (*xpath)(p), Seq: seq, Sport: h.Sport(), Retx: retx}, true
}

// directTarget returns the socket a message with header h could be read
// directly for, or nil if it must go the ordinary way whatever the
// socket does.
func (p *connPath) directTarget(h wire.Header) *sock {
	if (h.Len() < directRecvMin && p.conn.node.sinks.Load() == 0) || !p.plainInWindow(h) {
		return nil
	}
	return p.conn.node.lookup(h.Dport())
}

// DirectDone ends the claim d on s (xport.Direct.Done): ok reports that
// d.Buf holds the whole payload. With ok the message counts as received
// on the path, as Receive would count it; otherwise the receiver goes
// back to waiting and the message, never acknowledged by this reader,
// comes again on the path's next connection.
func (s *sock) DirectDone(d xport.Direct, ok bool) {
	p := d.Path.(*xpath).core()
	ok = ok && p.acceptDirect(d.Seq, d.Retx, len(d.Buf))
	s.mu.Lock()
	if ok {
		s.rxw.state, s.rxw.n = waitFilled, len(d.Buf)
		s.rxw.from = netip.AddrPortFrom(p.conn.faddr, uint16(d.Sport))
	} else {
		s.rxw.state = waitFailed
	}
	s.mu.Unlock()
	s.rxw.done <- struct{}{}
	signal(s.rxw.wake)
}
