package core

import (
	"context"
	"errors"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// The EVD's queue: the hot path that hands a completion straight from the
// CQ to the caller, and the ring that orders completions behind pushed
// events (see EVD).

// drainLocked moves completions into the ring while there is room: the
// raw ones first, then the CQ's. The caller holds mu.
func (e *EVD) drainLocked() {
	if e.cq == nil {
		return
	}
	e.cql.Lock()
	e.drainCQLocked()
	e.cql.Unlock()
}

// drainCQLocked is drainLocked for a caller holding mu and cql. It
// publishes the ring's count before the caller lets go of cql, so that the
// hot path, which polls under cql, never hands out a completion that came
// after those now in the ring.
//
// The drain may be anybody's (a poster that found its queue full, a
// resize, ep_get_status, a CNO), and it empties the CQ that a waiter or
// the CQ watch may be blocked on: once the CQ is empty, CQ.Wait no longer
// returns for the completions that were in it. So a drain that moved
// events the waiter could want wakes whoever sleeps on the EVD: loud
// ones, and on an EVD with SOLICITED_WAIT queues, whose sleepers wait for
// solicited completions (CQ.Wait's solicitedOnly), only those (or failed
// ones, verbs.WC.Solicited). Woken for an unsolicited one, a waiter
// returned it as the wake-up it takes every wake for.
func (e *EVD) drainCQLocked() {
	loud := e.loud
	solicited := e.moveCQLocked()
	e.queued.Store(int32(e.n))
	if e.loud > loud && (e.nSolicit == 0 || solicited) {
		e.wakeLocked()
	}
}

// wakeLocked wakes a waiter (in CQ.Wait itself, or on wake) and, when no
// waiter owns the EVD, its CNO, without waiting for the CQ to say so. A
// waiter that finds nothing new goes back to sleep. The caller holds mu.
func (e *EVD) wakeLocked() {
	e.interruptDirectLocked()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	if e.cno != nil && e.enabled && !e.waiting() {
		e.cno.kick()
	}
}

// moveCQLocked moves raw completions, then the CQ's, into the ring while
// it has room, and reports whether it queued a loud event of a solicited
// or failed completion (verbs.WC.Solicited). The caller holds mu and cql.
func (e *EVD) moveCQLocked() (solicited bool) {
	for {
		for e.wcHead < e.wcN {
			if e.n == len(e.ring) {
				return solicited
			}
			ent := &e.ring[(e.head+e.n)%len(e.ring)]
			wc := &e.wcs[e.wcHead]
			h, quiet, ok := e.translateLocked(wc, &ent.ev)
			e.wcHead++
			if ok {
				ent.hold, ent.quiet = h, quiet
				e.n++
				if !quiet {
					e.loud++
					solicited = solicited || wc.Solicited()
				}
			}
		}
		room := len(e.ring) - e.n
		if room == 0 || !e.pollRawCQLocked(room) {
			return solicited
		}
	}
}

// pollRawCQLocked polls up to max completions into wcs, which holds no
// raw ones; false when the CQ had none. The caller holds cql.
func (e *EVD) pollRawCQLocked(max int) bool {
	e.wcHead = 0
	e.wcN = e.cql.PollLocked(e.wcs[:min(max, len(e.wcs))])
	return e.wcN > 0
}

// takeCQLocked hands the oldest completion out into ev when the ring is
// empty (nothing can be older): a raw one, or the CQ's next. Its slot
// retires at once. False when there is none. The caller holds cql.
func (e *EVD) takeCQLocked(ev *dat.Event) bool { return e.takeCQOwnerLocked(ev, nil) }

// takeCQOwnerLocked is takeCQLocked when the caller has looked up the
// owner of the oldest completion, first (nil: not looked up), having
// peeked at it in the CQ with nothing polled: the lookup is not made
// twice.
func (e *EVD) takeCQOwnerLocked(ev *dat.Event, first *owner) bool {
	for {
		if e.wcHead == e.wcN && !e.pollRawCQLocked(len(e.wcs)) {
			return false
		}
		wc := &e.wcs[e.wcHead]
		e.wcHead++
		o := first
		if o == nil {
			o = e.ia.lookupOwner(wc.ID)
		}
		first = nil
		if h, _, ok := e.translateOwnerLocked(o, wc, ev); ok {
			h.releaseLocked()
			return true
		}
	}
}

// lastQueueLocked looks up the EP queue that the completion ID names and
// keeps it in e.lastQ, for Take when e.lastQ is not it; nil for none, an
// SRQ's, or a queue that does not complete to e. The caller holds cql.
func (e *EVD) lastQueueLocked(id uint64) (*slotRing, *owner) {
	o := e.ia.lookupOwner(id)
	if o == nil {
		return nil, nil
	}
	if o.srq != nil {
		e.srqKey, e.srqOwn = id&^wrSlotMask, o
		return nil, o
	}
	q := &o.req
	if id&wrRecvBit != 0 {
		q = &o.recv
	}
	if q.evd != e {
		return nil, o
	}
	e.lastKey, e.lastQ = id&^wrSlotMask, q
	return q, o
}

// takeSlow is Take for every case Take hands it (see Take for its common
// one): the owner's lookup, a poll, a translation the usual way, an EVD
// whose provider lends no CQ ring. It takes nothing while the gate has a
// bit of block set, which it reads under the CQ's lock (see TakeMode):
// Take's, or 0 for WaitSlow, its other caller, which holds mu and owns
// the EVD or is about to.
func (e *EVD) takeSlow(ev *dat.Event, block uint32) (n int, ok bool) {
	r := e.cqRing
	if r == nil {
		if e.cq == nil {
			return 0, false
		}
		return e.takeCQ(ev, block)
	}
	mu := e.cqMu // lent with the ring
	mu.Lock()
	if e.gate.Load()&block != 0 {
		mu.Unlock()
		return 0, false
	}
	// With nothing older in the ring or polled: the CQ's oldest
	// completion, where it lies, a successful DTO of an EP queue
	// completing to e, translated straight from its slot into ev (see
	// translateLocked), which retires the slot without a hold. This is
	// Take's translation again, for the completions Take hands over
	// because e.last is not their owner: shared, it would be a call in
	// Take, which would then save its arguments on every take.
	// Anything else is polled and translated the usual way, from the
	// owner looked up here if it was (first: an SRQ's completion).
	var first *owner
	if e.queued.Load() == 0 && e.wcHead == e.wcN {
		wc := r.Peek()
		if wc == nil {
			mu.Unlock()
			return 0, false
		}
		// The queue comes from e.lastQ when the completion is the last
		// one's queue's, as it mostly is: the owner table's lookup is a
		// chain of five dependent loads.
		q := e.lastQ
		if k := wc.ID &^ wrSlotMask; k != e.lastKey {
			if k == e.srqKey && wc.Status == verbs.WCSuccess {
				if n, ok := e.takeSRQLocked(r, wc, ev); ok {
					mu.Unlock()
					return n, true
				}
			}
			q, first = e.lastQueueLocked(wc.ID)
		}
		if wc.Status == verbs.WCSuccess && q != nil {
			s, seq := q.lookupLocked(uint32(wc.ID & wrSlotMask))
			if s != nil && s.flags&(dat.CompletionSuppress|slotBind) == 0 {
				n = min(r.Pop(wc), len(e.wcs)-1) // what a poll into wcs would have left
				q.retireFoundLocked(seq)
				ev.Number = dat.DTOCompletionEvent
				fillDTO(&ev.DTO, q.ep.handle, s, wc, dat.DTOSuccess)
				mu.Unlock()
				return n, true
			}
		}
	}
	ok = e.queued.Load() == 0 && e.takeCQOwnerLocked(ev, first)
	n = e.wcN - e.wcHead
	mu.Unlock()
	return n, ok
}

// takeCQ is takeCQLocked under cql, unless the ring holds events or the
// gate has a bit of block set (as takeSlow); it returns the raw
// completions left. The EVD has a CQ.
func (e *EVD) takeCQ(ev *dat.Event, block uint32) (n int, ok bool) {
	if mu := e.cqMu; mu != nil {
		mu.Lock()
		ok = e.gate.Load()&block == 0 && e.queued.Load() == 0 && e.takeCQLocked(ev)
		n = e.wcN - e.wcHead
		mu.Unlock()
		// Take's callers hold no lock (WaitSlow's, block 0, holds mu):
		// the provider's yield for a spinning poller goes here.
		if y := e.cqYield; y != nil && block != 0 {
			y.YieldDue()
		}
		return n, ok
	}
	e.cql.Lock()
	ok = e.gate.Load()&block == 0 && e.queued.Load() == 0 && e.takeCQLocked(ev)
	n = e.wcN - e.wcHead
	e.cql.Unlock()
	return n, ok
}

// nextLocked hands out the oldest event, from the ring or else straight
// from the CQ; false when there is none. The caller holds mu.
func (e *EVD) nextLocked(ev *dat.Event) bool {
	if e.n > 0 {
		e.popLocked(ev)
		return true
	}
	if e.cq == nil {
		return false
	}
	e.cql.Lock()
	ok := e.takeCQLocked(ev)
	e.cql.Unlock()
	return ok
}

// popLocked removes the oldest ring event into ev and frees its slot. The
// caller holds mu.
func (e *EVD) popLocked(ev *dat.Event) {
	ent := &e.ring[e.head]
	*ev = ent.ev
	e.releaseHoldLocked(&ent.hold)
	if !ent.quiet {
		e.loud--
	}
	*ent = ringEntry{}
	e.head = (e.head + 1) % len(e.ring)
	e.n--
	e.queued.Store(int32(e.n))
}

// releaseHoldLocked frees the slot a ring event held: a slot ring's head
// is guarded by cql. The caller holds mu.
func (e *EVD) releaseHoldLocked(h *hold) {
	if h.q != nil {
		e.cql.Lock()
		h.releaseLocked()
		e.cql.Unlock()
		return
	}
	h.releaseLocked()
}

// rawCount returns the raw completions (some may translate to nothing).
func (e *EVD) rawCount() int {
	if e.cq == nil {
		return 0
	}
	e.cql.Lock()
	defer e.cql.Unlock()
	return e.wcN - e.wcHead
}

// countLocked returns the events queued: ring, raw and the CQ's. The
// caller holds mu.
func (e *EVD) countLocked() int {
	n := e.n + e.rawCount()
	if e.cq != nil {
		n += e.cq.Len()
	}
	return n
}

// retiredHead returns the head of q, one of the slot rings completing to
// e, after draining the CQ (which retires successful suppressed DTOs): a
// poster that found q full asks here, holding its QP's send or receive
// lock (which comes before mu and cql).
func (e *EVD) retiredHead(q *slotRing) uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cql.Lock()
	defer e.cql.Unlock()
	e.drainCQLocked()
	return q.head
}

