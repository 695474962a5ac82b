package core

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// TakeFast is the hot path of evd_dequeue (wait false) and of an evd_wait
// with threshold 1 (wait true): while the ring is empty, the oldest
// completion straight from the CQ into ev (see translateLocked for what
// it writes), under the CQ's lock alone, which it takes inline when the
// provider lends its mutex (verbs.CQMutexer). It returns the raw
// completions left, which the caller reports as the events left. ok false
// leaves ev alone and sends the caller down the full path (DequeueSlow,
// WaitSlow): the EVD is nil or freed, a waiter owns it, a wait finds it
// unwaitable, the ring holds events, or the CQ has none.
//
// It takes only what it needs, and the dat/evd wrappers call it and then,
// if they must, the full path: Go keeps no register across a call, so
// each argument of the full path that the hot path carried along would be
// saved and restored around every call it makes.
//
// TakeFast itself handles the common case, without a call but the CQ
// lock's slow path: the ring empty, the provider's CQ ring and mutex
// (verbs.CQRinger, verbs.CQMutexer), and the CQ's oldest completion a
// successful, unsuppressed DTO of the last completion's EP queue. It
// hands anything else, untouched, to takeSlow, in a call whose result is
// its own: with the owner's lookup and the poll in line, which are calls,
// it saved its arguments and what it had loaded on every take.
func (e *EVD) TakeFast(ev *dat.Event, wait bool) (n int, ok bool) {
	block := gateFreed | gateWaiter
	if wait {
		block |= gateUnwait
	}
	if e == nil || e.gate.Load()&block != 0 {
		return 0, false
	}
	r, mu := e.cqRing, e.cqMu
	if r == nil {
		return e.takeSlow(ev)
	}
	mu.Lock()
	if e.queued.Load() != 0 || e.wcHead != e.wcN {
		return e.unlockTakeSlow(ev)
	}
	wc := r.Peek()
	if wc == nil {
		mu.Unlock()
		return 0, false
	}
	o := e.last
	if o == nil || o.id != wc.ID&^(1<<wrGenShift-1) || wc.Status != verbs.WCSuccess {
		return e.unlockTakeSlow(ev)
	}
	if o.gone.Load() {
		return e.unlockTakeSlow(ev)
	}
	q := &o.req
	if wc.ID&wrRecvBit != 0 {
		q = &o.recv
	}
	s, seq := q.lookupLocked(uint32(wc.ID & wrSlotMask))
	if s == nil || q.evd != e || s.flags&dat.CompletionSuppress != 0 || s.op == dat.DTOBindMW {
		return e.unlockTakeSlow(ev)
	}
	ev.Number = dat.DTOCompletionEvent
	fillDTO(&ev.DTO, o.ep.handle, s, wc, dat.DTOSuccess)
	q.retireFoundLocked(seq)
	n = min(r.Len(), len(e.wcs)) - 1 // what a poll into wcs would have left
	r.Pop(wc)
	mu.Unlock()
	return n, true
}

// unlockTakeSlow releases the CQ's lock that TakeFast took and hands the
// take to takeSlow. Not inlined: with Unlock's slow path a call in
// TakeFast, TakeFast would keep its arguments around it, saved on every
// take.
//
//go:noinline
func (e *EVD) unlockTakeSlow(ev *dat.Event) (int, bool) {
	e.cqMu.Unlock()
	return e.takeSlow(ev)
}
