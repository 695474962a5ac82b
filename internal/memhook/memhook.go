package memhook

import (
	"sync"
	"sync/atomic"
	"unsafe"
)

// Subscription is one subscriber, from Subscribe.
type Subscription struct {
	fn func(base, length uintptr)
}

var (
	mu sync.Mutex // serialises changes of subs
	// subs is the current subscribers, replaced (never changed in place)
	// on each change, so that Unmapping reads it without a lock and a
	// subscriber may subscribe, unsubscribe or unmap from its callback.
	subs atomic.Pointer[[]*Subscription]
)

// Subscribe calls fn with the base address and length of every range
// about to be unmapped, from the goroutine unmapping it, until
// Unsubscribe. Calls may come from several goroutines at once. When fn
// returns, the range is unmapped and may be mapped again: fn must have
// stopped every new use of registrations overlapping it.
func Subscribe(fn func(base, length uintptr)) *Subscription {
	s := &Subscription{fn: fn}
	mu.Lock()
	defer mu.Unlock()
	var next []*Subscription
	if cur := subs.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, s)
	subs.Store(&next)
	return s
}

// Unsubscribe ends s; a second call does nothing. An Unmapping that
// began before it may still call s's function, even after it returned:
// the function must stay safe to call (on a closed cache, a no-op).
func (s *Subscription) Unsubscribe() {
	mu.Lock()
	defer mu.Unlock()
	cur := subs.Load()
	if cur == nil {
		return
	}
	next := make([]*Subscription, 0, len(*cur))
	for _, o := range *cur {
		if o != s {
			next = append(next, o)
		}
	}
	if len(next) == len(*cur) {
		return
	}
	subs.Store(&next)
}

// Unmapping tells every subscriber that mem is about to be unmapped.
// Call it before munmap, once nothing of the caller's own uses mem.
func Unmapping(mem []byte) {
	if len(mem) == 0 {
		return
	}
	cur := subs.Load()
	if cur == nil {
		return
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	for _, s := range *cur {
		s.fn(base, uintptr(len(mem)))
	}
}
