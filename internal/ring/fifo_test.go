package ring

import (
	"testing"

	"pgregory.net/rapid"
)

// TestFIFOModel checks FIFO against a slice doing the same pushes and
// pops, across many wrap-arounds of small rings.
func TestFIFOModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(1, 9).Draw(t, "capacity")
		var q FIFO[int]
		q.Init(capacity)
		var model []int
		next := 0
		for range rapid.IntRange(0, 200).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				ok := q.Push(next)
				if ok != (len(model) < capacity) {
					t.Fatalf("Push with %d of %d queued: %v", len(model), capacity, ok)
				}
				if ok {
					model = append(model, next)
				}
				next++
			case 1:
				v, ok := q.Pop()
				if ok != (len(model) > 0) || ok && v != model[0] {
					t.Fatalf("Pop = %d, %v; model %v", v, ok, model)
				}
				if ok {
					model = model[1:]
				}
			case 2:
				v, ok := q.PopBack()
				if ok != (len(model) > 0) || ok && v != model[len(model)-1] {
					t.Fatalf("PopBack = %d, %v; model %v", v, ok, model)
				}
				if ok {
					model = model[:len(model)-1]
				}
			case 3:
				if rapid.Bool().Draw(t, "clear") {
					q.Clear()
					model = model[:0]
				}
			}
			if q.Len() != len(model) || q.Cap() != capacity {
				t.Fatalf("Len %d Cap %d; model %d of %d", q.Len(), q.Cap(), len(model), capacity)
			}
			for i, v := range model {
				if *q.At(i) != v {
					t.Fatalf("At(%d) = %d; model %v", i, *q.At(i), model)
				}
			}
		}
	})
}

// TestFIFOClearsSlots: a value that left the ring is not kept alive by it.
func TestFIFOClearsSlots(t *testing.T) {
	var q FIFO[*int]
	q.Init(2)
	for range 3 {
		q.Push(new(int))
		q.Push(new(int))
		q.Pop()
		q.PopBack()
		for i, p := range q.buf {
			if p != nil {
				t.Fatalf("slot %d still holds a popped value", i)
			}
		}
	}
}

// TestFIFOPushGrow: a zero FIFO grows as PushGrow needs, keeping order
// across a wrapped ring.
func TestFIFOPushGrow(t *testing.T) {
	var q FIFO[int]
	if q.Push(1) {
		t.Fatal("Push into a zero FIFO succeeded")
	}
	next, want := 0, 0
	for round := range 6 {
		for range 3 + round*5 {
			q.PushGrow(next)
			next++
		}
		for range 2 + round*3 {
			if v, _ := q.Pop(); v != want {
				t.Fatalf("round %d: Pop = %d, want %d", round, v, want)
			}
			want++
		}
	}
	if q.Len() != next-want || q.Cap() < q.Len() {
		t.Fatalf("Len %d Cap %d, want Len %d", q.Len(), q.Cap(), next-want)
	}
	for i := range q.Len() {
		if *q.At(i) != want+i {
			t.Fatalf("At(%d) = %d, want %d", i, *q.At(i), want+i)
		}
	}
}

func TestFIFOAtOutOfRange(t *testing.T) {
	var q FIFO[int]
	q.Init(4)
	q.Push(1)
	defer func() {
		if recover() == nil {
			t.Fatal("At(1) of a one-value FIFO did not panic")
		}
	}()
	q.At(1)
}

func TestFIFOAllocs(t *testing.T) {
	var q FIFO[[4]uint64]
	q.Init(8)
	n := testing.AllocsPerRun(100, func() {
		for range 5 {
			q.Push([4]uint64{1})
		}
		q.At(2)[0] = 7
		q.PopBack()
		for q.Len() > 0 {
			q.Pop()
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per run; want 0", n)
	}
}
