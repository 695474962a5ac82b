package rdsoverdat

import (
	"context"

	"golang.org/x/sys/unix"
)

// Events is a poll(2) event mask with the Linux bit values.
type Events uint32

const (
	PollIn     Events = unix.POLLIN
	PollRdNorm Events = 0x040 // POLLRDNORM
	PollOut    Events = unix.POLLOUT
	PollWrNorm Events = 0x100 // POLLWRNORM
	PollWrBand Events = 0x200 // POLLWRBAND
)

// Poll returns the socket's readiness now (rds_poll):
//   - PollIn|PollRdNorm while a message or a congestion notification
//     waits; without RDS_CONG_MONITOR also once (with PollWrBand) after
//     any congestion map changed anywhere, so that a sender that got
//     ENOBUFS can sleep in POLLIN and retry;
//   - PollOut|PollWrNorm while SO_SNDBUF has room. A send may still fail
//     with ENOBUFS: POLLOUT knows nothing of the destination.
func (s *Socket) Poll() Events {
	if s.k != nil {
		return s.k.poll()
	}
	gen := s.stack.congGen.Load()
	s.mu.Lock()
	r := s.dropReader()
	ev := s.pollLocked(gen)
	s.mu.Unlock()
	if r != nil {
		r.r.giveBack() // Poll sees only the queue: the transport reads again
	}
	return ev
}

// pollLocked is Poll's readiness; s.mu is held.
func (s *Socket) pollLocked(gen uint64) Events {
	var ev Events
	if s.rxq.n > 0 || s.congNotify != 0 || len(s.rdma.notes) > 0 {
		ev |= PollIn | PollRdNorm
	}
	if !s.congMonitor && gen != s.congTrack {
		s.congTrack = gen
		ev |= PollIn | PollRdNorm | PollWrBand
	}
	if s.sndBytes < s.sndbuf {
		ev |= PollOut | PollWrNorm
	}
	return ev
}

// Wait blocks until Poll reports one of the events in want, the socket
// closes (net.ErrClosed) or ctx ends, and returns Poll's result. One
// goroutine at a time should Wait on a socket, as with one poll loop.
func (s *Socket) Wait(ctx context.Context, want Events) (Events, error) {
	if s.k != nil {
		return s.k.wait(ctx, want)
	}
	for {
		if ev := s.Poll(); ev&want != 0 {
			return ev, nil
		}
		select {
		case <-s.pollSig:
		case <-s.done:
			return 0, errClosed
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
