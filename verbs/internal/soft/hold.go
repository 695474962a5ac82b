package soft

import (
	"runtime"
	"time"

	"github.com/godapl/godapl/verbs"
)

// Memory safety of invalidation. A provider copies into and out of
// registered memory without any lock, so without more care a user who
// deregisters an MR and then frees (munmaps) its buffer could race with a
// copy already under way — and over siw that copy may be a peer's RDMA
// Write: the peer could crash us. So every access to a region's memory is
// bracketed by a Hold: resolving an STag counts the access in
// region.users, and the provider releases the Hold as soon as its copy is
// done. Every path that ends a region's validity (MR Dereg and
// Invalidate, a window's unbind, rebind, invalidation and Dealloc) clears
// region.valid and then waits for region.users to reach zero, so when it
// returns no access can be in progress and none can start.
//
// The order of the two steps on each side is what makes this sound (Go's
// atomics are sequentially consistent): an access increments users and
// then checks valid and the STag; an invalidation clears valid and then
// reads users. Either the access sees valid false and backs out, or the
// invalidation sees the access and waits for it.
//
// A goroutine must never wait for a region while it holds an access to
// it: providers release a receive's holds before they apply a Send with
// Invalidate.

// Hold is one access in progress to a region's memory. The zero Hold
// holds nothing. Release it exactly once, as soon as the copy is done.
type Hold struct{ r *region }

// Release ends the access.
func (h Hold) Release() {
	if h.r != nil {
		h.r.users.Add(-1)
	}
}

// acquire returns the region with exactly this STag, counted as in use,
// or nil if there is none valid.
func (t *stagTable) acquire(stag uint32) *region {
	r := t.lookup(stag)
	if r == nil {
		return nil
	}
	if !r.enter(stag) {
		return nil
	}
	return r
}

// enter counts an access to r, then checks that r is still valid under
// stag (the order the invalidation's is paired with, above); false,
// counting nothing, if it is not.
func (r *region) enter(stag uint32) bool {
	r.users.Add(1)
	if !r.valid.Load() || r.stag.Load() != stag {
		r.users.Add(-1)
		return false
	}
	return true
}

// Drain tunables: a copy in progress is short (at most one FPDU's payload
// or one message between two in-memory QPs), so the waiter first yields,
// then sleeps briefly rather than burn a core.
const (
	drainSpins = 64
	drainSleep = 50 * time.Microsecond
)

// drain waits until no access to r is in progress. The caller has already
// cleared r.valid (or changed its STag), so no new access can start.
func (r *region) drain() {
	for i := 0; r.users.Load() != 0; i++ {
		if i < drainSpins {
			runtime.Gosched()
		} else {
			time.Sleep(drainSleep)
		}
	}
}

// invalidate ends r's validity and waits for accesses in progress.
func (r *region) invalidate() {
	r.valid.Store(false)
	r.drain()
}

// Holds keeps the accesses of one send work request's gather list. It is
// a fixed array, so taking and releasing them allocates nothing.
type Holds struct {
	h [verbs.MaxSGE]Hold
	n int
}

func (hs *Holds) add(h Hold) {
	if h.r != nil {
		hs.h[hs.n] = h
		hs.n++
	}
}

// Release ends every access in hs; hs may then be reused.
func (hs *Holds) Release() {
	for i := range hs.n {
		hs.h[i].Release()
		hs.h[i] = Hold{}
	}
	hs.n = 0
}
