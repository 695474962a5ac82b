package rdsoverdat

import "github.com/godapl/godapl/rdsoverdat/wire"

// The receive side of RDMA: the extension headers of incoming data
// messages, and the notification queue RecvMsg drains first.

// rdmaIncoming reads the RDMA extensions of a data message for socket s
// before it is delivered (rds_recv_incoming_exthdrs): an RDMA ACK
// releases a use-once mapping, an RDMA_DEST cookie is kept for RecvMsg
// and the address announced with it is remembered for ops on it.
//
// Most messages carry no extension: that test is inline, the reading
// of extensions is rdmaExts.
func (p *connPath) rdmaIncoming(m *message, s *sock) {
	if m.hdr[wire.ExtHdrOffset] != byte(wire.ExtNone) {
		p.rdmaExts(m, s)
	}
}

// rdmaExts is rdmaIncoming for a message with extension headers.
func (p *connPath) rdmaExts(m *message, s *sock) {
	h := m.Header()
	var addr uint64
	hasAddr := false
	for it := h.Exts(); it.Next(); {
		e := it.Ext()
		switch e.Type {
		case wire.ExtRDMA:
			rkey, _ := e.RKey()
			s.rdmaUnuse(rkey)
		case wire.ExtRDMADest:
			rkey, _ := e.RKey()
			off, _ := e.Offset()
			m.cookie, m.hasCookie = MakeCookie(rkey, off), true
		case wire.ExtRDMAAddr:
			addr, hasAddr = e.RDMAAddr()
		}
	}
	if m.hasCookie && hasAddr {
		p.conn.rdmaAddrs.put(m.cookie.RKey(), addr)
	}
}

// rdmaNotify queues a notification for RecvMsg (rds_rdma_send_complete);
// a closed socket drops it.
func (s *sock) rdmaNotify(n RDMANotify) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	s.rdma.notes = append(s.rdma.notes, n)
	s.mu.Unlock()
	signal(s.rxSig)
	s.signalPoll()
	s.interruptReader()
}

// takeNotes moves pending notifications into m.Control (s.mu held) and
// reports whether there were any (rds_notify_queue_get).
func (s *sock) takeNotes(m *Msg) bool {
	if len(s.rdma.notes) == 0 {
		return false
	}
	for _, n := range s.rdma.notes {
		m.Control = append(m.Control, n)
	}
	clear(s.rdma.notes)
	s.rdma.notes = s.rdma.notes[:0]
	return true
}

// rdmaClose releases the socket's mappings and notifications on close.
func (s *sock) rdmaClose() {
	s.mu.Lock()
	s.rdma.notes = nil
	s.mu.Unlock()
	s.dropMRs()
}
