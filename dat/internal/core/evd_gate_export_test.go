package core

import (
	"context"
	"sync/atomic"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// GateCQWait makes every CQ.Wait on e's CQ (the waiter's own, or the CQ
// watch's) report on entered and hold until release is called, before it
// looks at the CQ: the test of a drain by a third party needs the CQ
// emptied between a waiter going to sleep and the CQ looking.
func GateCQWait(e *EVD) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 8)
	gate := make(chan struct{})
	e.mu.Lock()
	e.cq = &gatedCQ{CQ: e.cq, entered: in, gate: gate}
	e.mu.Unlock()
	return in, func() { close(gate) }
}

type gatedCQ struct {
	verbs.CQ
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g *gatedCQ) Wait(ctx context.Context, solicitedOnly bool) error {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.CQ.Wait(ctx, solicitedOnly)
}

// HoldsQueueOf reports whether e keeps a queue of ep as the queue of its
// last completion (EVD.lastQ).
func HoldsQueueOf(e *EVD, ep *EP) bool {
	e.cql.Lock()
	defer e.cql.Unlock()
	return e.lastQ != &noRing && e.lastQ.ep == ep
}

// HoldCQWaitReturn makes every CQ.Wait on e's CQ report on entered and,
// once the CQ's own wait has returned, hold its return until release is
// called: the waiter stays between the end of its wait and its taking of
// the EVD's lock, where others that took the lock before it find it
// still marked as in CQ.Wait.
func HoldCQWaitReturn(e *EVD) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 8)
	gate := make(chan struct{})
	e.mu.Lock()
	e.cq = &heldCQ{CQ: e.cq, entered: in, gate: gate}
	e.mu.Unlock()
	return in, func() { close(gate) }
}

type heldCQ struct {
	verbs.CQ
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (h *heldCQ) Wait(ctx context.Context, solicitedOnly bool) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	err := h.CQ.Wait(ctx, solicitedOnly)
	<-h.gate
	return err
}

// GateCQLock makes every lock of e's CQ through its locker (a drain's,
// not the hot path's, which takes the lent mutex itself) report on entered
// and hold until release is called, before it locks.
func GateCQLock(e *EVD) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 8)
	gate := make(chan struct{})
	e.mu.Lock()
	e.cql = gatedCQL{CQLocker: e.cql, entered: in, gate: gate}
	e.mu.Unlock()
	return in, func() { close(gate) }
}

type gatedCQL struct {
	fastpath.CQLocker
	entered chan<- struct{}
	gate    <-chan struct{}
}

func (g gatedCQL) Lock() {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	<-g.gate
	g.CQLocker.Lock()
}

// Waiting reports whether a waiter owns e: evd_dequeue then fails with
// DAT_INVALID_STATE / EVD_WAITER.
func Waiting(e *EVD) bool { return e.waiting() }

// LendNothing makes e take from its CQ as it does for a provider that
// lends neither its ring nor its mutex (fastpath.CQRinger, fastpath.CQMutexer):
// through cql alone, whose Lock a test can then gate.
func LendNothing(e *EVD) {
	e.mu.Lock()
	e.cqRing, e.cqMu = nil, nil
	e.mu.Unlock()
}

// GateFirstCQLock is GateCQLock for the first lock of e's CQ from now on
// alone: the locks after it pass.
func GateFirstCQLock(e *EVD) (entered <-chan struct{}, release func()) {
	in := make(chan struct{}, 1)
	gate := make(chan struct{})
	first := new(atomic.Bool)
	e.mu.Lock()
	e.cql = firstGatedCQL{gatedCQL{CQLocker: e.cql, entered: in, gate: gate}, first}
	e.mu.Unlock()
	return in, func() { close(gate) }
}

type firstGatedCQL struct {
	gatedCQL
	taken *atomic.Bool
}

func (g firstGatedCQL) Lock() {
	if g.taken.CompareAndSwap(false, true) {
		g.gatedCQL.Lock()
		return
	}
	g.CQLocker.Lock()
}
