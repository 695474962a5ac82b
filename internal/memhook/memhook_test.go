package memhook

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

// span is a buffer's range, for subscribers to recognise their test's
// calls (the subscribers are process-wide).
type span struct{ base, length uintptr }

func spanOf(b []byte) span {
	return span{uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b))}
}

func (s span) holds(base uintptr) bool { return base >= s.base && base-s.base < s.length }

// recorder subscribes and records the calls inside its buffer.
type recorder struct {
	in  span
	mu  sync.Mutex
	got []span
	sub *Subscription
}

func newRecorder(buf []byte) *recorder {
	r := &recorder{in: spanOf(buf)}
	r.sub = Subscribe(func(base, length uintptr) {
		if r.in.holds(base) {
			r.mu.Lock()
			r.got = append(r.got, span{base, length})
			r.mu.Unlock()
		}
	})
	return r
}

func (r *recorder) calls() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.got...)
}

func TestSubscribeGetsRange(t *testing.T) {
	buf := make([]byte, 4096)
	a, b := newRecorder(buf), newRecorder(buf)
	defer a.sub.Unsubscribe()
	defer b.sub.Unsubscribe()
	Unmapping(buf[100:300])
	want := spanOf(buf[100:300])
	for name, r := range map[string]*recorder{"first": a, "second": b} {
		if got := r.calls(); len(got) != 1 || got[0] != want {
			t.Errorf("%s subscriber got %v, want [%v]", name, got, want)
		}
	}
	Unmapping(buf[:0])
	if got := a.calls(); len(got) != 1 {
		t.Errorf("an empty range was announced: %v", got)
	}
}

func TestUnsubscribe(t *testing.T) {
	buf := make([]byte, 4096)
	a, b := newRecorder(buf), newRecorder(buf)
	defer b.sub.Unsubscribe()
	a.sub.Unsubscribe()
	a.sub.Unsubscribe() // a second call does nothing
	Unmapping(buf)
	if got := a.calls(); len(got) != 0 {
		t.Errorf("unsubscribed subscriber got %v", got)
	}
	if got := b.calls(); len(got) != 1 || got[0] != spanOf(buf) {
		t.Errorf("remaining subscriber got %v, want [%v]", got, spanOf(buf))
	}
}

// A callback runs with no lock of the package held: it may unsubscribe,
// subscribe and announce another range.
func TestCallbackReenters(t *testing.T) {
	buf := make([]byte, 4096)
	inner := newRecorder(buf)
	defer inner.sub.Unsubscribe()
	var s *Subscription
	var extra *Subscription
	var calls atomic.Int32
	s = Subscribe(func(base, length uintptr) {
		if !spanOf(buf).holds(base) || calls.Add(1) != 1 {
			return
		}
		s.Unsubscribe()
		extra = Subscribe(func(uintptr, uintptr) {})
		Unmapping(buf[2048:])
	})
	Unmapping(buf[:2048])
	extra.Unsubscribe()
	if n := calls.Load(); n != 1 {
		t.Errorf("self-unsubscribed callback ran %d times", n)
	}
	// inner subscribed first, so it heard the outer range first.
	want := []span{spanOf(buf[:2048]), spanOf(buf[2048:])}
	if got := inner.calls(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("nested announcements: got %v, want %v", got, want)
	}
}

// Announcements from many goroutines, while subscribers come and go,
// reach a subscriber present throughout exactly once each.
func TestConcurrentUnmapping(t *testing.T) {
	const workers, rounds = 8, 200
	buf := make([]byte, workers*rounds)
	var seen [workers * rounds]atomic.Int32
	in := spanOf(buf)
	stay := Subscribe(func(base, length uintptr) {
		if in.holds(base) && length == 1 {
			seen[base-in.base].Add(1)
		}
	})
	defer stay.Unsubscribe()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				k := w*rounds + i
				Unmapping(buf[k : k+1])
			}
		})
		wg.Go(func() {
			for range rounds {
				Subscribe(func(uintptr, uintptr) {}).Unsubscribe()
			}
		})
	}
	wg.Wait()
	for k := range seen {
		if n := seen[k].Load(); n != 1 {
			t.Fatalf("range %d announced %d times to a steady subscriber", k, n)
		}
	}
}
