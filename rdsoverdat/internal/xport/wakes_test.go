package xport

import (
	"fmt"
	"testing"
)

// wakeLog records the wake-ups of the wakers of a test, in order.
type wakeLog struct{ got []string }

type testWaker struct {
	name string
	log  *wakeLog
}

func (w *testWaker) Wake() { w.log.got = append(w.log.got, w.name) }

func TestWakesOncePerSocket(t *testing.T) {
	log := &wakeLog{}
	a, b := &testWaker{"a", log}, &testWaker{"b", log}
	var s Wakes
	s.Add(a)
	s.Add(b)
	s.Add(a)
	s.Add(b)
	if len(log.got) != 0 {
		t.Fatalf("woken before Flush: %v", log.got)
	}
	if s.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", s.Pending())
	}
	s.Flush()
	want := []string{"a", "b"}
	if fmt.Sprint(log.got) != fmt.Sprint(want) {
		t.Fatalf("woke %v, want %v", log.got, want)
	}
	log.got = nil
	s.Flush()
	if len(log.got) != 0 || s.Pending() != 0 {
		t.Fatalf("a second Flush woke %v", log.got)
	}
	for i := range s.w {
		if s.w[i] != nil {
			t.Fatalf("slot %d still holds a socket after Flush", i)
		}
	}
}

func TestWakesFull(t *testing.T) {
	log := &wakeLog{}
	ws := make([]*testWaker, wakesMax+1)
	for i := range ws {
		ws[i] = &testWaker{fmt.Sprint(i), log}
	}
	var s Wakes
	for _, w := range ws[:wakesMax] {
		s.Add(w)
	}
	if len(log.got) != 0 {
		t.Fatalf("woken before the set was full: %v", log.got)
	}
	s.Add(ws[wakesMax])
	if len(log.got) != wakesMax || log.got[0] != "0" {
		t.Fatalf("a full set woke %d (%v), want the %d held first", len(log.got), log.got, wakesMax)
	}
	if s.Pending() != 1 {
		t.Fatalf("Pending = %d after the overflow, want 1", s.Pending())
	}
	s.Flush()
	if last := log.got[len(log.got)-1]; last != fmt.Sprint(wakesMax) {
		t.Fatalf("last woken %s", last)
	}
}

// countWaker counts its wake-ups.
type countWaker struct{ n int }

func (w *countWaker) Wake() { w.n++ }

func TestWakesAllocs(t *testing.T) {
	a, b := &countWaker{}, &countWaker{}
	var s Wakes
	n := testing.AllocsPerRun(100, func() {
		s.Add(a)
		s.Add(b)
		s.Add(a)
		s.Flush()
	})
	if n != 0 {
		t.Fatalf("a read's wake-ups allocate %v times", n)
	}
	if a.n != b.n || a.n < 100 {
		t.Fatalf("woke a %d and b %d times", a.n, b.n)
	}
}
