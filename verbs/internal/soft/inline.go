package soft

import "context"

// Inline receive: a goroutine waiting on a CQ runs the receive side of
// the CQ's stream itself.
//
// A provider that reads its stream with a goroutine of its own completes
// an inbound message in two goroutine wakeups: the network wakes the
// receive goroutine, which places the message, pushes the completion and
// wakes the waiter. A raw TCP reader pays one. When a CQ serves exactly
// one QP and that QP's link is an InlineReceiver, CQ.Wait therefore asks
// the link to let the waiting goroutine read, place and complete the
// stream's messages itself until the CQ has what the waiter wants: one
// wakeup per message, as with TCP. The link decides whether it can hand
// its receive side over; when it cannot, the waiter sleeps as usual.

// InlineReceiver is implemented by a Link whose receive side a CQ waiter
// may run.
type InlineReceiver interface {
	// ReceiveInline runs the stream's receive side on the calling
	// goroutine until cq.Satisfied(solicitedOnly), ctx is done, the
	// stream ends, or Interrupt is called. It returns false at once,
	// having done nothing, when the receive side is busy elsewhere; the
	// caller then sleeps on the CQ as usual.
	ReceiveInline(ctx context.Context, cq *CQ, solicitedOnly bool) bool
	// Interrupt makes a ReceiveInline that is waiting for the network
	// return soon. It may be called from any goroutine, at any time.
	Interrupt()
}

// InlineTransmitter is implemented by a Link whose transmit work a CQ
// waiter may do: a provider that leaves work a poster handed it for the
// next waiter, rather than wake a goroutine of its own, sends it here.
type InlineTransmitter interface {
	// TransmitInline sends, on the calling goroutine, the work the link
	// left for a waiter, and reports whether it did: completions may
	// then have been pushed. It returns false at once when there is none
	// or another goroutine is sending.
	TransmitInline(ctx context.Context) bool
}

// inlineRef boxes the link's inline roles for an atomic.Pointer; either
// may be nil.
type inlineRef struct {
	r InlineReceiver
	t InlineTransmitter
}

// attach records that qp uses cq (as send CQ, receive CQ or both).
func (cq *CQ) attach(qp *QP) {
	cq.mu.Lock()
	if cq.qps == nil {
		cq.qps = make(map[*QP]struct{}, 1)
	}
	cq.qps[qp] = struct{}{}
	cq.updateSingleLocked()
	cq.mu.Unlock()
}

// detach undoes attach.
func (cq *CQ) detach(qp *QP) {
	cq.mu.Lock()
	delete(cq.qps, qp)
	cq.updateSingleLocked()
	cq.mu.Unlock()
}

func (cq *CQ) updateSingleLocked() {
	var single *QP
	if len(cq.qps) == 1 {
		for qp := range cq.qps {
			single = qp
		}
	}
	cq.single.Store(single)
}

// Satisfied reports whether a waiter on cq may return: the CQ holds a
// completion (a solicited one, with solicitedOnly), has overflowed, or
// has been destroyed. Only the inline receiver calls it, on the waiting
// goroutine, and the answer is kept for that waiter (inlineSat): a
// receiver that stopped because the CQ was satisfied need not have Wait
// take the CQ's lock again to learn it.
func (cq *CQ) Satisfied(solicitedOnly bool) bool {
	if cq.inlineKnown {
		// The waiter's own push found it so (pushInline); a poll
		// elsewhere since then is as a poll just after a look.
		cq.inlineKnown = false
		return true
	}
	ok, err := cq.ready(solicitedOnly)
	cq.inlineSat, cq.inlineErr = ok, err
	return ok
}

// waitInline lets the inline receiver of the CQ's only QP run on the
// waiting goroutine, if there is one and no other waiter runs it; ran
// reports whether it ran, and sat and err what the receiver's last look
// at the CQ (Satisfied) found, as a look of Wait's own would have: a
// poll elsewhere may take what either saw before the waiter does. While
// the receiver runs, completions pushed by other goroutines interrupt
// it.
func (cq *CQ) waitInline(ctx context.Context, solicitedOnly bool) (ran, sat bool, err error) {
	qp := cq.single.Load()
	if qp == nil {
		return false, false, nil
	}
	ref := qp.inline.Load()
	if ref == nil || ref.r == nil || !cq.inlineWaiter.CompareAndSwap(nil, ref) {
		return false, false, nil
	}
	cq.inlineSat, cq.inlineErr, cq.inlineKnown, cq.inlineSolicited = false, nil, false, solicitedOnly
	ran = ref.r.ReceiveInline(ctx, cq, solicitedOnly)
	sat, err = cq.inlineSat, cq.inlineErr
	cq.inlineKnown = false
	cq.inlineWaiter.Store(nil)
	return ran, sat, err
}

// transmitInline lets the CQ's only QP send, on the waiting goroutine,
// what its link left for a waiter; it reports whether it sent anything.
func (cq *CQ) transmitInline(ctx context.Context) bool {
	qp := cq.single.Load()
	if qp == nil {
		return false
	}
	ref := qp.inline.Load()
	return ref != nil && ref.t != nil && ref.t.TransmitInline(ctx)
}

// Wake makes a goroutine sleeping in Wait look again: an InlineReceiver
// calls it when its receive side has become free for the waiter it turned
// away. Unlike a push's, its token goes whether or not a waiter is
// counted: the waiter's looks before it counts itself include the inline
// receiver's, which the count does not cover, and a token left waits for
// the next sleep.
func (cq *CQ) Wake() {
	cq.token()
	cq.interruptInline()
}

// interruptInline stops a waiter running an inline receiver, so that it
// sees what was just pushed.
func (cq *CQ) interruptInline() {
	if ref := cq.inlineWaiter.Load(); ref != nil {
		ref.r.Interrupt()
	}
}

// setInlineLocked records the QP's link as its inline receiver and
// transmitter, if it is either (nil clears them). The caller holds qp.mu.
func (qp *QP) setInlineLocked(link Link) {
	r, _ := link.(InlineReceiver)
	t, _ := link.(InlineTransmitter)
	if r == nil && t == nil {
		qp.inline.Store(nil)
		return
	}
	qp.inline.Store(&inlineRef{r, t})
}
