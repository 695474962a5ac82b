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
	mr      RDMAMR
	node    *Node
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
// invalidated; live mappings stay (see (*Socket).FreeMR).
type FreeMR struct {
	Cookie Cookie
	Flags  RDMAFlags
}

func (GetMR) OptionName() string        { return "RDS_GET_MR" }
func (GetMRForDest) OptionName() string { return "RDS_GET_MR_FOR_DEST" }
func (FreeMR) OptionName() string       { return "RDS_FREE_MR" }

// GetMR registers mem for RDMA by peers and returns its cookie
// (RDS_GET_MR). Errors: ENOTCONN if the socket is unbound, EOPNOTSUPP if
// its transport has no RDMA, EINVAL for an empty range, one above
// RDMALimits.MaxBytes or unknown flags, EAGAIN if the node holds
// RDMALimits.MaxMRs mappings, EBUSY if the transport cannot register.
//
// Send the cookie to the server with an RDMADest control message: with
// it goes the address the mapping starts at (wire.ExtRDMAAddr), which a
// transport addressing MRs by virtual address (dat) needs. A cookie
// passed inside a message's payload reaches only zero-based mappings;
// over dat the server's ops on it fail with a remote error.
func (s *Socket) GetMR(mem []byte, flags RDMAFlags) (Cookie, error) {
	c, err := s.getMR(mem, flags)
	if err != nil {
		return 0, opErr("setsockopt", s.BoundAddr(), netip.AddrPort{}, err)
	}
	return c, nil
}

// GetMRForDest is RDS_GET_MR_FOR_DEST: GetMR, checking dst (EINVAL if it
// is not a unicast IPv4 address).
func (s *Socket) GetMRForDest(dst netip.AddrPort, mem []byte, flags RDMAFlags) (Cookie, error) {
	if !validDest(dst) {
		return 0, opErr("setsockopt", s.BoundAddr(), dst, eINVAL)
	}
	c, err := s.getMR(mem, flags)
	if err != nil {
		return 0, opErr("setsockopt", s.BoundAddr(), dst, err)
	}
	return c, nil
}

// FreeMR releases the mapping of c (RDS_FREE_MR); EINVAL if the socket
// has none. c == 0 is rds-rdma(7)'s flush of old mappings, those
// released and not yet invalidated: here every release revokes at once,
// so there are none and it succeeds without touching the socket's live
// mappings; like the kernel's, it fails with EINVAL on a socket whose
// transport has no RDMA (or none yet).
func (s *Socket) FreeMR(c Cookie, flags RDMAFlags) error {
	if err := s.freeMR(c, flags); err != nil {
		return opErr("setsockopt", s.BoundAddr(), netip.AddrPort{}, err)
	}
	return nil
}

func validDest(dst netip.AddrPort) bool {
	ip := dst.Addr().Unmap()
	return ip.Is4() && !ip.IsUnspecified() && !ip.IsMulticast() && ip != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// setRDMAOption handles the RDMA socket options of setOption.
func (s *Socket) setRDMAOption(o Option) (handled bool, err error) {
	switch v := o.(type) {
	case GetMR:
		c, err := s.getMR(v.Vec, v.Flags)
		if err == nil && v.CookieAddr != nil {
			*v.CookieAddr = c
		}
		return true, err
	case GetMRForDest:
		if !validDest(v.Dest) {
			return true, eINVAL
		}
		c, err := s.getMR(v.Vec, v.Flags)
		if err == nil && v.CookieAddr != nil {
			*v.CookieAddr = c
		}
		return true, err
	case FreeMR:
		return true, s.freeMR(v.Cookie, v.Flags)
	}
	return false, nil
}

// rdmaTransport returns the socket's node and its transport's RDMA
// ability.
func (s *Socket) rdmaTransport() (*Node, RDMACapable, error) {
	if s.closed.Load() {
		return nil, nil, errClosed
	}
	if s.k != nil {
		return nil, nil, s.k.rdmaUnsupported()
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
	rc, ok := nt.(RDMACapable)
	if !ok {
		return nil, nil, eOPNOTSUPP
	}
	return node, rc, nil
}

func (s *Socket) getMR(mem []byte, flags RDMAFlags) (Cookie, error) {
	node, rc, err := s.rdmaTransport()
	if err != nil {
		return 0, err
	}
	sm, err := s.registerMR(node, rc, mem, flags)
	if err != nil {
		return 0, err
	}
	return MakeCookie(sm.mr.RKey(), 0), nil
}

// registerMR is __rds_rdma_map: check the limits, register, and file
// the mapping under its R_Key.
func (s *Socket) registerMR(node *Node, rc RDMACapable, mem []byte, flags RDMAFlags) (*sockMR, error) {
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

func (s *Socket) freeMR(c Cookie, flags RDMAFlags) error {
	if s.closed.Load() {
		return errClosed
	}
	if s.k != nil {
		return s.k.freeMR(c, flags)
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
func (s *Socket) unmapFailed(sm *sockMR) {
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
func (s *Socket) dropMRs() {
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
func (s *Socket) rdmaUnuse(rkey uint32) {
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
func (s *Socket) mrAddr(rkey uint32) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sm := s.rdma.mrs[rkey]; sm != nil {
		return sm.mr.Addr(), true
	}
	return 0, false
}

// MRs returns how many mappings the socket holds.
func (s *Socket) MRs() int {
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
