package rdsoverdat

import (
	"net/netip"
	"sync"
	"syscall"
)

// Mappings (the kernel's rds_mr in rs_rdma_keys): each belongs to the
// socket that made it and is named by its R_Key. A node counts its
// mappings against the transport's RDMALimits.MaxMRs. Releasing a
// mapping always revokes it at once: the kernel may leave a released
// mapping usable for a while unless RDS_RDMA_INVALIDATE is given; doing
// it always is the stricter reading and costs little here.

// sockRDMA is a socket's RDMA state, protected by Socket.mu.
type sockRDMA struct {
	mrs   map[uint32]*sockMR // by R_Key
	notes []RDMANotify       // notifications not yet read (rs_notify_queue)
}

type sockMR struct {
	mr      rdmaMR
	node    *rdsNode
	useOnce bool
}

// GetMR is RDS_GET_MR (set only): register Vec and store its cookie in
// *CookieAddr (if not nil). Flags: RDMAReadWrite (the peer may write
// Vec, not only read it), RDMAUseOnce, RDMAInvalidate.
type GetMR struct {
	Vec        []byte
	CookieAddr *Cookie
	Flags      RDMAFlags
}

// GetMRForDest is RDS_GET_MR_FOR_DEST: GetMR for memory to be used with
// one destination. Mappings here belong to the node, not to a
// connection, so Dest is only checked.
type GetMRForDest struct {
	Dest       netip.AddrPort
	Vec        []byte
	CookieAddr *Cookie
	Flags      RDMAFlags
}

// FreeMR is RDS_FREE_MR (set only): release the mapping of Cookie.
// Cookie 0 asks for released mappings not yet invalidated to be
// invalidated; live mappings stay (see (*sock).FreeMR).
type FreeMR struct {
	Cookie Cookie
	Flags  RDMAFlags
}

func (GetMR) OptionName() string        { return "RDS_GET_MR" }
func (GetMRForDest) OptionName() string { return "RDS_GET_MR_FOR_DEST" }
func (FreeMR) OptionName() string       { return "RDS_FREE_MR" }

func validDest(dst netip.AddrPort) bool {
	ip := dst.Addr().Unmap()
	return ip.Is4() && !ip.IsUnspecified() && !ip.IsMulticast() && ip != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// rdmaTransport returns the socket's node and its transport's RDMA
// ability.
func (s *sock) rdmaTransport() (*rdsNode, rdmaCapable, error) {
	if s.closed.Load() {
		return nil, nil, errClosed
	}
	s.mu.Lock()
	node, tr := s.node, s.trans
	s.mu.Unlock()
	if node == nil {
		return nil, nil, eNOTCONN
	}
	node.mu.RLock()
	nt := node.trans[tr.Type()]
	node.mu.RUnlock()
	rc, ok := nt.(rdmaCapable)
	if !ok {
		return nil, nil, eOPNOTSUPP
	}
	return node, rc, nil
}

func (s *sock) getMR(mem []byte, flags RDMAFlags) (Cookie, error) {
	node, rc, err := s.rdmaTransport()
	if err != nil {
		return 0, err
	}
	sm, err := s.registerMR(node, rc, mem, flags)
	if err != nil {
		return 0, err
	}
	return MakeCookie(sm.mr.RKey(), sm.mr.Offset()), nil
}

// registerMR is __rds_rdma_map: check the limits, register, and file
// the mapping under its R_Key.
func (s *sock) registerMR(node *rdsNode, rc rdmaCapable, mem []byte, flags RDMAFlags) (*sockMR, error) {
	lim := rc.RDMALimits().WithDefaults()
	if flags&^mapFlags != 0 || len(mem) == 0 || len(mem) > lim.MaxBytes {
		return nil, eINVAL
	}
	if node.rdmaMRs.Add(1) > int64(lim.MaxMRs) {
		node.rdmaMRs.Add(-1)
		return nil, eAGAIN
	}
	mr, err := rc.RegisterMR(mem, flags&(RDMAReadWrite|RDMAUseOnce))
	if err != nil {
		node.rdmaMRs.Add(-1)
		return nil, syscall.EBUSY
	}
	sm := &sockMR{mr: mr, node: node, useOnce: flags&RDMAUseOnce != 0}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		sm.free()
		return nil, errClosed
	}
	if s.rdma.mrs == nil {
		s.rdma.mrs = make(map[uint32]*sockMR)
	}
	old := s.rdma.mrs[mr.RKey()]
	s.rdma.mrs[mr.RKey()] = sm
	s.mu.Unlock()
	if old != nil {
		old.free() // a transport reusing a live R_Key would be a bug; do not leak
	}
	return sm, nil
}