// dropRawCQLocked frees the slots of raw completions (the EVD is going).
// The caller holds cql.
func (e *EVD) dropRawCQLocked() {
	for e.wcHead < e.wcN {
		var ev dat.Event
		h, _, ok := e.translateLocked(&e.wcs[e.wcHead], &ev)
		e.wcHead++
		if ok {
			h.releaseLocked()
		}
	}
}

var errOverflow = errors.New("dat: event queue full")

// pushSoft queues a non-DTO event. software events that find the EVD full
// fail with DAT_QUEUE_FULL; DAT stream events are lost and reported to the
// IA's async EVD as an overflow.
func (e *EVD) pushSoft(ev *dat.Event, software bool) error {
	e.mu.Lock()
	if e.freed.Load() {
		e.mu.Unlock()
		return errOverflow
	}
	e.drainLocked()
	if e.countLocked() >= e.qlen || e.n == len(e.ring) {
		e.mu.Unlock()
		if !software && e != e.ia.async {
			e.ia.PostAsync(dat.Event{Number: dat.AsyncErrorEVDOverflow, Async: dat.AsyncErrorData{Handle: e.handle, Reason: dat.ReasonEVDOverflow}})
		}
		return errOverflow
	}
	ent := &e.ring[(e.head+e.n)%len(e.ring)]
	*ent = ringEntry{ev: *ev}
	e.n++
	e.loud++
	e.queued.Store(int32(e.n))
	e.interruptDirectLocked()
	e.mu.Unlock()
	e.signal(true)
	return nil
}

