package rdsoverdat

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Congestion (net/rds/cong.c). Each node keeps its local map: a port's bit
// is set while its socket holds more than SO_RCVBUF unread payload bytes,
// and cleared once that drops below half the limit. Every change queues
// the whole map on every connection of the node (sent before the next
// data message, and first on every path that comes up). Each connection
// keeps the peer's map, replaced by each update received; senders test the
// destination port's bit before queueing (ENOBUFS or a wait). A loop
// connection's peer map is the destination node's local map itself.
//
// The maps are arrays of atomic 64-bit words so that the per-send bit
// test takes no lock, as the kernel's test_bit does. Word i holds ports
// 64i..64i+63 with port p at bit p%64: the same bits as the wire form read
// as little-endian words.
type congMap struct {
	w [wire.CongMapBytes / 8]atomic.Uint64
}

func (c *congMap) test(p wire.Port) bool { return c.w[p>>6].Load()&(1<<(p&63)) != 0 }

// set marks p congested and reports whether it changed.
func (c *congMap) set(p wire.Port) bool {
	b := uint64(1) << (p & 63)
	return c.w[p>>6].Or(b)&b == 0
}

// clear marks p uncongested and reports whether it changed.
func (c *congMap) clear(p wire.Port) bool {
	b := uint64(1) << (p & 63)
	return c.w[p>>6].And(^b)&b != 0
}

// encode writes the wire form (wire.CongMapBytes) into b.
func (c *congMap) encode(b []byte) {
	for i := range c.w {
		binary.LittleEndian.PutUint64(b[i*8:], c.w[i].Load())
	}
}

// replace installs a received map and returns the RDS_CONG_MONITOR mask of
// the ports that went from congested to uncongested.
func (c *congMap) replace(b []byte) (uncongested uint64) {
	for i := range c.w {
		n := binary.LittleEndian.Uint64(b[i*8:])
		o := c.w[i].Swap(n)
		uncongested |= o &^ n
	}
	return uncongested
}

// congSet marks port p of node n congested and announces it.
func (n *rdsNode) congSet(p wire.Port) {
	if n.lcong.set(p) {
		n.congChanged(0)
	}
}

// congClear marks port p of node n uncongested and announces it.
func (n *rdsNode) congClear(p wire.Port) {
	if n.lcong.clear(p) {
		n.congChanged(wire.CongMonitorMask(p))
	}
}

// congChanged queues the local map on every connection of the node
// (rds_cong_queue_updates) and notifies local senders, which see this map
// directly through loop connections.
func (n *rdsNode) congChanged(uncongested uint64) {
	n.stats.congUpdateQueued.Add(1)
	n.mu.RLock()
	conns := n.connList
	n.mu.RUnlock()
	for _, c := range conns {
		if c.loop {
			continue
		}
		c.mapQueued.Store(true)
		c.kickAny()
	}
	n.stack.congUpdated(uncongested)
}

// congUpdated is rds_cong_map_updated: any map changed somewhere. Senders
// blocked on congestion re-test; pollers without monitoring see POLLIN
// once; monitoring sockets whose mask overlaps the uncongested ports get a
// notification for their next recvmsg.
//
// The socket set is copied and st.mu released before any socket lock is
// taken: bind holds its socket's lock while it takes st.mu, so holding
// st.mu here while locking sockets deadlocks against a concurrent bind.
// Map changes are rare (a port crossing its limit), so the copy costs
// nothing on the data path.
func (st *Stack) congUpdated(uncongested uint64) {
	st.congGen.Add(1)
	st.mu.RLock()
	socks := make([]*sock, 0, len(st.sockets))
	for b := range st.sockets {
		if s, ok := b.(*sock); ok {
			socks = append(socks, s)
		}
	}
	st.mu.RUnlock()
	for _, s := range socks {
		s.congUpdate(uncongested)
	}
}

// congUpdate wakes s's senders and pollers, and its receivers only when
// it queued a notification for them: a receiver has nothing else to see
// in a map change, and a wake-up for nothing takes it off the count of
// waiting receivers (sockReaderRole.waiters) for a moment, so that a
// reader goroutine delivering its message then does not lend it the
// reader role.
func (s *sock) congUpdate(uncongested uint64) {
	s.mu.Lock()
	notify := s.congMonitor && s.congMask&uncongested != 0
	if notify {
		s.congNotify |= s.congMask & uncongested
		s.congMask &^= uncongested
	}
	s.mu.Unlock()
	signal(s.txSig)
	s.signalPoll()
	if notify {
		signal(s.rxSig)
		s.interruptReader()
	}
}
