package rdsoverdat

import "net/netip"

import "sync/atomic"

// Statistics. Every drop, retry and back-pressure event has a counter,
// named after the kernel's rds_statistics field it mirrors (net/rds/rds.h,
// rds-info -c), so that figures from a Go node and a kernel line up.

// NodeStats is a snapshot of a node's counters.
type NodeStats struct {
	ConnReset            uint64 // conn_reset: paths that went down
	RecvDropBadChecksum  uint64 // recv_drop_bad_checksum
	RecvDropOldSeq       uint64 // recv_drop_old_seq: retransmitted duplicates dropped
	RecvDropNoSock       uint64 // recv_drop_no_sock: no socket bound to the port
	RecvDropDeadSock     uint64 // recv_drop_dead_sock: socket closing
	RecvDelivered        uint64 // recv_delivered: messages queued to a socket
	RecvPing             uint64 // recv_ping
	RecvPong             uint64 // recv_pong
	RecvHSProbe          uint64 // handshake probes and pongs received
	RecvBytes            uint64 // payload bytes delivered to sockets
	SendQueued           uint64 // send_queued: messages accepted by sendmsg
	SendPong             uint64 // send_pong
	SendPing             uint64 // send_ping: handshake probes sent
	SendQueueFull        uint64 // send_queue_full: EAGAIN or a wait for SO_SNDBUF room
	SendDropAcked        uint64 // send_drop_acked: messages freed by an ack
	SendCanceled         uint64 // messages dropped by close or RDS_CANCEL_SENT_TO
	SendRetransmit       uint64 // messages requeued for retransmission by a reconnect
	SendFlushed          uint64 // messages dropped because the peer restarted
	SendBytes            uint64 // payload bytes accepted by sendmsg
	CongUpdateQueued     uint64 // cong_update_queued: local map changes to announce
	CongUpdateSent       uint64 // congestion maps transmitted
	CongUpdateReceived   uint64 // cong_update_received
	CongSendError        uint64 // cong_send_error: ENOBUFS returned
	CongSendBlocked      uint64 // cong_send_blocked: a sender waited on a congested port
	CreditStall          uint64 // a credit-based transport had to wait for credits
	AckSent              uint64 // ack-only messages sent (transports with RDS acks)
	AckReceived          uint64 // acks received
	RecvDropBadHeader    uint64 // malformed headers (connection dropped)
	RecvDropBadCongMap   uint64 // congestion maps of the wrong length
	RecvImmediateRetries uint64 // reserved for transports that retry receives
	// RDMA ops by outcome (rds-rdma(7) RDS_RDMA_* statuses), counted on
	// the node that sent them whether or not a notification was asked
	// for; SendRDMABytes is the bytes the successful ones moved.
	RDMASuccess     uint64
	RDMARemoteError uint64
	RDMACanceled    uint64
	RDMADropped     uint64
	RDMAOtherError  uint64
	SendRDMABytes   uint64 // send_rdma_bytes
	RecvDirect      uint64 // of RecvDelivered, read straight into a waiting receiver's buffer
	// TxRingFull: a transmit round found every send slot of its
	// connection posted and waits for send completions (rds_ib's
	// ib_tx_ring_full).
	TxRingFull uint64
}

// NodeStats returns the counters of the node of local address addr;
// false if no socket of the stack has bound to it, which is always the
// case on a kernel stack (rds-info -c shows the kernel's). On a daemon
// Stack they are the daemon's node's, the host's, as rds-info shows
// them; false if the daemon has no node there or cannot be reached.
func (st *Stack) NodeStats(addr netip.Addr) (NodeStats, bool) {
	if st.cfg.Daemon != "" {
		return st.daemonNodeStats(addr)
	}
	n := st.nodeAt(addr)
	if n == nil {
		return NodeStats{}, false
	}
	return n.Stats(), true
}

// NodeStats returns the counters of the node s is bound on; false if it
// is unbound or a kernel socket. A daemon socket's node is the daemon's.
func (s *Socket) NodeStats() (NodeStats, bool) {
	if k, ok := s.b.(*daemonSocket); ok {
		if b := k.boundAddr(); b.IsValid() {
			return k.stack.daemonNodeStats(b.Addr())
		}
		return NodeStats{}, false
	}
	n := s.b.boundNode()
	if n == nil {
		return NodeStats{}, false
	}
	return n.Stats(), true
}

