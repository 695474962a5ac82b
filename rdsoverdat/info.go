package rdsoverdat

import (
	"net/netip"
	"slices"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Introspection: the userspace counterpart of the kernel's RDS_INFO
// getsockopts (net/rds/info.c), which rds-info prints. In the kernel that
// state is reachable from any AF_RDS socket of the namespace; here it
// lives in the process that runs the Stack, so Info takes one consistent
// snapshot per object (not of the whole stack at one instant, which the
// kernel does not give either) in a form that marshals to JSON, and
// cmd/rds-info reads it from a running tool through internal/rdstool.
//
// Lock order: Info never holds a node's lock while it takes a Socket's
// (bind takes Socket.mu, then Stack.mu, then rdsNode.mu), so it copies the
// socket and connection lists first and visits each afterwards.

// Info is a snapshot of a Stack: every node with its sockets,
// connections, congestion state and counters.
type Info struct {
	// GenNum is the stack's connection generation number.
	GenNum uint32 `json:"gen_num"`
	// Kernel is set for a kernel stack (Config.Kernel), whose state lives
	// in the host kernel: Nodes is then empty.
	Kernel bool       `json:"kernel,omitempty"`
	Nodes  []NodeInfo `json:"nodes"`
}

// NodeInfo describes one node (local address).
type NodeInfo struct {
	Addr netip.Addr `json:"addr"`
	// Transports are the names of the transports attached to the node.
	Transports []string `json:"transports"`
	// Congested lists the node's ports marked in its local congestion
	// map (sockets over SO_RCVBUF), ascending.
	Congested []uint16     `json:"congested"`
	Sockets   []SocketInfo `json:"sockets"`
	Conns     []ConnInfo   `json:"conns"`
	Counters  []Counter    `json:"counters"`
}

// SocketInfo describes one bound socket (rds-info -k, plus the queued
// byte counts the kernel keeps to itself).
type SocketInfo struct {
	Bound      netip.AddrPort `json:"bound"`
	Transport  string         `json:"transport"`
	SendBuffer int            `json:"sndbuf"`
	RecvBuffer int            `json:"rcvbuf"`
	// SendQueued is the payload queued or unacknowledged (counted
	// against SendBuffer); RecvQueued the payload waiting to be read.
	SendQueued int  `json:"send_queued"`
	RecvQueued int  `json:"recv_queued"`
	Congested  bool `json:"congested"`
}

// ConnInfo describes one connection (rds-info -n).
type ConnInfo struct {
	Local      netip.Addr `json:"local"`
	Remote     netip.Addr `json:"remote"`
	Transport  string     `json:"transport"`
	NPaths     int        `json:"npaths"`
	PeerGenNum uint32     `json:"peer_gen_num"`
	Paths      []PathInfo `json:"paths"`
	// RemoteCongested lists the peer's ports marked in the last
	// congestion map it sent, ascending.
	RemoteCongested []uint16  `json:"remote_congested"`
	Stats           ConnStats `json:"stats"`
}

// PathInfo describes one path of a connection.
type PathInfo struct {
	Index  int      `json:"index"`
	Up     bool     `json:"up"`
	NextTX wire.Seq `json:"next_tx"`
	NextRX wire.Seq `json:"next_rx"`
	// Queued messages wait for transmission; Unacked were transmitted
	// and wait for the peer's acknowledgement (rds-info -s and -t).
	Queued  int `json:"queued"`
	Unacked int `json:"unacked"`
	// Ups counts the times the path came up.
	Ups uint64 `json:"ups"`
}

// Counter is one named statistic, named as rds-info -c names the
// kernel's (rds_stat_names in net/rds/stats.c) where one exists.
type Counter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// Info returns a snapshot of the stack (of its daemon's Stack on a
// daemon Stack: see DaemonInfo). Nodes are sorted by address,
// sockets by port, connections by remote address and transport.
func (st *Stack) Info() Info {
	if st.cfg.Daemon != "" {
		info, _ := st.DaemonInfo() // the host's view; empty if the daemon is gone
		if info.Nodes == nil {
			info.Nodes = []NodeInfo{}
		}
		return info
	}
	info := Info{GenNum: st.genNum, Kernel: st.cfg.Kernel, Nodes: []NodeInfo{}}
	nodes := st.allNodes()
	slices.SortFunc(nodes, func(a, b *rdsNode) int { return a.addr.Compare(b.addr) })
	for _, n := range nodes {
		info.Nodes = append(info.Nodes, n.Info())
	}
	return info
}

// Info returns a snapshot of the node, once the acks that have come are
// settled (the kernel frees their messages as they come).
func (n *rdsNode) Info() NodeInfo {
	n.settleAcks()
	n.mu.RLock()
	socks := make([]*sock, 0, len(n.socks))
	for _, s := range n.socks {
		socks = append(socks, s)
	}
	conns := n.connList
	var trans []string
	for t := range n.trans {
		trans = append(trans, n.stack.transportName(t))
	}
	n.mu.RUnlock()
	slices.Sort(trans)

	ni := NodeInfo{
		Addr:       n.addr,
		Transports: trans,
		Congested:  n.lcong.ports(),
		Sockets:    make([]SocketInfo, 0, len(socks)),
		Conns:      make([]ConnInfo, 0, len(conns)),
		Counters:   n.Stats().Counters(),
	}
	for _, s := range socks {
		ni.Sockets = append(ni.Sockets, s.info())
	}
	slices.SortFunc(ni.Sockets, func(a, b SocketInfo) int { return int(a.Bound.Port()) - int(b.Bound.Port()) })
	for _, c := range conns {
		ni.Conns = append(ni.Conns, c.Info())
	}
	slices.SortFunc(ni.Conns, func(a, b ConnInfo) int {
		if d := a.Remote.Compare(b.Remote); d != 0 {
			return d
		}
		return cmpString(a.Transport, b.Transport)
	})
	return ni
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *sock) info() SocketInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	si := SocketInfo{
		Bound:      s.bound,
		SendBuffer: s.sndbuf,
		RecvBuffer: s.rcvbuf,
		SendQueued: s.sndBytes,
		RecvQueued: s.rcvBytes + s.ahead,
		Congested:  s.congested,
	}
	if s.trans != nil {
		si.Transport = s.trans.Name()
	}
	return si
}

