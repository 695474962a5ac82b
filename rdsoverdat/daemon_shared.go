package rdsoverdat

import (
	"net/netip"
	"sync"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
)

// SharedMem returns n bytes of memory for the socket's RDMA zerocopy
// calls (GetMR, RDMAMap, RDMAArgs' local buffers). On a daemon socket
// the memory is a shared region (a sealed memfd) mapped by this process
// and by the daemon, which runs the transport: RDMA there needs it
// (ErrNotShared otherwise). On the other backends any memory will do,
// and SharedMem returns ordinary memory, so that a program written for
// the daemon runs on all three. The memory stays valid until the socket
// is closed; a daemon socket unmaps it then.
func (s *Socket) SharedMem(n int) ([]byte, error) {
	if n <= 0 || n > maxRegionBytes {
		return nil, opErr("mmap", s.b.boundAddr(), netip.AddrPort{}, eINVAL)
	}
	k, ok := s.b.(*daemonSocket)
	if !ok {
		return make([]byte, n), nil
	}
	b, err := k.sharedMem(n)
	if err != nil {
		return nil, opErr("mmap", s.b.boundAddr(), netip.AddrPort{}, err)
	}
	return b, nil
}

// clientMem is a daemon socket's shared regions.
type clientMem struct {
	mu      sync.Mutex
	regions []*shmring.Region
}

// sharedMem creates a region of n bytes and hands it to the daemon.
func (k *daemonSocket) sharedMem(n int) ([]byte, error) {
	if k.c == nil {
		return nil, k.err
	}
	g, err := shmring.NewRegion(n)
	if err != nil {
		return nil, err
	}
	b, err := g.Alloc(n)
	if err != nil {
		g.Close()
		return nil, err
	}
	c, h := k.getCall(rdsdproto.OpRegion)
	defer putCall(c)
	h.SetA(g.ID())
	h.SetB(uint64(g.Size()))
	if err := k.callFD(c, h, int(g.File().Fd())); err != nil {
		g.Close()
		return nil, err
	}
	k.mu.Lock()
	if k.shared == nil {
		k.shared = &clientMem{}
	}
	cm := k.shared
	k.mu.Unlock()
	cm.mu.Lock()
	cm.regions = append(cm.regions, g)
	cm.mu.Unlock()
	return b, nil
}

// memOf names mem for the daemon: its region and offset, or region 0
// when it lies in none (a nil clientMem has none).
func (cm *clientMem) memOf(mem []byte) rdsdproto.Mem {
	m := rdsdproto.Mem{Len: uint64(len(mem))}
	if cm == nil || len(mem) == 0 {
		return m
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	for _, g := range cm.regions {
		if off, ok := g.Offset(mem); ok {
			m.Region, m.Off = g.ID(), uint64(off)
			return m
		}
	}
	return m
}

// close unmaps every region (the socket is closed: neither side uses
// them any more).
func (cm *clientMem) close() {
	if cm == nil {
		return
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	for _, g := range cm.regions {
		g.Close()
	}
	cm.regions = nil
}
