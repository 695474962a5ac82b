package rdsoverdat

import (
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Messages handed ahead. The daemon (daemon_conn.go) hands a client
// the messages queued behind the one it asked for, so that the client's
// next receives need no request. Until the client reports them read,
// they stay the socket's: their bytes count against SO_RCVBUF (and so
// for congestion) and Buffered, and they make the socket readable, as
// if they were still queued.

// takeAhead pops the head of the receive queue into buf and counts it
// as handed ahead, if it is a plain message that fits: no notification
// may be waiting to be read before it, and a message with an RDMA
// cookie (its control message) stays for an ordinary receive.
func (s *sock) takeAhead(buf []byte) (n int, from netip.AddrPort, ok bool) {
	s.mu.Lock()
	in := s.rxq.head
	if s.closed.Load() || in == nil || in.hasCookie || len(in.buf) > len(buf) ||
		len(s.rdma.notes) > 0 || s.congNotify != 0 {
		s.mu.Unlock()
		return 0, netip.AddrPort{}, false
	}
	s.rxq.pop()
	n, from = copy(buf, in.buf), in.from
	s.rcvBytes -= n
	s.ahead += n
	s.aheadN++
	s.mu.Unlock()
	in.release()
	return n, from, true
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
	uncongest := s.congested && s.rcvBytes+s.ahead < s.rcvbuf/2
	if uncongest {
		s.congested = false
	}
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
