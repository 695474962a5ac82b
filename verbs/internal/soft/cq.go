package soft

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// CQ implements verbs.CQ as a ring of completions guarded by a mutex.
// The ring's array is the depth rounded up to a power of two, so a slot is
// found with a mask instead of a division; depth alone bounds how many
// completions it holds, so the CQ overflows exactly where it says.
//
// Waiters sleep on a one-slot channel: every push that could satisfy a
// sleeping waiter drops a token into it, and a waiter that wakes and finds
// work left passes the token on, so any number of waiters are served
// without allocating per wait. Pushes that no waiter sleeps for skip the
// channel, whose send takes its lock: sleepers counts the waiters between
// their last look and their wake-up (see Wait for why none is missed).
type CQ struct {
	dev      *Device
	wake     chan struct{} // capacity 1
	sleepers atomic.Int32

	mu       sync.Mutex
	ring     fastpath.CQRing  // guarded by mu
	depth    int              // the most completions queued; <= ring.Cap(); guarded by mu
	overflow bool             // guarded by mu
	closed   bool             // guarded by mu
	qps      map[*QP]struct{} // the QPs using the CQ; guarded by mu
	users    atomic.Int64

	single       atomic.Pointer[QP]        // the only QP using the CQ, if one is
	inlineWaiter atomic.Pointer[inlineRef] // the receiver a waiter is running
	// What the running receiver's last Satisfied found: the waiter's
	// that holds inlineWaiter, whose swaps order its users. With
	// inlineKnown, a push of the waiter's own (pushInline) found the CQ
	// satisfied, and the next Satisfied returns that without a look.
	inlineSat       bool
	inlineErr       error
	inlineKnown     bool
	inlineSolicited bool // the waiter's solicitedOnly
}

func newCQ(d *Device, depth int) *CQ {
	return &CQ{dev: d, ring: fastpath.NewCQRing(depth), depth: depth, wake: make(chan struct{}, 1)}
}

// ringSize is the power of two a ring of depth entries is backed by.
func ringSize(depth int) int { return 1 << bits.Len(uint(depth-1)) }

// Push adds a completion. A full CQ overflows: the completion is lost, the
// CQ reports ErrCQOverflow from Wait, and EventCQErr is raised once.
func (cq *CQ) Push(wc *verbs.WC) {
	if cq.pushQuiet(wc) {
		cq.signal()
	}
}

// pushQuiet is Push without the waiters' wake-up, which the caller owes
// (signal) when it reports true. A QP completing sends pushes under its
// own lock and signals after releasing it: the wake-up readies a waiter
// and may wake a thread, a system call the lock should not be held
// across, since that waiter's next post takes the same lock.
func (cq *CQ) pushQuiet(wc *verbs.WC) bool {
	cq.mu.Lock()
	if cq.closed {
		cq.mu.Unlock()
		return false
	}
	if cq.ring.Len() == cq.depth {
		first := !cq.overflow
		cq.overflow = true
		cq.mu.Unlock()
		cq.dev.Counters.CQOverflows.Add(1)
		if first {
			cq.dev.Event(verbs.AsyncEvent{Type: verbs.EventCQErr, CQ: cq, Err: verbs.ErrCQOverflow})
		}
		return true
	}
	cq.ring.Push(wc)
	cq.mu.Unlock()
	return true
}

// pushInline is Push by the goroutine running the receiver of cq's
// waiter (QP.CompleteRecvInline): it keeps what ready finds right after
// the push, in the same hold of the lock, for the waiter's next
// Satisfied, which then need not take the lock again to learn it. A
// closed or full CQ takes Push's way.
func (cq *CQ) pushInline(wc *verbs.WC) {
	cq.mu.Lock()
	if cq.closed || cq.ring.Len() == cq.depth {
		cq.mu.Unlock()
		cq.Push(wc)
		return
	}
	cq.ring.Push(wc)
	sat, err := cq.readyLocked(cq.inlineSolicited)
	cq.mu.Unlock()
	if sat {
		cq.inlineSat, cq.inlineErr, cq.inlineKnown = true, err, true
	}
	cq.signal()
}

// signal wakes a waiter that sleeps, if one does, and interrupts the one
// running the inline receiver. The caller has changed what ready reports
// under mu before the call.
func (cq *CQ) signal() {
	if cq.sleepers.Load() > 0 {
		cq.token()
	}
	cq.interruptInline()
}

