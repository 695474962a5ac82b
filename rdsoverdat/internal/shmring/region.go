package shmring

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Region is the client's side of a shared allocator for RDMA zerocopy:
// a sealed memfd mapped here and, once its File is sent, in the daemon,
// which registers it with verbs and reaches a buffer by (ID, offset,
// length). Buffers are carved out with Alloc; memory not from a Region
// cannot be shared with the daemon (Offset says so).
//
// A Region is safe for concurrent use.
type Region struct {
	id  uint64
	f   *os.File
	mem []byte

	mu     sync.Mutex
	free   []extent    // free extents, sorted by offset, never adjacent
	used   map[int]int // offset of each allocation -> its rounded size
	closed bool
}

type extent struct{ off, n int }

// regionAlign is the alignment of every allocation: a cache line, so
// that two buffers never share one.
const regionAlign = 64

// MaxRegion bounds a Region's size.
const MaxRegion = 1 << 40

var lastRegionID atomic.Uint64

// NewRegion maps size bytes (rounded up to whole pages) of shared memory.
// Its ID is unique in the process and never 0.
func NewRegion(size int) (*Region, error) {
	if size <= 0 || size > MaxRegion {
		return nil, fmt.Errorf("%w: region of %d bytes (1..%d)", ErrInvalid, size, MaxRegion)
	}
	size = pageRound(size)
	f, mem, err := newMemfd("shmring-region", size)
	if err != nil {
		return nil, err
	}
	id := lastRegionID.Add(1)
	return &Region{
		id:   id,
		f:    f,
		mem:  mem,
		free: []extent{{0, size}},
		used: map[int]int{},
	}, nil
}

// ID returns the region's id, which the daemon's RegionTable knows it by.
func (g *Region) ID() uint64 { return g.id }

// Size returns the region's size in bytes.
func (g *Region) Size() int { return len(g.mem) }

// File returns the memfd to send to the daemon. It stays the Region's.
func (g *Region) File() *os.File { return g.f }

// Alloc carves n bytes out of the region (first fit, 64-byte aligned).
func (g *Region) Alloc(n int) ([]byte, error) {
	if n <= 0 || n > len(g.mem) {
		return nil, fmt.Errorf("%w: alloc %d bytes from a region of %d", ErrInvalid, n, len(g.mem))
	}
	size := (n + regionAlign - 1) &^ (regionAlign - 1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, ErrClosed
	}
	for i, e := range g.free {
		if e.n < size {
			continue
		}
		if e.n == size {
			g.free = append(g.free[:i], g.free[i+1:]...)
		} else {
			g.free[i] = extent{e.off + size, e.n - size}
		}
		g.used[e.off] = size
		return g.mem[e.off : e.off+n : e.off+n], nil
	}
	return nil, fmt.Errorf("%w: no free extent of %d bytes in region %d", ErrNoSpace, size, g.id)
}

// Free returns a buffer Alloc handed out.
func (g *Region) Free(b []byte) error {
	off, ok := g.Offset(b)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	size, alloc := g.used[off]
	if !ok || !alloc {
		return fmt.Errorf("%w: free of a buffer region %d did not allocate", ErrInvalid, g.id)
	}
	delete(g.used, off)
	i := 0
	for i < len(g.free) && g.free[i].off < off {
		i++
	}
	g.free = append(g.free, extent{})
	copy(g.free[i+1:], g.free[i:])
	g.free[i] = extent{off, size}
	// Merge with the neighbours, so that freed buffers make room for
	// larger ones.
	if i+1 < len(g.free) && g.free[i].off+g.free[i].n == g.free[i+1].off {
		g.free[i].n += g.free[i+1].n
		g.free = append(g.free[:i+1], g.free[i+2:]...)
	}
	if i > 0 && g.free[i-1].off+g.free[i-1].n == g.free[i].off {
		g.free[i-1].n += g.free[i].n
		g.free = append(g.free[:i], g.free[i+1:]...)
	}
	return nil
}

// Offset returns where b starts in the region, if b lies wholly inside
// it: what a client sends the daemon with the region's ID and len(b).
func (g *Region) Offset(b []byte) (int, bool) {
	return offsetIn(g.mem, b)
}

// offsetIn returns b's offset in mem if b lies wholly inside it.
func offsetIn(mem, b []byte) (int, bool) {
	if len(b) == 0 || len(mem) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base > uintptr(len(mem)) || uintptr(len(b)) > uintptr(len(mem))-(p-base) {
		return 0, false
	}
	return int(p - base), true
}

// Close unmaps the region; every buffer from it becomes invalid. The
// daemon's mapping lives on until it removes the region.
func (g *Region) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	g.closed = true
	closeAll(g.mem, g.f)
	g.mem = nil
	return nil
}
