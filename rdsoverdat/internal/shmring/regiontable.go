package shmring

import (
	"fmt"
	"os"
	"sync"
)

// RegionTable is the daemon's side of one client's regions: the
// client's memfds mapped here, by the client's region IDs. A buffer is
// reached only through Bytes, which refuses an unknown region and any
// range not wholly inside it; so a client, holding only its own table,
// reaches no other client's memory. Keep one table per client
// connection.
//
// A RegionTable is safe for concurrent use. A slice from Bytes or Mem is
// valid until Remove or Close of its region: deregister and finish what
// uses it first.
type RegionTable struct {
	mu         sync.RWMutex
	regions    map[uint64][]byte
	maxRegions int
	maxBytes   int64
	bytes      int64
	closed     bool
}

// NewRegionTable returns a table holding at most maxRegions regions of
// maxBytes in all, so that a client cannot exhaust the daemon's address
// space.
func NewRegionTable(maxRegions int, maxBytes int64) *RegionTable {
	return &RegionTable{regions: map[uint64][]byte{}, maxRegions: maxRegions, maxBytes: maxBytes}
}

// Add maps the client's region memfd under id. The file stays the
// caller's (close it after Add: the mapping keeps the memory). It must
// be a memfd sealed against shrinking, so that the client cannot turn
// the daemon's accesses into SIGBUS.
func (t *RegionTable) Add(id uint64, f *os.File) error {
	if id == 0 {
		return fmt.Errorf("%w: region id 0", ErrInvalid)
	}
	size, err := sealedSize(f)
	if err != nil {
		return err
	}
	if size <= 0 || size > MaxRegion {
		return fmt.Errorf("%w: region memfd of %d bytes", ErrBadFiles, size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return ErrClosed
	case t.regions[id] != nil:
		return fmt.Errorf("%w: region %d already added", ErrInvalid, id)
	case len(t.regions) >= t.maxRegions || t.bytes+size > t.maxBytes:
		return fmt.Errorf("%w: region %d of %d bytes over the limit of %d regions, %d bytes", ErrNoSpace, id, size, t.maxRegions, t.maxBytes)
	}
	var mem []byte
	if cerr := control(f, func(fd int) { mem, err = mapShared(fd, int(size)) }); cerr != nil {
		return fmt.Errorf("%w: %v", ErrBadFiles, cerr)
	}
	if err != nil {
		return err
	}
	t.regions[id] = mem
	t.bytes += size
	return nil
}

// Bytes returns n bytes at off in region id, in this process's mapping.
func (t *RegionTable) Bytes(id uint64, off, n uint64) ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	mem := t.regions[id]
	if mem == nil {
		return nil, fmt.Errorf("%w: unknown region %d", ErrNotShared, id)
	}
	size := uint64(len(mem))
	if n == 0 || off > size || n > size-off {
		return nil, fmt.Errorf("%w: %d bytes at %d outside region %d of %d bytes", ErrNotShared, n, off, id, size)
	}
	return mem[off : off+n : off+n], nil
}

// Mem returns region id's whole mapping, to register with verbs.
func (t *RegionTable) Mem(id uint64) ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	mem := t.regions[id]
	if mem == nil {
		return nil, fmt.Errorf("%w: unknown region %d", ErrNotShared, id)
	}
	return mem, nil
}

// Remove unmaps region id.
func (t *RegionTable) Remove(id uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	mem := t.regions[id]
	if mem == nil {
		return fmt.Errorf("%w: unknown region %d", ErrNotShared, id)
	}
	delete(t.regions, id)
	t.bytes -= int64(len(mem))
	closeAll(mem)
	return nil
}

// Close unmaps every region; the table refuses Add after.
func (t *RegionTable) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return ErrClosed
	}
	t.closed = true
	for id, mem := range t.regions {
		closeAll(mem)
		delete(t.regions, id)
	}
	t.bytes = 0
	return nil
}
