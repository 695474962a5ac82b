package soft

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestRecvRingSpansWhatItNeeds: a receive ring of depth 1000 (an array
// of 1024) hands its receives out in posting order while its fill rises
// past each doubling of the slots in use with the queue wrapped inside
// them, and falls again; the slots in use stay the least power of two
// that held the fill, 16 at the least, and go back to 16 once it is
// posted to empty. A ring resized while it holds receives keeps their order.
func TestRecvRingSpansWhatItNeeds(t *testing.T) {
	var r recvRing
	r.resize(1000)
	if r.mask != recvRingMin-1 {
		t.Fatalf("new ring spans %d slots, want %d", r.mask+1, recvRingMin)
	}
	sgl := []verbs.SGE{{Addr: 1, Length: 8, LKey: 7}}
	next, last := uint64(0), uint64(0) // the oldest queued, the next to post
	post := func() {
		t.Helper()
		if r.full() {
			t.Fatalf("ring full at %d", r.n)
		}
		r.push(&verbs.RecvWR{ID: last, SGL: sgl})
		last++
	}
	take := func() {
		t.Helper()
		var w RecvWQE
		if !r.pop(&w) {
			t.Fatalf("ring empty, %d posted after %d", last-next, next)
		}
		if w.ID != next || w.NumSGE != 1 || w.Len != 8 || w.SGL[0] != sgl[0] {
			t.Fatalf("took %+v, want ID %d of one SGE of 8 bytes", w, next)
		}
		next++
	}
	// Fill to k, then cycle at k so that the queue wraps the slots in use
	// at an odd place before it grows again.
	for _, k := range []int{5, 16, 17, 100, 129, 600, 1000, 300, 40, 3} {
		for int(last-next) < k {
			post()
		}
		for int(last-next) > k {
			take()
		}
		for range 37 {
			take()
			post()
		}
		want := recvRingMin
		for want < r.n {
			want *= 2
		}
		if r.mask+1 < want || r.n > r.mask+1 {
			t.Fatalf("fill %d: spans %d slots, want at least %d", r.n, r.mask+1, want)
		}
	}
	if r.mask+1 != 1024 {
		t.Fatalf("after a fill of 1000 the ring spans %d slots, want 1024", r.mask+1)
	}
	for last != next {
		take()
	}
	post()
	if r.mask != recvRingMin-1 || r.head != 0 {
		t.Fatalf("ring posted to when empty spans %d slots from %d, want %d from 0", r.mask+1, r.head, recvRingMin)
	}
	for range 69 {
		post()
	}
	for range 20 {
		take()
	}
	r.resize(200)
	if r.n != 50 || r.mask+1 != 64 {
		t.Fatalf("resized ring holds %d in %d slots, want 50 in 64", r.n, r.mask+1)
	}
	for range 150 {
		post()
	}
	if !r.full() {
		t.Fatalf("ring of depth 200 not full at %d", r.n)
	}
	for last != next {
		take()
	}
}

// TestRecvRingResizedFull: a ring resized to exactly what it holds spans
// no more slots than its array, so taking its receives and posting anew
// wraps inside it, in order, at every fill up to the recvRingMin floor.
func TestRecvRingResizedFull(t *testing.T) {
	sgl := []verbs.SGE{{Addr: 1, Length: 8, LKey: 7}}
	for _, depth := range []int{1, 2, 3, 4, 8, 16, 32, 64} {
		var r recvRing
		r.resize(depth + 8)
		for id := range uint64(depth) {
			r.push(&verbs.RecvWR{ID: id, SGL: sgl})
		}
		r.resize(depth)
		if r.mask+1 > len(r.slots) || r.n > r.mask+1 {
			t.Fatalf("depth %d: spans %d slots of an array of %d, holding %d", depth, r.mask+1, len(r.slots), r.n)
		}
		next, last := uint64(0), uint64(depth)
		for range 3 * depth {
			var w RecvWQE
			if !r.pop(&w) || w.ID != next {
				t.Fatalf("depth %d: took %d, want %d", depth, w.ID, next)
			}
			next++
			if r.full() {
				t.Fatalf("depth %d: full after a take", depth)
			}
			r.push(&verbs.RecvWR{ID: last, SGL: sgl})
			last++
		}
	}
}
