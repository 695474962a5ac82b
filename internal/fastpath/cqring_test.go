package fastpath

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestCQRingPeekPop: Peek shows the oldest completion in place and Pop
// (or PopPeeked) removes it as a Poll of one would: in order across the
// array's wrap, keeping the solicited count; Peek and Pop do nothing on
// an empty ring, and a Resize keeps order and count.
func TestCQRingPeekPop(t *testing.T) {
	r := NewCQRing(3)
	if r.Cap() != 4 {
		t.Fatalf("Cap %d, want 4", r.Cap())
	}
	id := uint64(0)
	for round := range 3 { // 3 of 4 slots a round: head wraps
		for k := range 3 {
			id++
			wc := verbs.WC{ID: id}
			if k == 1 {
				wc.Flags = verbs.WCSolicited
			}
			r.Push(&wc)
		}
		for k := range 3 {
			wc, want := r.Peek(), id-2+uint64(k)
			if wc == nil || wc.ID != want || r.Len() != 3-k {
				t.Fatalf("round %d: Peek %+v, Len %d; want ID %d, Len %d", round, wc, r.Len(), want, 3-k)
			}
			if wc != &r.wcs[r.head] {
				t.Fatalf("round %d: Peek returned a copy", round)
			}
			pop := r.Pop
			if round == 1 {
				pop = r.PopPeeked // as Pop, for what Peek returned
			}
			if left := pop(wc); left != 2-k || left != r.Len() {
				t.Fatalf("round %d: Pop returned %d left, Len %d; want %d", round, left, r.Len(), 2-k)
			}
			if got, want := r.Solicited(), 0; k == 0 && got != 1 || k > 0 && got != want {
				t.Fatalf("round %d, after pop %d: %d solicited queued", round, k, got)
			}
		}
	}
	if wc := r.Peek(); wc != nil {
		t.Fatalf("empty ring: Peek %+v", wc)
	}
	head := r.head
	if left := r.Pop(&verbs.WC{Status: verbs.WCGeneralErr}); left != 0 {
		t.Fatalf("Pop on an empty ring returned %d left", left)
	}
	if r.Len() != 0 || r.head != head || r.Solicited() != 0 {
		t.Fatalf("Pop on an empty ring moved it: Len %d, head %d -> %d, solicited %d", r.Len(), head, r.head, r.Solicited())
	}
	for i := range 3 {
		r.Push(&verbs.WC{ID: uint64(10 + i), Status: verbs.WCStatus(i % 2)}) // an error is solicited
	}
	r.Pop(r.Peek())
	r.Resize(5)
	var wcs [4]verbs.WC
	if r.Cap() != 8 || r.Solicited() != 1 || r.Poll(wcs[:]) != 2 || wcs[0].ID != 11 || wcs[1].ID != 12 {
		t.Fatalf("after Resize(5): Cap %d, solicited %d, polled %+v", r.Cap(), r.Solicited(), wcs[:2])
	}
}