func (sm *sockMR) free() {
	sm.mr.Free()
	sm.node.rdmaMRs.Add(-1)
}

func (s *sock) freeMR(c Cookie, flags RDMAFlags) error {
	if s.closed.Load() {
		return errClosed
	}
	if c == 0 {
		if _, _, err := s.rdmaTransport(); err != nil {
			return eINVAL
		}
		return nil
	}
	s.mu.Lock()
	sm := s.rdma.mrs[c.RKey()]
	if sm == nil {
		s.mu.Unlock()
		return eINVAL
	}
	delete(s.rdma.mrs, c.RKey())
	s.mu.Unlock()
	sm.free()
	return nil
}

// unmapFailed releases sm, made for a send that then failed, unless it
// is gone already (the socket closed).
func (s *sock) unmapFailed(sm *sockMR) {
	rkey := sm.mr.RKey()
	s.mu.Lock()
	if s.rdma.mrs[rkey] != sm {
		s.mu.Unlock()
		return
	}
	delete(s.rdma.mrs, rkey)
	s.mu.Unlock()
	sm.free()
}

// dropMRs releases every mapping of the socket (rds_rdma_drop_keys).
func (s *sock) dropMRs() {
	s.mu.Lock()
	mrs := s.rdma.mrs
	s.rdma.mrs = nil
	s.mu.Unlock()
	for _, sm := range mrs {
		sm.free()
	}
}

// rdmaUnuse handles an RDMA ACK for the mapping rkey (rds_rdma_unuse):
// a use-once mapping is released before the message is delivered.
func (s *sock) rdmaUnuse(rkey uint32) {
	s.mu.Lock()
	sm := s.rdma.mrs[rkey]
	if sm == nil || !sm.useOnce {
		s.mu.Unlock()
		return
	}
	delete(s.rdma.mrs, rkey)
	s.mu.Unlock()
	sm.free()
}

// mrAddr returns the address peers name the socket's mapping rkey by.
func (s *sock) mrAddr(rkey uint32) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sm := s.rdma.mrs[rkey]; sm != nil {
		return sm.mr.Addr(), true
	}
	return 0, false
}

// mrs returns how many mappings the socket holds.
func (s *sock) mrs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rdma.mrs)
}

// rdmaAddrCache remembers where the peer's mappings start, as announced
// with their cookies (wire.ExtRDMAAddr), so that an op on a cookie can
// name the peer's address. It is bounded: the oldest entries go first,
// and an op on a forgotten cookie fails at the peer, never elsewhere.
type rdmaAddrCache struct {
	mu    sync.Mutex
	addrs map[uint32]uint64
	ring  []uint32 // insertion order
	next  int
}

const rdmaAddrCacheSize = 2 * DefaultRDMAMaxMRs

func (c *rdmaAddrCache) put(rkey uint32, addr uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.addrs == nil {
		c.addrs = make(map[uint32]uint64)
	}
	if _, ok := c.addrs[rkey]; ok {
		c.addrs[rkey] = addr
		return
	}
	if len(c.ring) < rdmaAddrCacheSize {
		c.ring = append(c.ring, rkey)
	} else {
		delete(c.addrs, c.ring[c.next])
		c.ring[c.next] = rkey
		c.next = (c.next + 1) % rdmaAddrCacheSize
	}
	c.addrs[rkey] = addr
}

func (c *rdmaAddrCache) get(rkey uint32) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addrs[rkey]
}