// Push queues a connection, CR or async event from the provider.
func (e *EVD) Push(ev dat.Event) bool { return e.pushSoft(&ev, false) == nil }

// Dequeue removes the oldest event into ev (evd_dequeue): a DTO or
// RMR-bind completion writes Number and the member it names (see
// translateLocked), any other event the whole Event. It never blocks and
// never allocates; an empty EVD returns dat.ErrQueueEmpty itself. On
// error ev is left alone.
func (e *EVD) Dequeue(ev *dat.Event) error {
	_, err := e.Take(nil, 1, ev, TakeDequeue)
	return err
}

// DequeueSlow is Dequeue after its hot path (Take) found nothing.
func (e *EVD) DequeueSlow(ev *dat.Event) error {
	const op = "evd_dequeue"
	if e == nil || e.freed.Load() {
		return InvalidHandle(op, dat.HandleTypeEVD)
	}
	if e.waiting() {
		return errDequeueWaiter
	}
	e.mu.Lock()
	if e.waiting() {
		e.mu.Unlock()
		return errDequeueWaiter
	}
	ok := e.nextLocked(ev)
	e.mu.Unlock()
	if !ok {
		return errDequeueEmpty
	}
	return nil
}

var (
	errDequeueEmpty  = &dat.Error{Op: "evd_dequeue", Code: dat.QueueEmpty}
	errDequeueWaiter = &dat.Error{Op: "evd_dequeue", Code: dat.InvalidState, Sub: dat.InvalidStateEVDWaiter}
)

