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
// valid until Remove or Close of its region, or, for an operation that
// may outlive them (an RDMA op the transport posted before the client
// went), until the last Release of a Hold taken while it was valid.
type RegionTable struct {
	mu         sync.RWMutex
	regions    map[uint64][]byte
	maxRegions int
	maxBytes   int64
	bytes      int64
	closed     bool
	// holds counts the operations that may still reach the mappings;
	// while it is not zero, Remove and Close leave what they drop in
	// doomed, unmapped by the last Release.
	holds  int
	doomed [][]byte
	mapped int64 // bytes mapped, doomed ones included
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
	t.mapped += size
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
	t.unmap(mem)
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
		t.unmap(mem)
		delete(t.regions, id)
	}
	t.bytes = 0
	return nil
}

// Hold keeps every mapping of the table, those Remove or Close drop
// included, until the matching Release: an operation that may reach a
// client's memory after the client is gone (a posted RDMA op of a
// canceled message) holds the table, so that its late access reads or
// writes memory that is still mapped instead of faulting. Take it while
// the slices it covers are valid.
func (t *RegionTable) Hold() {
	t.mu.Lock()
	t.holds++
	t.mu.Unlock()
}

// Release ends a Hold; the last one unmaps what Remove and Close
// dropped meanwhile.
func (t *RegionTable) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holds <= 0 {
		panic("shmring: RegionTable.Release without Hold")
	}
	t.holds--
	if t.holds > 0 {
		return
	}
	for i, mem := range t.doomed {
		t.mapped -= int64(len(mem))
		closeAll(mem)
		t.doomed[i] = nil
	}
	t.doomed = t.doomed[:0]
}

// Mapped returns the bytes of client memory the table keeps mapped:
// its regions, and those Remove or Close dropped while held.
func (t *RegionTable) Mapped() int64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.mapped
}

// unmap drops mem now, or at the last Release while held (t.mu held).
func (t *RegionTable) unmap(mem []byte) {
	if t.holds > 0 {
		t.doomed = append(t.doomed, mem)
		return
	}
	t.mapped -= int64(len(mem))
	closeAll(mem)
}
