package rdsoverdat

import "testing"

// A reserve gives out what it holds, then nothing, and takes released
// messages back only up to its size.
func TestMsgReserve(t *testing.T) {
	var r msgReserveT
	if r.take() != nil {
		t.Fatal("an empty reserve gave a message")
	}
	if r.put(&message{}) {
		t.Fatal("a reserve of size 0 kept a message")
	}
	r.ms = make([]*message, 0, 2)
	r.ms = append(r.ms, &message{}, &message{})
	a, b := r.take(), r.take()
	if a == nil || b == nil || a == b || r.take() != nil {
		t.Fatalf("took %p, %p from a reserve of two", a, b)
	}
	if !r.put(a) || !r.put(b) {
		t.Fatal("a reserve that lacks messages refused them")
	}
	if r.put(&message{}) {
		t.Fatal("a full reserve kept a third message")
	}
}
