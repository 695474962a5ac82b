package core

import (
	"context"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// TakeMode is what Take does, a wait or a dequeue, given as the bits of
// EVD.gate that send it down the full path: a freed EVD, a waiter's, and
// for a wait an unwaitable one. Every caller passes a constant, so that
// the hot path tests the gate against it as it is rather than building
// the mask on every take.
//
// A take looks at the gate under the CQ's lock, in the hold in which it
// takes: a waiter claims the EVD (gateWaiter) once it has found the CQ
// empty and goes to sleep, and a dequeue that had looked before the claim
// and took the CQ's lock only after it took what came after the claim,
// from under the waiter, which slept on, though dequeues begun meanwhile
// had reported EVD_WAITER. Under the lock the take either comes before
// the claim (and takes only what came before it) or sees it.
type TakeMode uint32

const (
	TakeDequeue = TakeMode(gateFreed | gateWaiter)
	TakeWait    = TakeMode(gateFreed | gateWaiter | gateUnwait) // an unwaitable EVD refuses waits only
)

// Take is Wait (TakeWait) and Dequeue (TakeDequeue), writing the event
// into ev: Number and the member it names (see translateLocked), and EVD.
// Its hot path, that of evd_dequeue and of an evd_wait with threshold 1,
// takes the oldest completion straight from the CQ into ev while the ring
// is empty, under the CQ's lock alone, which it takes inline when the
// provider lends its mutex (fastpath.CQMutexer), and returns the raw
// completions left, which the caller reports as the events left.
// Anything else goes down the full path (WaitSlow, DequeueSlow): the EVD
// is nil or freed, a waiter owns it, a wait finds it unwaitable or has
// another threshold, the ring holds events, or the CQ has none.
//
// Take handles the common case without a call but the CQ lock's slow
// path: the ring empty, the provider's CQ ring and mutex
// (fastpath.CQRinger, fastpath.CQMutexer), and the CQ's oldest completion a
// successful, unsuppressed DTO of the last completion's EP queue
// (EVD.lastQ), and of its oldest request (the queue's head), as every
// completion is while the queue's requests go signalled: one comparison
// of the work request ID with lastKey and the head's seq finds both the
// queue and the slot, where the slot's lookup from the ID took a range
// check of its own. A completion that retires requests posted
// unsignalled before it goes to takeOn. It hands anything else, untouched, to takeOn or the full
// path, in a call whose result is its own: Go keeps no register across a
// call, so with the owner's lookup and the poll in line it would save
// its arguments and what it had loaded on every take.
//
// It is also the function the consumer's call lands in: Wait, Dequeue
// and the dat/evd wrappers inline, which is why it sets ev.EVD itself
// (from the EVD's handle). A wrapper that called the hot path and then,
// if it declined, the full path would cost a frame of its own and the
// saving of the arguments it kept around its first call, on every take.
func (e *EVD) Take(ctx context.Context, threshold int, ev *dat.Event, mode TakeMode) (int, error) {
	if e == nil || threshold != 1 {
		return e.full(ctx, threshold, ev, mode)
	}
	r, mu := e.cqRing, e.cqMu
	if r == nil {
		return e.takeOn(ctx, threshold, ev, mode)
	}
	mu.Lock()
	// The gate and the ring's count in one test: with ||, the compiler
	// made a boolean of the first two.
	if e.gate.Load()&uint32(mode)|uint32(e.queued.Load()) != 0 || e.wcHead != e.wcN {
		return e.unlockTakeOn(ctx, threshold, ev, mode)
	}
	if r.Len() == 0 { // before Peek, whose own test it settles: no nil test of wc
		return e.unlockFull(ctx, threshold, ev, mode)
	}
	wc := r.Peek()
	q := e.lastQ
	seq := q.head
	if wc.ID != e.lastKey|uint64(seq&wrSlotMask) || wc.Status != verbs.WCSuccess {
		return e.unlockTakeOn(ctx, threshold, ev, mode)
	}
	s := q.slot(seq)
	if s.seq != seq || s.flags&(dat.CompletionSuppress|slotBind) != 0 {
		return e.unlockTakeOn(ctx, threshold, ev, mode)
	}
	// Popped before ev is written from it, as long as nothing was
	// stored since the checks: Pop's own test of the status is then
	// known, and wc stays where it lies until a Push, under the lock.
	n := min(r.PopPeeked(wc), len(e.wcs)-1) // what a poll into wcs would have left
	q.retireFoundLocked(seq)
	ev.Number, ev.EVD = dat.DTOCompletionEvent, e.handle
	fillDTO(&ev.DTO, q.ep.handle, s, wc, dat.DTOSuccess)
	e.cqMu.Unlock() // mu, loaded again: kept, it was saved on every take
	return n, nil
}

// takeOn is Take for every case Take hands it: takeSlow (the owner's
// lookup, a poll, a translation the usual way, an EVD whose provider
// lends no CQ ring), and if that finds nothing or the gate says so, the
// full path.
//
//go:noinline
func (e *EVD) takeOn(ctx context.Context, threshold int, ev *dat.Event, mode TakeMode) (int, error) {
	if n, ok := e.takeSlow(ev, uint32(mode)); ok {
		ev.EVD = e.handle
		return n, nil
	}
	return e.full(ctx, threshold, ev, mode)
}

// unlockTakeOn releases the CQ's lock that Take took and hands the take
// to takeOn. Not inlined: with Unlock's slow path a call in Take, Take
// would keep its arguments around it, saved on every take.
//
//go:noinline
func (e *EVD) unlockTakeOn(ctx context.Context, threshold int, ev *dat.Event, mode TakeMode) (int, error) {
	e.cqMu.Unlock()
	return e.takeOn(ctx, threshold, ev, mode)
}

// unlockFull releases the CQ's lock that Take took and hands the take to
// the full path (not inlined, as unlockTakeOn).
//
//go:noinline
func (e *EVD) unlockFull(ctx context.Context, threshold int, ev *dat.Event, mode TakeMode) (int, error) {
	e.cqMu.Unlock()
	return e.full(ctx, threshold, ev, mode)
}

// full is the full path of a wait or a dequeue.
func (e *EVD) full(ctx context.Context, threshold int, ev *dat.Event, mode TakeMode) (n int, err error) {
	if mode == TakeWait && threshold == 1 && e.spinCur.Load() > 0 {
		if n, ok := e.spinTake(ev, mode); ok {
			ev.EVD = e.handle
			return n, nil
		}
	}
	if mode == TakeWait {
		n, err = e.WaitSlow(ctx, threshold, ev)
	} else {
		err = e.DequeueSlow(ev)
	}
	if err == nil {
		ev.EVD = e.handle
	}
	return n, err
}
