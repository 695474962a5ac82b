package core

import (
	"context"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// Take is Wait (wait true) and Dequeue (wait false), writing the event
// into ev: Number and the member it names (see translateLocked), and EVD.
// Its hot path, that of evd_dequeue and of an evd_wait with threshold 1,
// takes the oldest completion straight from the CQ into ev while the ring
// is empty, under the CQ's lock alone, which it takes inline when the
// provider lends its mutex (verbs.CQMutexer), and returns the raw
// completions left, which the caller reports as the events left.
// Anything else goes down the full path (WaitSlow, DequeueSlow): the EVD
// is nil or freed, a waiter owns it, a wait finds it unwaitable or has
// another threshold, the ring holds events, or the CQ has none.
//
// Take handles the common case without a call but the CQ lock's slow
// path: the ring empty, the provider's CQ ring and mutex
// (verbs.CQRinger, verbs.CQMutexer), and the CQ's oldest completion a
// successful, unsuppressed DTO of the last completion's EP queue
// (EVD.lastQ). It hands anything else, untouched, to takeOn or the full
// path, in a call whose result is its own: Go keeps no register across a
// call, so with the owner's lookup and the poll in line it saved its
// arguments and what it had loaded on every take.
//
// It is also the function the consumer's call lands in: Wait, Dequeue
// and the dat/evd wrappers inline, which is why it sets ev.EVD itself
// (from the EVD's handle). A wrapper that called the hot path and then,
// if it declined, the full path cost a frame of its own and the
// arguments it kept around its first call: 16 instructions a take more
// in callgrind (Send 64 B on mem, two takes an iteration: 2988 -> 2956).
func (e *EVD) Take(ctx context.Context, threshold int, ev *dat.Event, wait bool) (int, error) {
	if e == nil || threshold != 1 {
		return e.full(ctx, threshold, ev, wait)
	}
	r, mu := e.cqRing, e.cqMu
	if r == nil {
		return e.takeOn(ctx, threshold, ev, wait)
	}
	mu.Lock()
	if e.gate.Load()&takeBlock(wait) != 0 || e.queued.Load() != 0 || e.wcHead != e.wcN {
		return e.unlockTakeOn(ctx, threshold, ev, wait)
	}
	wc := r.Peek()
	if wc == nil {
		return e.unlockFull(ctx, threshold, ev, wait)
	}
	q := e.lastQ
	if wc.ID&^wrSlotMask != e.lastKey || wc.Status != verbs.WCSuccess {
		return e.unlockTakeOn(ctx, threshold, ev, wait)
	}
	s, seq := q.lookupLocked(uint32(wc.ID & wrSlotMask))
	if s == nil || s.flags&dat.CompletionSuppress != 0 || s.op == dat.DTOBindMW {
		return e.unlockTakeOn(ctx, threshold, ev, wait)
	}
	ev.Number, ev.EVD = dat.DTOCompletionEvent, e.handle
	fillDTO(&ev.DTO, q.ep.handle, s, wc, dat.DTOSuccess)
	q.retireFoundLocked(seq)
	n := min(r.Len(), len(e.wcs)) - 1 // what a poll into wcs would have left
	r.Pop(wc)
	mu.Unlock()
	return n, nil
}

// takeBlock returns the bits of EVD.gate that send a take down the full
// path: a freed EVD, a waiter's, and for a wait an unwaitable one.
//
// A take looks at the gate under the CQ's lock, in the hold in which it
// takes: a waiter claims the EVD (gateWaiter) once it has found the CQ
// empty and goes to sleep, and a dequeue that had looked before the claim
// and took the CQ's lock only after it took what came after the claim,
// from under the waiter, which slept on, though dequeues begun meanwhile
// had reported EVD_WAITER. Under the lock the take either comes before
// the claim (and takes only what came before it) or sees it.
func takeBlock(wait bool) uint32 {
	if wait {
		return gateFreed | gateWaiter | gateUnwait
	}
	return gateFreed | gateWaiter
}

// takeOn is Take for every case Take hands it: takeSlow (the owner's
// lookup, a poll, a translation the usual way, an EVD whose provider
// lends no CQ ring), and if that finds nothing or the gate says so, the
// full path.
//
//go:noinline
func (e *EVD) takeOn(ctx context.Context, threshold int, ev *dat.Event, wait bool) (int, error) {
	if n, ok := e.takeSlow(ev, takeBlock(wait)); ok {
		ev.EVD = e.handle
		return n, nil
	}
	return e.full(ctx, threshold, ev, wait)
}

// unlockTakeOn releases the CQ's lock that Take took and hands the take
// to takeOn. Not inlined: with Unlock's slow path a call in Take, Take
// would keep its arguments around it, saved on every take.
//
//go:noinline
func (e *EVD) unlockTakeOn(ctx context.Context, threshold int, ev *dat.Event, wait bool) (int, error) {
	e.cqMu.Unlock()
	return e.takeOn(ctx, threshold, ev, wait)
}

// unlockFull releases the CQ's lock that Take took and hands the take to
// the full path (not inlined, as unlockTakeOn).
//
//go:noinline
func (e *EVD) unlockFull(ctx context.Context, threshold int, ev *dat.Event, wait bool) (int, error) {
	e.cqMu.Unlock()
	return e.full(ctx, threshold, ev, wait)
}

// full is the full path of a wait or a dequeue.
func (e *EVD) full(ctx context.Context, threshold int, ev *dat.Event, wait bool) (n int, err error) {
	if wait {
		n, err = e.WaitSlow(ctx, threshold, ev)
	} else {
		err = e.DequeueSlow(ev)
	}
	if err == nil {
		ev.EVD = e.handle
	}
	return n, err
}
