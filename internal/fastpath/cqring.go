package fastpath

import (
	"math/bits"

	"github.com/godapl/godapl/verbs"
)

// CQRing is a CQ's queue of completions: a ring whose array is a power of
// two, so that a slot is found with a mask. A provider may keep its
// completions in one and lend it to the consumer (CQRinger), which then
// takes the oldest completion where it lies, with calls the compiler
// inlines, instead of copying it out through PollLocked. It is not safe
// for concurrent use: the CQ's lock guards it, and its bounds (a CQ's
// depth) are the provider's to keep.
type CQRing struct {
	wcs       []verbs.WC // len is a power of two
	head, n   int
	solicited int // queued completions with verbs.WC.Solicited()
}

// NewCQRing returns an empty ring that holds at least size completions.
func NewCQRing(size int) CQRing {
	return CQRing{wcs: make([]verbs.WC, 1<<bits.Len(uint(max(size, 1)-1)))}
}

// Len returns the completions queued.
func (r *CQRing) Len() int { return r.n }

// Cap returns the completions the ring can hold.
func (r *CQRing) Cap() int { return len(r.wcs) }

// Solicited returns the queued completions that satisfy a solicited-only
// wait (verbs.WC.Solicited).
func (r *CQRing) Solicited() int { return r.solicited }

// Push queues a copy of wc; the caller has checked that Len < Cap.
func (r *CQRing) Push(wc *verbs.WC) {
	r.wcs[(r.head+r.n)&(len(r.wcs)-1)] = *wc
	r.n++
	if wc.Solicited() {
		r.solicited++
	}
}

// Peek returns the oldest completion, in place, or nil when none is
// queued. It stays valid until Poll or Resize, and once popped until
// the next Push.
func (r *CQRing) Peek() *verbs.WC {
	if r.n == 0 {
		return nil
	}
	return &r.wcs[r.head&(len(r.wcs)-1)]
}

// Pop removes the oldest completion, wc, as Peek returned it: wc saves
// finding it again. It returns the completions left (Len), which a
// caller that reports them would otherwise load again. It does nothing
// when none is queued.
func (r *CQRing) Pop(wc *verbs.WC) (left int) {
	if r.n == 0 {
		return 0
	}
	if wc.Solicited() {
		r.solicited--
	}
	r.n--
	r.head = r.next()
	return r.n
}

// PopPeeked is Pop for the completion wc that Peek has just returned,
// not nil: the ring is not empty, which Pop tests again.
func (r *CQRing) PopPeeked(wc *verbs.WC) (left int) {
	if wc.Solicited() {
		r.solicited--
	}
	r.n--
	r.head = r.next()
	return r.n
}

// next is head after a pop, n having been decremented: the following
// slot, or the first once the ring is empty. A CQ that rarely holds more
// than one completion (a round trip's) then keeps using the same slot,
// which stays in the cache, where cycling through the array would reach
// every slot again only after the whole ring had been written.
func (r *CQRing) next() int {
	if r.n == 0 {
		return 0
	}
	return (r.head + 1) & (len(r.wcs) - 1)
}

// Poll moves up to len(wcs) of the oldest completions into wcs and
// returns how many it moved.
func (r *CQRing) Poll(wcs []verbs.WC) int {
	k := 0
	for k < len(wcs) && r.n > 0 {
		wcs[k] = r.wcs[r.head]
		if wcs[k].Solicited() {
			r.solicited--
		}
		r.n--
		r.head = r.next()
		k++
	}
	return k
}

// Resize moves the queued completions, in order, to a new array that
// holds at least size; the caller has checked that they fit (Len <= size).
func (r *CQRing) Resize(size int) {
	nr := NewCQRing(size)
	for i := 0; i < r.n; i++ {
		nr.wcs[i] = r.wcs[(r.head+i)&(len(r.wcs)-1)]
	}
	nr.n, nr.solicited = r.n, r.solicited
	*r = nr
}
