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

// poll is rds_poll: see Socket.Poll. Without room it settles the node's
// acks first, which the kernel frees as they come, and keeps the node's
// transports polling for the rest until room comes (wantRoomLocked).
func (s *sock) poll() Events {
	if n := s.noRoom(); n != nil {
		n.settleAcks()
	}
	gen := s.stack.congGen.Load()
	s.mu.Lock()
	r := s.dropReader()
	ev := s.pollLocked(gen)
	s.mu.Unlock()
	if r != nil {
		r.R.GiveBack() // Poll sees only the queue: the transport reads again
	}
	return ev
}

// noRoom returns the socket's node if SO_SNDBUF has no room, marking
// the socket as waiting for it.
func (s *sock) noRoom() *rdsNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node == nil || s.sndBytes < s.sndbuf {
		return nil
	}
	s.wantRoomLocked()
	return s.node
}

// pollLocked is Poll's readiness; s.mu is held.
func (s *sock) pollLocked(gen uint64) Events {
	var ev Events
	if s.rxq.n > 0 || s.sink.n > 0 || s.aheadN > 0 || s.congNotify != 0 || len(s.rdma.notes) > 0 {
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

// wait is Socket.Wait.
func (s *sock) wait(ctx context.Context, want Events) (Events, error) {
	s.pollers.Add(1) // before the first look (signalPoll)
	defer s.pollers.Add(-1)
	for {
		if ev := s.poll(); ev&want != 0 {
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