// Info returns a snapshot of the connection.
func (c *connection) Info() ConnInfo {
	ci := ConnInfo{
		Local:           c.node.addr,
		Remote:          c.faddr,
		Transport:       c.node.stack.transportName(c.ttype),
		NPaths:          c.NPaths(),
		PeerGenNum:      c.PeerGenNum(),
		RemoteCongested: c.fcong.ports(),
		Stats:           c.Stats(),
	}
	for _, p := range c.allPaths() {
		p.mu.Lock()
		ci.Paths = append(ci.Paths, PathInfo{
			Index:   p.index,
			Up:      p.state == pathUp,
			NextTX:  p.nextTxSeq,
			NextRX:  p.nextRxSeq,
			Queued:  p.sendQ.n,
			Unacked: p.retrans.n,
			Ups:     p.ups,
		})
		p.mu.Unlock()
	}
	return ci
}

// transportName names a transport type as its Transport does.
func (st *Stack) transportName(t TransportType) string {
	if tr := st.transport(t); tr != nil {
		return tr.Name()
	}
	return "unknown"
}

// ports lists the ports marked in the map, ascending (never nil, so
// that JSON shows an empty list).
func (c *congMap) ports() []uint16 {
	ps := []uint16{}
	for i := range c.w {
		w := c.w[i].Load()
		for b := 0; w != 0; b++ {
			if w&1 != 0 {
				ps = append(ps, uint16(i*64+b))
			}
			w >>= 1
		}
	}
	return ps
}

// Counters lists the statistics with rds-info -c's names, in NodeStats'
// field order. Counters the kernel does not have get names in its style.
func (s NodeStats) Counters() []Counter {
	return []Counter{
		{"conn_reset", s.ConnReset},
		{"recv_drop_bad_checksum", s.RecvDropBadChecksum},
		{"recv_drop_old_seq", s.RecvDropOldSeq},
		{"recv_drop_no_sock", s.RecvDropNoSock},
		{"recv_drop_dead_sock", s.RecvDropDeadSock},
		{"recv_delivered", s.RecvDelivered},
		{"recv_ping", s.RecvPing},
		{"recv_pong", s.RecvPong},
		{"recv_hs_probe", s.RecvHSProbe},
		{"recv_bytes", s.RecvBytes},
		{"send_queued", s.SendQueued},
		{"send_pong", s.SendPong},
		{"send_ping", s.SendPing},
		{"send_queue_full", s.SendQueueFull},
		{"send_drop_acked", s.SendDropAcked},
		{"send_canceled", s.SendCanceled},
		{"send_retransmit", s.SendRetransmit},
		{"send_flushed", s.SendFlushed},
		{"send_bytes", s.SendBytes},
		{"cong_update_queued", s.CongUpdateQueued},
		{"cong_update_sent", s.CongUpdateSent},
		{"cong_update_received", s.CongUpdateReceived},
		{"cong_send_error", s.CongSendError},
		{"cong_send_blocked", s.CongSendBlocked},
		{"credit_stall", s.CreditStall},
		{"ack_sent", s.AckSent},
		{"ack_received", s.AckReceived},
		{"recv_drop_bad_header", s.RecvDropBadHeader},
		{"recv_drop_bad_cong_map", s.RecvDropBadCongMap},
		{"recv_immediate_retry", s.RecvImmediateRetries},
		{"rdma_success", s.RDMASuccess},
		{"rdma_remote_error", s.RDMARemoteError},
		{"rdma_canceled", s.RDMACanceled},
		{"rdma_dropped", s.RDMADropped},
		{"rdma_other_error", s.RDMAOtherError},
		{"send_rdma_bytes", s.SendRDMABytes},
		{"recv_direct", s.RecvDirect},
		{"ib_tx_ring_full", s.TxRingFull},
	}
}
