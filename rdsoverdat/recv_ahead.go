package rdsoverdat

import (
	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Messages handed ahead. The daemon (daemon_conn.go) hands a client
// the messages queued behind the one it asked for, so that the client's
// next receives need no request. Until the client reports them read,
// they stay the socket's: their bytes count against SO_RCVBUF (and so
// for congestion) and Buffered, and they make the socket readable, as
// if they were still queued.

// aheadTake is what takeAhead took: the messages and their payload
// bytes, whether the port was congested then, and whether messages
// remain queued.
type aheadTake struct {
	count, bytes int
	congested    bool
	rest         bool
}

// takeAhead pops the head of the receive queue, and the messages behind
// it, into a batch of messages handed ahead (rdsdproto's ahead.go) that
// it appends to body, up to maxMsgs messages and room payload bytes,
// and counts them as handed ahead. It takes only plain messages that
// fit: none while a notification waits to be read before them, and
// none with an RDMA cookie (its control message), which stays for an
// ordinary receive. One lock serves the whole batch; the messages go
// back to their pool after it, through rel (the caller's scratch). The
// body grows by at most room plus an entry header a message.
func (s *sock) takeAhead(body []byte, maxMsgs, room int, rel []*message) ([]byte, aheadTake, []*message) {
	var t aheadTake
	rel = rel[:0]
	s.mu.Lock()
	if s.closed.Load() || len(s.rdma.notes) > 0 || s.congNotify != 0 {
		t.congested = s.congested
		t.rest = !s.closed.Load() && (s.sink.n > 0 || s.rxq.head != nil)
		s.mu.Unlock()
		return body, t, rel
	}
	// The delivery sink's entries are the oldest queued (recv_sink.go).
	body, t.count, t.bytes = s.takeSink(body, maxMsgs, room)
	taken := t.bytes
	s.aheadN += t.count
	for t.count < maxMsgs && s.sink.n == 0 {
		in := s.rxq.head
		if in == nil || in.hasCookie || len(in.buf) > room-t.bytes {
			break
		}
		s.rxq.pop()
		taken += len(in.buf)
		at := len(body)
		body = append(body, make([]byte, rdsdproto.AheadHeaderLen)...)
		rdsdproto.AheadEntry(body[at:]).Set(len(in.buf), in.from)
		body = append(body, in.buf...)
		t.count++
		t.bytes += len(in.buf)
		rel = append(rel, in)
	}
	s.rcvBytes -= taken
	s.ahead += taken
	s.aheadN += len(rel)
	t.congested = s.congested
	t.rest = s.sink.n > 0 || s.rxq.head != nil
	s.mu.Unlock()
	for i, in := range rel {
		in.release()
		rel[i] = nil
	}
	return body, t, rel
}

// aheadRead records that the client read msgs messages of bytes handed
// ahead, which then stop counting, and uncongests the port as a
// receive would.
func (s *sock) aheadRead(msgs, bytes int) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	s.ahead = max(s.ahead-bytes, 0)
	s.aheadN = max(s.aheadN-msgs, 0)
	uncongest := s.uncongestLocked()
	s.mu.Unlock()
	if uncongest {
		s.syncCong()
	}
}

// notePending reports whether a notification waits to be read: a
// receive returns it before any message, so the client must ask.
func (s *sock) notePending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rdma.notes) > 0 || s.congNotify != 0
}

// aheadHead describes the head of the receive queue for a daemon that
// pushes messages ahead: whether there is one, whether takeAhead could
// ever take it (a plain message of at most max bytes, no notification
// waiting before it) and its size, and whether the port is congested.
func (s *sock) aheadHead(max int) (present, pushable bool, size int, congested bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sink.n > 0 {
		data, _ := s.sinkHead()
		return true, len(data) <= max && len(s.rdma.notes) == 0 && s.congNotify == 0, len(data), s.congested
	}
	in := s.rxq.head
	if in == nil {
		return false, false, 0, s.congested
	}
	ok := !in.hasCookie && len(in.buf) <= max && len(s.rdma.notes) == 0 && s.congNotify == 0
	return true, ok, len(in.buf), s.congested
}

// congestedNow reports whether the socket's port is congested.
func (s *sock) congestedNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.congested
}

// waitPush is where a daemon's pusher sleeps while nothing is queued
// for it: it returns true once something may be (a wake-up of s), false
// if s closes or stop or gone has a token. Messages the transport's
// reader is still delivering (wakeDue) are not looked at: the reader
// hands them ahead itself at the end of its read while the pusher
// sleeps here (pushIdle, wake), or wakes it for what it could not.
// The pusher does not count as a waiting receiver, so the transport
// keeps its reading rather than lending it.
func (s *sock) waitPush(stop, gone <-chan struct{}) bool {
	// Idle before the look: a delivery after the look wakes or spares
	// it, one before is seen.
	s.pushIdle.Store(true)
	defer s.pushIdle.Store(false)
	s.mu.Lock()
	closed := s.closed.Load()
	queued := (s.rxq.head != nil || s.sink.n > 0) && !s.wakeDue.Load()
	// A role lent to an ordinary receive of s goes back: the pusher
	// does not read the connection.
	r := s.dropReader()
	s.mu.Unlock()
	if r != nil {
		r.R.GiveBack()
	}
	switch {
	case closed:
		return false
	case queued:
		return true
	}
	select {
	case <-s.rxSig:
		return true
	case <-s.done:
	case <-stop:
	case <-gone:
	}
	return false
}

// pushNow lets the daemon connection that pushes s's messages, asleep
// in waitPush, hand them ahead from a transport's reader (daemon_push.go);
// false leaves them to the pusher.
func (s *sock) pushNow() bool {
	dc := s.pusher.Load()
	return dc != nil && dc.pushNow()
}
