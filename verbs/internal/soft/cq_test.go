package soft

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestCQDepthNotRing: a CQ holds exactly the depth it was created or
// resized with, whatever size its ring's array is, keeps posting order
// across the array's wrap, and overflows on the completion after.
func TestCQDepthNotRing(t *testing.T) {
	d := NewDevice(Limits())
	vcq, err := d.CreateCQ(verbs.CQAttr{Depth: 5})
	if err != nil {
		t.Fatal(err)
	}
	cq := vcq.(*CQ)
	id := uint64(0)
	push := func(k int) {
		for range k {
			id++
			cq.Push(&verbs.WC{ID: id})
		}
	}
	next := uint64(1)
	poll := func(k int) {
		t.Helper()
		wcs := make([]verbs.WC, k)
		if got := cq.Poll(wcs); got != k {
			t.Fatalf("Poll got %d completions, want %d", got, k)
		}
		for _, wc := range wcs {
			if wc.ID != next {
				t.Fatalf("completion %d out of order, want %d", wc.ID, next)
			}
			next++
		}
	}
	for round := range 4 { // moves head around the array
		push(5)
		if cq.Len() != 5 || cq.Depth() != 5 {
			t.Fatalf("round %d: Len %d, Depth %d; want 5 and 5", round, cq.Len(), cq.Depth())
		}
		if ok, err := cq.ready(false); !ok || err != nil {
			t.Fatalf("round %d: a full CQ reports %v, %v", round, ok, err)
		}
		poll(3)
		push(3)
		poll(5)
	}
	if err := cq.Resize(3); err != nil {
		t.Fatal(err)
	}
	push(3)
	if cq.Depth() != 3 || cq.Len() != 3 {
		t.Fatalf("after Resize(3): Depth %d, Len %d", cq.Depth(), cq.Len())
	}
	push(1)
	if _, err := cq.ready(false); err != verbs.ErrCQOverflow {
		t.Fatalf("a fourth completion on a CQ of depth 3: %v, want ErrCQOverflow", err)
	}
	poll(3)
}
