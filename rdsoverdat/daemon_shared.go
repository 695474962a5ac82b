package rdsoverdat

import (
	"net/netip"
	"sync"
	"unsafe"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"golang.org/x/sys/unix"
)

// SharedMem returns n bytes of memory for the socket's RDMA zerocopy
// calls (GetMR, RDMAMap, RDMAArgs' local buffers). On a daemon socket
// the memory is a memfd mapped by this process and by the daemon, which
// runs the transport: RDMA there needs it (ErrNotShared otherwise). On
// the other backends any memory will do, and SharedMem returns ordinary
// memory, so that a program written for the daemon runs on all three.
// The memory stays valid until the socket is closed; a daemon socket
// unmaps it then.
func (s *Socket) SharedMem(n int) ([]byte, error) {
	if n <= 0 || n > maxRegion {
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

// clientMem is a daemon socket's shared regions, by ID.
type clientMem struct {
	mu      sync.Mutex
	regions []clientRegion
}

type clientRegion struct {
	id  uint64
	mem []byte
}

// sharedMem creates a region of n bytes and hands it to the daemon.
func (k *daemonSocket) sharedMem(n int) ([]byte, error) {
	if k.c == nil {
		return nil, k.err
	}
	fd, err := unix.MemfdCreate("rdsd-region", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		return nil, err
	}
	b, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	if k.shared == nil {
		k.shared = &clientMem{}
	}
	cm := k.shared
	k.mu.Unlock()
	cm.mu.Lock()
	id := uint64(len(cm.regions) + 1)
	cm.regions = append(cm.regions, clientRegion{id: id, mem: b})
	cm.mu.Unlock()

	c, h := k.getCall(rdsdproto.OpRegion)
	defer putCall(c)
	h.SetA(id)
	h.SetB(uint64(n))
	if err := k.callFD(c, h, fd); err != nil {
		return nil, err // the region stays listed (and mapped) until close: its ID is spent
	}
	return b, nil
}

// memOf names mem for the daemon: its region and offset, or region 0
// when it lies in none (a nil clientMem has none).
func (cm *clientMem) memOf(mem []byte) rdsdproto.Mem {
	m := rdsdproto.Mem{Len: uint64(len(mem))}
	if cm == nil || len(mem) == 0 {
		return m
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	cm.mu.Lock()
	defer cm.mu.Unlock()
	for _, r := range cm.regions {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
		if p >= base && p-base <= uintptr(len(r.mem)) && uint64(len(r.mem))-uint64(p-base) >= uint64(len(mem)) {
			m.Region, m.Off = r.id, uint64(p-base)
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
	for _, r := range cm.regions {
		unix.Munmap(r.mem)
	}
	cm.regions = nil
}