// token leaves a wake-up in the channel for the next waiter to sleep.
func (cq *CQ) token() {
	select {
	case cq.wake <- struct{}{}:
	default:
	}
}

// Poll implements verbs.CQ.
func (cq *CQ) Poll(wcs []verbs.WC) int {
	cq.mu.Lock()
	k := cq.pollLocked(wcs)
	cq.mu.Unlock()
	return k
}

func (cq *CQ) pollLocked(wcs []verbs.WC) int { return cq.ring.Poll(wcs) }

// Len implements verbs.CQ.
func (cq *CQ) Len() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.ring.Len()
}

// Depth implements verbs.CQ.
func (cq *CQ) Depth() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.depth
}

// ready reports whether a waiter may return, and with which error.
func (cq *CQ) ready(solicitedOnly bool) (bool, error) {
	cq.mu.Lock()
	ok, err := cq.readyLocked(solicitedOnly)
	cq.mu.Unlock()
	return ok, err
}

// readyLocked is ready under mu.
func (cq *CQ) readyLocked(solicitedOnly bool) (bool, error) {
	switch {
	case cq.closed:
		return true, verbs.ErrClosed
	case cq.overflow:
		return true, verbs.ErrCQOverflow
	case solicitedOnly:
		return cq.ring.Solicited() > 0, nil
	}
	return cq.ring.Len() > 0, nil
}

// Wait implements verbs.CQ. The first look at the CQ is the inline
// receiver's when one runs (its wait looks once it can be interrupted,
// which a look before it would only repeat), and made before sleeping
// otherwise.
//
// A waiter counts itself in sleepers before its last look and sleeps
// only if that look found nothing; a push changes the CQ under mu and
// reads sleepers after. Either the look takes mu after the push, and sees
// it, or the count was raised before the push's unlock, and the push's
// read sees it and leaves a token (atomics and mu order both), so no
// wake-up is lost.
func (cq *CQ) Wait(ctx context.Context, solicitedOnly bool) error {
	for first := true; ; first = false {
		if !first {
			if ok, err := cq.ready(solicitedOnly); ok {
				// Pass the token on: another waiter may be satisfied too.
				cq.signal()
				return err
			}
		}
		if cq.transmitInline(ctx) {
			continue
		}
		if ran, sat, err := cq.waitInline(ctx, solicitedOnly); ran {
			if first && !sat && ctx.Err() != nil {
				// Ended before the receiver looked: the look this
				// Wait skipped decides, as it did before any wait.
				sat, err = cq.ready(solicitedOnly)
			}
			if cerr := ctx.Err(); cerr != nil && !(first && sat) {
				return cerr
			}
			if sat {
				cq.signal() // as above
				return err
			}
			continue
		}
		if first {
			continue // look, and try the receiver again, before sleeping
		}
		cq.sleepers.Add(1)
		if ok, err := cq.ready(solicitedOnly); ok {
			cq.sleepers.Add(-1)
			cq.signal() // as above
			return err
		}
		if lastLookHook != nil {
			lastLookHook(cq)
		}
		select {
		case <-cq.wake:
			cq.sleepers.Add(-1)
		case <-ctx.Done():
			cq.sleepers.Add(-1)
			return ctx.Err()
		}
	}
}

// lastLookHook, set by tests only, runs in Wait between a waiter's last
// look and its sleep: the window in which a push must still wake it.
var lastLookHook func(*CQ)

// Resize implements verbs.CQ.
func (cq *CQ) Resize(depth int) error {
	if depth <= 0 || depth > cq.dev.attr.MaxCQE {
		return verbs.ErrInvalidArgument
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return verbs.ErrClosed
	}
	if depth < cq.ring.Len() {
		return verbs.ErrInvalidArgument
	}
	cq.ring.Resize(depth)
	cq.depth = depth
	return nil
}

// Destroy implements verbs.CQ.
func (cq *CQ) Destroy() error {
	if cq.users.Load() != 0 {
		return verbs.ErrInUse
	}
	cq.mu.Lock()
	if cq.closed {
		cq.mu.Unlock()
		return verbs.ErrClosed
	}
	cq.mu.Unlock()
	cq.close()
	cq.dev.mu.Lock()
	delete(cq.dev.cqs, cq)
	cq.dev.mu.Unlock()
	return nil
}

func (cq *CQ) close() {
	cq.mu.Lock()
	cq.closed = true
	cq.mu.Unlock()
	cq.signal()
}