// nodeCounters is the live, atomically updated form of NodeStats. Field
// order matches NodeStats so that snapshot stays trivially correct.
type nodeCounters struct {
	connReset, recvDropBadChecksum, recvDropOldSeq, recvDropNoSock, recvDropDeadSock,
	recvDelivered, recvPing, recvPong, recvHSProbe, recvBytes, sendQueued, sendPong, sendPing,
	sendQueueFull, sendDropAcked, sendCanceled, sendRetransmit, sendFlushed, sendBytes,
	congUpdateQueued, congUpdateSent, congUpdateReceived, congSendError, congSendBlocked,
	creditStall, ackSent, ackReceived, recvDropBadHeader, recvDropBadCongMap,
	recvImmediateRetries atomic.Uint64
	rdma          [len(rdmaStatusNames)]atomic.Uint64 // by RDMAStatus
	sendRDMABytes atomic.Uint64
	recvDirect    atomic.Uint64
	txRingFull    atomic.Uint64
}

// countRDMA counts an RDMA op's final outcome; n is its length.
func (c *nodeCounters) countRDMA(st RDMAStatus, n int) {
	if st >= 0 && int(st) < len(c.rdma) {
		c.rdma[st].Add(1)
	}
	if st == RDMASuccess {
		c.sendRDMABytes.Add(uint64(n))
	}
}

func (c *nodeCounters) snapshot() NodeStats {
	return NodeStats{
		c.connReset.Load(), c.recvDropBadChecksum.Load(), c.recvDropOldSeq.Load(), c.recvDropNoSock.Load(),
		c.recvDropDeadSock.Load(), c.recvDelivered.Load(), c.recvPing.Load(), c.recvPong.Load(),
		c.recvHSProbe.Load(), c.recvBytes.Load(), c.sendQueued.Load(), c.sendPong.Load(), c.sendPing.Load(),
		c.sendQueueFull.Load(), c.sendDropAcked.Load(), c.sendCanceled.Load(), c.sendRetransmit.Load(),
		c.sendFlushed.Load(), c.sendBytes.Load(), c.congUpdateQueued.Load(), c.congUpdateSent.Load(),
		c.congUpdateReceived.Load(), c.congSendError.Load(), c.congSendBlocked.Load(), c.creditStall.Load(),
		c.ackSent.Load(), c.ackReceived.Load(), c.recvDropBadHeader.Load(), c.recvDropBadCongMap.Load(),
		c.recvImmediateRetries.Load(),
		c.rdma[RDMASuccess].Load(), c.rdma[RDMARemoteError].Load(), c.rdma[RDMACanceled].Load(),
		c.rdma[RDMADropped].Load(), c.rdma[RDMAOtherError].Load(), c.sendRDMABytes.Load(), c.recvDirect.Load(),
		c.txRingFull.Load(),
	}
}

// ConnStats is a snapshot of one connection's counters (all paths).
type ConnStats struct {
	Sent          uint64 // messages transmitted (including retransmissions)
	Received      uint64 // messages received and accepted
	Retransmitted uint64 // messages requeued by a reconnect
	Dropped       uint64 // received duplicates and undeliverable messages
	Acked         uint64 // messages freed by an acknowledgement
	Resets        uint64 // times a path went down
	CreditStalls  uint64 // sends that waited for credits
	AcksSent      uint64 // ack-only messages sent
	CongMapsSent  uint64
	CongMapsRecvd uint64
}

type connCounters struct {
	sent, received, retransmitted, dropped, acked, resets, creditStalls, acksSent,
	congMapsSent, congMapsRecvd atomic.Uint64
}

func (c *connCounters) snapshot() ConnStats {
	return ConnStats{c.sent.Load(), c.received.Load(), c.retransmitted.Load(), c.dropped.Load(),
		c.acked.Load(), c.resets.Load(), c.creditStalls.Load(), c.acksSent.Load(),
		c.congMapsSent.Load(), c.congMapsRecvd.Load()}
}
