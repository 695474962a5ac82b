package rdsoverdat

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Messages handed ahead. The daemon (daemon_conn.go) hands a client
// the messages queued behind the one it asked for, so that the client's
// next receives need no request. Until the client reports them read,
// they stay the socket's: their bytes count against SO_RCVBUF (and so
// for congestion) and Buffered, and they make the socket readable, as
// if they were still queued.

// takeAhead pops the head of the receive queue, and the messages behind
// it, into a batch of messages handed ahead (rdsdproto's ahead.go) that
// it appends to body, up to maxMsgs messages and room payload bytes,
// and counts them as handed ahead. It takes only plain messages that
// fit: none while a notification waits to be read before them, and
// none with an RDMA cookie (its control message), which stays for an
// ordinary receive. One lock serves the whole batch; the messages go
// back to their pool after it, through rel (the caller's scratch). It
// returns the body, the messages taken and their payload bytes, and
// whether the port was congested then.
//
// first, if not nil, is a message from from that a transport read
// straight into the caller's buffer while the queue was empty
// (waitQueued): it goes first, counted as handed ahead like the rest,
// and may congest the port as its delivery would have. It goes even
// after s closed: the caller's ledger counts it either way.
func (s *sock) takeAhead(body []byte, maxMsgs, room int, rel []*message, first *heldMsg) ([]byte, int, int, []*message, bool) {
	count, bytes := 0, 0
	rel = rel[:0]
	s.mu.Lock()
	var congest bool
	if first != nil {
		at := len(body)
		body = append(body, make([]byte, rdsdproto.AheadHeaderLen)...)
		rdsdproto.AheadEntry(body[at:]).Set(len(first.data), first.from)
		body = append(body, first.data...)
		count, bytes = 1, len(first.data)
		s.ahead += bytes
		s.aheadN++
		congest = !s.closed.Load() && s.congestLocked()
	}
	if s.closed.Load() || len(s.rdma.notes) > 0 || s.congNotify != 0 {
		node, port, congested := s.node, wire.Port(s.bound.Port()), s.congested
		s.mu.Unlock()
		if congest {
			s.syncCong(node, port)
		}
		return body, count, bytes, rel, congested
	}
	// The delivery sink's entries are the oldest queued (recv_sink.go).
	var n, taken int
	body, n, taken = s.takeSink(body, maxMsgs-count, room-bytes)
	count += n
	bytes += taken
	s.aheadN += n
	for count < maxMsgs && s.sink.n == 0 {
		in := s.rxq.head
		if in == nil || in.hasCookie || len(in.buf) > room-bytes {
			break
		}
		s.rxq.pop()
		taken += len(in.buf)
		at := len(body)
		body = append(body, make([]byte, rdsdproto.AheadHeaderLen)...)
		rdsdproto.AheadEntry(body[at:]).Set(len(in.buf), in.from)
		body = append(body, in.buf...)
		count++
		bytes += len(in.buf)
		rel = append(rel, in)
	}
	s.rcvBytes -= taken
	s.ahead += taken
	s.aheadN += len(rel)
	node, port, congested := s.node, wire.Port(s.bound.Port()), s.congested
	s.mu.Unlock()
	if congest {
		s.syncCong(node, port)
	}
	for i, in := range rel {
		in.release()
		rel[i] = nil
	}
	return body, count, bytes, rel, congested
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
	node, port := s.node, wire.Port(s.bound.Port())
	s.mu.Unlock()
	if uncongest {
		s.syncCong(node, port)
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

// waitWake waits, if a transport's reader delivered to s and has yet to
// wake it (wakeDue), for that wake-up, or until s closes or stop or gone
// has a token (false): a pusher that has just handed a batch ahead then
// takes the rest of the read's messages in one batch rather than a few
// at a time as they come. The reader wakes it before it reads again or
// gives its reading up, so the wait is at most the rest of one read.
func (s *sock) waitWake(stop, gone <-chan struct{}) bool {
	if !s.wakeDue.Load() {
		return true
	}
	// Counted as waiting before the second look at the flag: a Wake
	// that clears it after that look sees the count and signals.
	s.reader.waiters.Add(1)
	defer s.reader.waiters.Add(-1)
	if !s.wakeDue.Load() || s.closed.Load() {
		return !s.closed.Load()
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

// waitQueued blocks until the receive queue (the delivery sink
// included) holds a message (true), or s closes, stop or gone has a
// token (false): the wait of a daemon
// connection that pushes messages ahead as they come. It waits as a
// blocked RecvMsg does, counted as a receiver that waits, so that a
// transport lends it its reader role and it reads the connection
// itself. A message for s that the role reads while the queue is empty
// goes straight into buf, as into a RecvMsg's buffer: then n is its
// length, from its sender, filled true, and the caller hands it ahead
// before anything queued (takeAhead's first).
func (s *sock) waitQueued(stop, gone <-chan struct{}, buf []byte) (queued, filled bool, n int, from netip.AddrPort) {
	tryReader := true
	for {
		select {
		case <-stop:
			return false, false, 0, from
		case <-gone:
			return false, false, 0, from
		default:
		}
		s.mu.Lock()
		if s.closed.Load() {
			s.mu.Unlock()
			return false, false, 0, from
		}
		if s.rxq.head != nil || s.sink.n > 0 {
			s.mu.Unlock()
			return true, false, 0, from
		}
		if r := s.reader.lent; r != nil && tryReader && s.reader.hold.Load() == nil {
			s.holdReader(r)
			s.mu.Unlock()
			n, from, res := r.R.Run(s, buf, false, time.Time{})
			switch res {
			case xport.RRFilled:
				return false, true, n, from
			case xport.RRBusy, xport.RRGone:
				tryReader = false
			}
			continue
		}
		s.reader.waiters.Add(1)
		s.mu.Unlock()
		stopped := false
		select {
		case <-s.rxSig:
		case <-s.done:
		case <-stop:
			stopped = true
		case <-gone:
			stopped = true
		}
		s.reader.waiters.Add(-1)
		if stopped {
			return false, false, 0, from
		}
		tryReader = true
	}
}