// Wait blocks until at least threshold events are queued and removes the
// oldest into ev, as Dequeue does (evd_wait). It returns the number of
// events left. ctx bounds the wait: its deadline gives
// DAT_TIMEOUT_EXPIRED, its cancellation DAT_INTERRUPTED_CALL, both with
// nothing dequeued.
//
// A wait with threshold 1 that finds an event never becomes the EVD's
// waiter: it returns as a dequeue would. The count it returns leaves out
// the CQ's completions not polled yet: the caller cannot tell them from
// arrivals after the return, so they are not worth the CQ's lock.
func (e *EVD) Wait(ctx context.Context, threshold int, ev *dat.Event) (int, error) {
	return e.Take(ctx, threshold, ev, TakeWait)
}

// WaitSlow is Wait after its hot path (Take) found nothing, or for a
// threshold above 1.
func (e *EVD) WaitSlow(ctx context.Context, threshold int, ev *dat.Event) (int, error) {
	const op = "evd_wait"
	if e == nil || e.freed.Load() {
		return 0, InvalidHandle(op, dat.HandleTypeEVD)
	}
	e.mu.Lock()
	switch {
	case threshold <= 0 || threshold > e.qlen:
		e.mu.Unlock()
		return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	case threshold != 1 && e.nSolicit+e.nUnsig > 0:
		e.mu.Unlock()
		return 0, dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDConfigThreshold)
	case e.unwaitable():
		e.mu.Unlock()
		return 0, dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDUnwaitable)
	case e.waiting():
		e.mu.Unlock()
		return 0, dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDWaiter)
	}
	if threshold == 1 && e.n > 0 {
		// The oldest event, as a dequeue takes it. The CQ's, had there
		// been one, Take would have taken (takeSlow) just before it
		// came here: looking again, under the CQ's lock, would find
		// what arrived since, which CQ.Wait finds too, at once.
		e.popLocked(ev)
		nmore := e.n + e.rawCount()
		e.mu.Unlock()
		return nmore, nil
	}
	blocked := false
	// wctx is nil if it cannot end: the waits ask it nothing. Its Done
	// and deadline, which a context keeps for its life, are asked once
	// here rather than by every check and wait of the loop.
	wctx := ctx
	var w waitCtx
	if w.done = ctx.Done(); w.done == nil {
		wctx = nil
	} else {
		w.dl, w.hasDL = ctx.Deadline()
	}
	for {
		if threshold == 1 && e.n == 0 && e.nSolicit+e.nUnsig == 0 && e.cq != nil {
			// The ring empty, and every event loud (no UNSIGNALLED
			// queue) and enough to wake (no solicited wait): the CQ's
			// next completion ends the wait, taken as Take takes it,
			// rather than through the ring (one copy of the Event and
			// two CQ lock round trips). Before the first sleep there
			// is nothing to take: Take has just found the raw
			// completions and the CQ empty under the CQ's lock, and
			// what came since, CQ.Wait sees.
			if blocked {
				if nmore, ok := e.takeSlow(ev, 0); ok {
					e.setGate(gateWaiter, false)
					e.mu.Unlock()
					return nmore, nil
				}
			}
		} else {
			e.drainLocked()
			if e.n >= threshold && (!blocked || e.loud > 0) {
				e.popLocked(ev)
				e.setGate(gateWaiter, false)
				nmore := e.n + e.rawCount()
				e.mu.Unlock()
				return nmore, nil
			}
		}
		var err error
		switch {
		case e.freed.Load():
			err = dat.NewError(op, dat.Abort, dat.NoSubtype)
		case e.unwaitable():
			err = dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDUnwaitable)
		case e.cqErr != nil && e.n < threshold:
			err = dat.Wrap(op, dat.Abort, dat.NoSubtype, e.cqErr)
		}
		if err != nil {
			e.setGate(gateWaiter, false)
			e.mu.Unlock()
			return 0, err
		}
		if !blocked {
			// The waiter owns the EVD once it has looked at the queue
			// and goes to sleep, not before: evd_dequeue's EVD_WAITER
			// then says that what arrives from here on waits for what
			// wakes the waiter (a solicited completion, the threshold).
			// mu, held since the look, is released only by the sleep.
			e.setGate(gateWaiter, true)
		}
		if e.cq != nil {
			if wctx == nil {
				e.waitDirectLocked(nil, nil)
				blocked = true
				continue
			}
			if err := w.err(wctx); err != nil {
				return e.endWaitLocked(op, err)
			}
			// Only an interrupted wait asks ctx again: the end of ctx
			// interrupts it (watchWaiterCtxLocked), and so does its
			// deadline (directCtx.Deadline). A wait that ended on a
			// completion takes it, as one that ended just before ctx
			// did; should the take find nothing, the check above
			// comes first again.
			if e.waitDirectLocked(wctx, &w) {
				if err := w.err(wctx); err != nil {
					// As a wait on ctx.Done would: what came meanwhile
					// (an unsolicited completion, say) stays queued.
					return e.endWaitLocked(op, err)
				}
			}
			blocked = true
			continue
		}
		e.mu.Unlock()
		select {
		case <-e.wake:
		case <-ctx.Done():
			e.mu.Lock()
			return e.endWaitLocked(op, ctx.Err())
		}
		blocked = true
		e.mu.Lock()
	}
}

