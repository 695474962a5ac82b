package soft

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// An STag is 32 bits: a 24-bit index into the device's table and an 8-bit
// key (RFC 5040 section 5.1; siw looks up by index and then compares the
// whole STag). Keys are drawn from a ChaCha8 stream seeded from
// crypto/rand, so a peer that learned one STag cannot predict another, and
// re-registering an index yields a new key, so a stale STag never matches.
const (
	stagIndexShift = 8
	maxSTagIndex   = 1<<24 - 1
)

// Fault is why a memory access was refused. Providers map it to the
// Terminate code of the layer that detected it (see DDPTagged, RDMAP).
type Fault uint8

const (
	FaultNone   Fault = iota
	FaultSTag         // no valid region has this STag
	FaultBounds       // range outside the region
	FaultAccess       // region does not grant the access
	FaultPD           // region belongs to another PD
	FaultTOWrap       // address + length overflows
)

func (f Fault) String() string {
	return [...]string{"none", "invalid STag", "base/bounds violation", "access rights violation", "STag not associated with PD", "TO wrap"}[f]
}

// Err maps a fault to the verbs sentinel error for synchronous reporting:
// each protection fault to its own kind of verbs.ErrProtection, so that the
// layer above can rely on the check at post time (fastpath.SGLChecker).
func (f Fault) Err() error {
	switch f {
	case FaultNone:
		return nil
	case FaultSTag:
		return verbs.ErrInvalidKey
	case FaultBounds, FaultTOWrap:
		return verbs.ErrBounds
	case FaultAccess:
		return verbs.ErrAccess
	case FaultPD:
		return verbs.ErrWrongPD
	}
	return verbs.ErrProtection
}

// extent is what a region grants: bytes, their address and the rights. It
// is immutable; a memory window swaps in a new one when it is rebound, so
// a concurrent access sees either the old binding or the new one.
type extent struct {
	base   uint64 // address of buf[0] in the region's address space (TO)
	buf    []byte
	access verbs.Access
}

// region is a registered range: an MR, or a memory window.
type region struct {
	stag  atomic.Uint32
	pd    *PD
	ext   atomic.Pointer[extent]
	valid atomic.Bool
	users atomic.Int32 // accesses in progress (Holds, see hold.go)
	mw    *MW          // set for windows
}

// stagTable maps STag indexes to regions. Every DTO looks STags up, and
// registrations are rare, so lookups take no lock: the index lives in an
// array published through an atomic pointer, which add replaces with a
// copy twice the size when it is full (the old array is never written
// again). mu serialises the writers.
//
// A lookup that loaded an older array may find a region that remove has
// since taken out, or miss one added after the copy; either is a lookup
// that ran before the change. A removed region is invalidated before
// remove returns, and acquire checks validity and the whole STag after
// counting its access (hold.go), so a stale entry is never used.
type stagTable struct {
	mu      sync.Mutex
	entries atomic.Pointer[stagIndex]
	used    uint32   // indexes handed out so far (index 0 is never used: STag 0 is special to some hardware); guarded by mu
	free    []uint32 // guarded by mu
	keys    *rand.ChaCha8
}

// stagIndex is one generation of the table's array, by STag index.
type stagIndex []atomic.Pointer[region]

func newSTagTable() *stagTable {
	var seed [32]byte
	if _, err := crand.Read(seed[:]); err != nil {
		// crypto/rand never fails on Linux; an unseeded table would hand out
		// guessable keys, which is worse than stopping.
		panic("soft: crypto/rand: " + err.Error())
	}
	t := &stagTable{used: 1, keys: rand.NewChaCha8(seed)}
	e := make(stagIndex, 64)
	t.entries.Store(&e)
	return t
}

// add installs r under a fresh STag and returns it.
func (t *stagTable) add(r *region) (uint32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var idx uint32
	if n := len(t.free); n > 0 {
		idx, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.used > maxSTagIndex {
			return 0, verbs.ErrNoResources
		}
		idx = t.used
		t.used++
	}
	e := *t.entries.Load()
	if int(idx) >= len(e) {
		e = t.growLocked(e)
	}
	stag := idx<<stagIndexShift | uint32(t.nextKey())
	r.stag.Store(stag)
	r.valid.Store(true)
	e[idx].Store(r)
	return stag, nil
}

// growLocked publishes a copy of e twice its size and returns it.
func (t *stagTable) growLocked(e stagIndex) stagIndex {
	g := make(stagIndex, 2*len(e))
	for i := range e {
		g[i].Store(e[i].Load())
	}
	t.entries.Store(&g)
	return g
}

// rekey gives r (already in the table) a fresh key, invalidating the old
// STag; used when a memory window is rebound.
func (t *stagTable) rekey(r *region) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := r.stag.Load()
	key := t.nextKey()
	for key == uint8(old) {
		key = t.nextKey()
	}
	stag := old&^0xff | uint32(key)
	r.stag.Store(stag)
	r.valid.Store(true)
	return stag
}

func (t *stagTable) nextKey() uint8 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], t.keys.Uint64())
	return b[0]
}

// remove frees r's index and waits for accesses in progress. The wait
// happens outside the table lock: a goroutine holding one region may be
// resolving another.
func (t *stagTable) remove(r *region) {
	t.mu.Lock()
	idx := r.stag.Load() >> stagIndexShift
	if e := *t.entries.Load(); int(idx) < len(e) && e[idx].Load() == r {
		e[idx].Store(nil)
		t.free = append(t.free, idx)
	}
	t.mu.Unlock()
	r.invalidate()
}

// lookup returns the valid region with exactly this STag.
func (t *stagTable) lookup(stag uint32) *region {
	idx := stag >> stagIndexShift
	e := *t.entries.Load()
	var r *region
	if idx != 0 && int(idx) < len(e) {
		r = e[idx].Load()
	}
	if r == nil || !r.valid.Load() || r.stag.Load() != stag {
		return nil
	}
	return r
}

// check resolves [addr, addr+n) of the region named by stag for access
// need by an object of pd. On success the access is held: the caller
// releases the Hold when it is done with the memory.
func (t *stagTable) check(stag uint32, pd *PD, addr, n uint64, need verbs.Access) ([]byte, Hold, Fault) {
	r := t.acquire(stag)
	if r == nil {
		return nil, Hold{}, FaultSTag
	}
	return r.hold(pd, addr, n, need)
}

// hold is check for a region already acquired: it keeps the access on
// success and gives it back on a fault.
func (r *region) hold(pd *PD, addr, n uint64, need verbs.Access) ([]byte, Hold, Fault) {
	b, f := r.span(pd, addr, n, need)
	if f != FaultNone {
		r.users.Add(-1)
		return nil, Hold{}, f
	}
	return b, Hold{r}, FaultNone
}

// span checks [addr, addr+n) against r's current extent.
func (r *region) span(pd *PD, addr, n uint64, need verbs.Access) ([]byte, Fault) {
	if r.pd != pd {
		return nil, FaultPD
	}
	e := r.ext.Load()
	if e == nil {
		return nil, FaultSTag
	}
	if e.access&need != need {
		return nil, FaultAccess
	}
	if addr+n < addr {
		return nil, FaultTOWrap
	}
	if addr < e.base || addr+n > e.base+uint64(len(e.buf)) {
		return nil, FaultBounds
	}
	off := addr - e.base
	return e.buf[off : off+n : off+n], FaultNone
}
