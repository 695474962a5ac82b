package rdsoverdat

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// rdsNode is the RDS stack of one local IPv4 address: the port space that
// sockets bind in, the local congestion map, and one connection per
// (remote address, transport). Connections are created by the first send
// or the first incoming transport connection and kept for the node's life.
type rdsNode struct {
	stack *Stack
	addr  netip.Addr
	lcong congMap
	stats nodeCounters

	mu       sync.RWMutex
	socks    map[wire.Port]*sock
	conns    map[connKey]*connection
	connList []*connection // copy-on-write snapshot of conns for lock-free walks
	trans    map[TransportType]nodeTransport
	rdmaMRs  atomic.Int64 // RDMA mappings held by the node's sockets
	// sndBlocked counts the node's SendMsg calls waiting for SO_SNDBUF
	// room, which only acks free, and roomWanted its sockets that want
	// room without blocking (sock.wantRoomLocked): while there are any,
	// a transport that leaves acks to later traffic polls for them
	// (ackSettler).
	sndBlocked, roomWanted atomic.Int32
	// sinks counts the node's sockets with an armed delivery sink
	// (recv_sink.go): without any, a small message's header needs no
	// look at its socket before the ordinary delivery.
	sinks atomic.Int32
}

type connKey struct {
	faddr netip.Addr
	t     TransportType
}

func newNode(st *Stack, addr netip.Addr) *rdsNode {
	return &rdsNode{
		stack: st,
		addr:  addr,
		socks: make(map[wire.Port]*sock),
		conns: make(map[connKey]*connection),
		trans: make(map[TransportType]nodeTransport),
	}
}

// Addr returns the node's local address.
func (n *rdsNode) Addr() netip.Addr { return n.addr }

// Stack returns the stack the node belongs to.
func (n *rdsNode) Stack() *Stack { return n.stack }

// Stats returns a snapshot of the node's counters, once the acks that
// have come are settled (send_drop_acked counts them as they come in the
// kernel).
func (n *rdsNode) Stats() NodeStats {
	n.settleAcks()
	return n.stats.snapshot()
}

// Conns returns the node's connections.
func (n *rdsNode) Conns() []*connection {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Clone(n.connList)
}

// Conn returns the connection to faddr over transport t, creating it (but
// not connecting it) if needed. Transports call it for incoming
// connections; nil if the node does not run t.
func (n *rdsNode) Conn(faddr netip.Addr, t TransportType) *connection {
	k := connKey{faddr, t}
	n.mu.RLock()
	c := n.conns[k]
	n.mu.RUnlock()
	if c != nil {
		return c
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if c = n.conns[k]; c != nil {
		return c
	}
	nt := n.trans[t]
	if nt == nil {
		return nil
	}
	c = newConn(n, faddr, t, nt)
	n.conns[k] = c
	n.connList = append(slices.Clone(n.connList), c)
	return c
}

// connFor returns the connection a socket using transport t sends to
// faddr on: a node's own address and other nodes reached by the loop
// transport use loop connections.
func (n *rdsNode) connFor(faddr netip.Addr, t TransportType) *connection {
	if faddr == n.addr {
		t = TransLoop
	}
	return n.Conn(faddr, t)
}

// bind reserves port for s; port 0 picks a free one.
func (n *rdsNode) bind(s *sock, port wire.Port) (wire.Port, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if port != 0 {
		if n.socks[port] != nil {
			return 0, eADDRINUSE
		}
		n.socks[port] = s
		s.nodePort.Store(uint32(port))
		return port, nil
	}
	start := randPort()
	p := start
	for {
		if p >= 2 && n.socks[p] == nil {
			n.socks[p] = s
			s.nodePort.Store(uint32(p))
			return p, nil
		}
		p++
		if p == start {
			return 0, eADDRINUSE
		}
	}
}

func (n *rdsNode) unbind(s *sock, port wire.Port) {
	n.mu.Lock()
	if n.socks[port] == s {
		delete(n.socks, port)
	}
	n.mu.Unlock()
}

func (n *rdsNode) lookup(port wire.Port) *sock {
	n.mu.RLock()
	s := n.socks[port]
	n.mu.RUnlock()
	return s
}

// cancel drops the messages of s still queued or unacknowledged, all of
// them or those to dst (rds_send_drop_to).
func (n *rdsNode) cancel(s *sock, dst netip.AddrPort) {
	n.mu.RLock()
	conns := n.connList
	n.mu.RUnlock()
	for _, c := range conns {
		if dst.IsValid() && c.faddr != dst.Addr() {
			continue
		}
		for _, p := range c.allPaths() {
			p.cancel(s, dst)
		}
	}
}

// settleAcks has the transports of the node's connections free what
// their peers have acknowledged and they left to later traffic
// (ackSettler), and poll for the rest while a socket waits for room.
func (n *rdsNode) settleAcks() {
	n.mu.RLock()
	conns := n.connList
	n.mu.RUnlock()
	for _, c := range conns {
		if w, ok := c.nt.(ackSettler); ok {
			for _, p := range c.allPaths() {
				w.SettleAcks(p)
			}
		}
	}
}

func (n *rdsNode) closeTransports() {
	n.mu.Lock()
	ts := n.trans
	n.trans = map[TransportType]nodeTransport{}
	n.mu.Unlock()
	for _, nt := range ts {
		nt.Close()
	}
}