// waitCtx is what a waiter's context that can end gives once per wait:
// its Done channel and its deadline, if it has one.
type waitCtx struct {
	done  <-chan struct{}
	dl    time.Time
	hasDL bool
}

// err is ctx.Err, or context.DeadlineExceeded once the deadline of ctx
// (w's) has passed and its timer has not fired yet: the waiter's own
// CQ.Wait ends at the deadline (directCtx), and would otherwise be
// entered again.
func (w *waitCtx) err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if w.hasDL && !time.Now().Before(w.dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// endWaitLocked ends a wait whose context has ended with err: the
// waiter lets go of the EVD and returns DAT_TIMEOUT_EXPIRED for a
// deadline, DAT_INTERRUPTED_CALL for a cancellation, with the events
// queued. The caller holds mu, which is released.
func (e *EVD) endWaitLocked(op string, err error) (int, error) {
	e.setGate(gateWaiter, false)
	nmore := e.countLocked()
	e.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		return nmore, dat.Wrap(op, dat.TimeoutExpired, dat.NoSubtype, err)
	}
	return nmore, dat.Wrap(op, dat.InterruptedCall, dat.SubInterrupted, err)
}

// waitDirectLocked blocks the waiter in CQ.Wait until the CQ has
// something, a push, SetUnwaitable or destroy interrupts it, or ctx ends
// (see EVD.dctx); ctx is nil for a context that cannot end. It reports
// whether the wait was interrupted (dctx ended). The caller holds mu,
// which is released meanwhile.
func (e *EVD) waitDirectLocked(ctx context.Context, w *waitCtx) bool {
	if e.dctx == nil || e.dctx.over() {
		e.dctx = newDirectCtx()
	}
	dctx := e.dctx
	if ctx != nil {
		e.watchWaiterCtxLocked(ctx, w.done)
		dctx.setDeadline(w.dl, w.hasDL)
	} else {
		dctx.clearDeadline()
	}
	e.wwatch = ctx != nil
	solicited := e.nSolicit > 0
	e.inDirect = true
	e.mu.Unlock()
	err := e.cq.Wait(dctx, solicited)
	e.mu.Lock()
	e.inDirect = false
	over := dctx.over()
	if err != nil && !over {
		e.cqErr = err
	}
	return over
}

// Purge drops queued events of ep (ep_free destroys its event streams).
func (e *EVD) Purge(ep *EP) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainLocked()
	h := ep.handle
	k := 0
	for i := 0; i < e.n; i++ {
		ent := e.ring[(e.head+i)%len(e.ring)]
		if h != nil && (ent.ev.DTO.EP == h || ent.ev.Conn.EP == h) {
			e.releaseHoldLocked(&ent.hold)
			if !ent.quiet {
				e.loud--
			}
			continue
		}
		e.ring[(e.head+k)%len(e.ring)] = ent
		k++
	}
	for i := k; i < e.n; i++ {
		e.ring[(e.head+i)%len(e.ring)] = ringEntry{}
	}
	e.n = k
	e.queued.Store(int32(e.n))
}

// countHeld drains the CQ and counts the queued events holding a slot of
// t (an SRQ's table) or q (an EP queue).
func (e *EVD) countHeld(t *cookieTable, q *slotRing) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.countHeldLocked(t, q)
}

func (e *EVD) countHeldLocked(t *cookieTable, q *slotRing) int {
	e.drainLocked()
	n := 0
	for i := 0; i < e.n; i++ {
		h := &e.ring[(e.head+i)%len(e.ring)].hold
		if (t != nil && h.tbl == t) || (q != nil && h.q == q) {
			n++
		}
	}
	return n
}
