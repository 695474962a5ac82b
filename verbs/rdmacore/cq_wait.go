//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// Waiting on a CQ. Every CQ has a completion channel of its own, whose
// descriptor sits in Go's network poller: a waiter that finds the CQ
// empty arms it and parks on that descriptor itself, so that the
// goroutine the kernel's completion event readies is the one that polls.
// With one channel per device a goroutine of the device has to read the
// event and wake the CQ's waiter, two hand-offs per wake-up where this is
// one.
//
// One waiter at a time, the owner, parks on the descriptor; the others
// wait on a channel the owner closes when it leaves, and one of them takes
// over. Whatever else must wake the owner (a flushed completion pushed, an
// overflow, destroy, the device closing, the end of the owner's context)
// kicks it: it sets the descriptor's read deadline in the past, and the
// owner wakes and looks again. A context that is a fastpath.EndHooker
// (DAT's waiter's) kicks from the goroutine that ends it; any other that
// can end, through context.AfterFunc.
type cqWait struct {
	ch *C.struct_ibv_comp_channel
	fd *pollFD // ch's descriptor, in the network poller

	// Guarded by the CQ's mu.
	owned     bool          // a waiter is parked on fd, or about to be
	followers int           // waiters on wake
	events    uint64        // completion events taken, and flushes pushed
	wake      chan struct{} // closed and replaced for the followers
	wdone     <-chan struct{}
	wstop     func() bool // the context.AfterFunc registration for wdone

	kicks atomic.Uint32 // counts kicks, each before it sets the deadline

	// The owner's, made once so that a wait allocates nothing.
	got  C.int              // what the last take returned
	take func(uintptr) bool // takes and acknowledges an event
	intr func()             // kick
}

// kickDeadline is a read deadline that has passed.
var kickDeadline = time.Unix(1, 0)

func (w *cqWait) init(ch *C.struct_ibv_comp_channel, fd *pollFD) {
	w.ch, w.fd = ch, fd
	w.wake = make(chan struct{})
	w.take = func(uintptr) bool {
		w.got = C.gd_take_cq_event(w.ch)
		return w.got != 0
	}
	w.intr = w.kick
}

// kick wakes the owner, if one is parked; a kick that comes when none is
// costs the next owner nothing but a look.
func (w *cqWait) kick() {
	w.kicks.Add(1)
	w.fd.f.SetReadDeadline(kickDeadline)
}

// kickLocked wakes every waiter of q; event says that what woke them
// counts as a completion event (a solicited-only wait then returns). q.mu
// is held.
func (q *cq) kickLocked(event bool) {
	if event {
		q.w.events++
	}
	if q.w.followers > 0 {
		close(q.w.wake)
		q.w.wake = make(chan struct{})
	}
	if q.w.owned {
		q.w.kick()
	}
}

// Wait arms the CQ, looks at what it holds and sleeps until the next
// completion event. With the BusyPoll option it first busy-polls an
// empty CQ once, as Poll does: a completion that arrives meanwhile costs
// no arming, event and wake-up.
func (q *cq) Wait(ctx context.Context, solicitedOnly bool) error {
	if q.d.busyPoll > 0 && !solicitedOnly {
		q.mu.Lock()
		if !q.dead && !q.overflow && q.ring.Len() == 0 {
			q.fillSpin(q.d.busyPoll)
		}
		ready := !q.dead && !q.overflow && q.ring.Len() > 0
		q.mu.Unlock()
		if ready {
			return nil
		}
	}
	return q.wait(ctx, solicitedOnly, nil)
}

// wait blocks until the CQ is ready: for Wait (p nil) until the ring
// holds a completion (a solicited one, or a completion event, for
// solicitedOnly); for p, a QP being destroyed, until its requests that
// complete here have.
func (q *cq) wait(ctx context.Context, solicitedOnly bool, p *qp) error {
	sol := C.int(0)
	if solicitedOnly {
		sol = 1
	}
	for {
		q.mu.Lock()
		if err := q.waitErrLocked(); err != nil {
			q.mu.Unlock()
			return err
		}
		if rc := C.gd_req_notify(cAddr(q.x), sol); rc != 0 {
			q.mu.Unlock()
			return errnoErr("ibv_req_notify_cq", syscall.Errno(rc))
		}
		q.fill()
		if q.readyLocked(solicitedOnly, p) {
			q.mu.Unlock()
			return nil
		}
		if err := ctx.Err(); err != nil {
			q.mu.Unlock()
			return err
		}
		var got bool
		var err error
		if q.w.owned {
			got, err = q.follow(ctx)
		} else {
			got, err = q.own(ctx)
		}
		if err != nil {
			return err
		}
		if got && solicitedOnly && p == nil {
			// A solicited-only arm fires only for a solicited
			// completion (or an error), which the WC does not mark:
			// the event is the answer.
			q.mu.Lock()
			err := q.waitErrLocked()
			q.mu.Unlock()
			return err
		}
	}
}

// waitErrLocked is what ends every wait: the CQ destroyed or overflowed,
// the device closing. q.mu is held.
func (q *cq) waitErrLocked() error {
	switch {
	case q.dead || q.d.isClosed():
		return verbs.ErrClosed
	case q.overflow:
		return fmt.Errorf("rdmacore: %w", verbs.ErrCQOverflow)
	}
	return nil
}

func (q *cq) readyLocked(solicitedOnly bool, p *qp) bool {
	switch {
	case p != nil:
		return p.flushedOn(q)
	case solicitedOnly:
		return q.ring.Solicited() > 0
	}
	return q.ring.Len() > 0
}

// follow waits for the owner to leave, or for a kick; q.mu is held and
// released. It reports whether a completion event came meanwhile.
func (q *cq) follow(ctx context.Context) (bool, error) {
	w, gen := q.w.wake, q.w.events
	q.w.followers++
	q.mu.Unlock()
	var err error
	select {
	case <-w:
	case <-ctx.Done():
		err = ctx.Err()
	case <-q.d.closing:
	}
	q.mu.Lock()
	q.w.followers--
	got := q.w.events != gen
	q.mu.Unlock()
	return got, err
}

// own parks the waiter on the channel's descriptor until an event comes
// or a kick; q.mu is held and released. It reports whether an event came.
func (q *cq) own(ctx context.Context) (bool, error) {
	q.w.owned = true
	kicks := q.w.kicks.Load()
	hook, hooked := ctx.(fastpath.EndHooker)
	if !hooked && ctx.Done() != nil {
		q.w.watchLocked(ctx)
	}
	q.mu.Unlock()
	if hooked {
		hook.SetEndHook(&q.w.intr)
	}
	got, err := q.w.park(ctx, kicks)
	if hooked {
		hook.SetEndHook(nil)
	}
	q.mu.Lock()
	q.w.owned = false
	if got {
		q.w.events++
	}
	if q.w.followers > 0 {
		close(q.w.wake)
		q.w.wake = make(chan struct{})
	}
	q.mu.Unlock()
	return got, err
}

// park sleeps in the network poller until the channel has an event, the
// deadline of ctx passes or a kick comes (one since kicks, too). It
// reports whether it took an event; a kick returns neither that nor an
// error, and the caller looks again.
func (w *cqWait) park(ctx context.Context, kicks uint32) (bool, error) {
	dl, hasDL := ctx.Deadline()
	w.fd.f.SetReadDeadline(dl) // the zero time clears an earlier one or a kick
	// A kick from here on sets the deadline after the line above: the
	// read below sees it. One before, the count shows.
	if w.kicks.Load() != kicks {
		return false, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if hasDL && !time.Now().Before(dl) {
		return false, deadlineErr(ctx)
	}
	err := w.fd.read(w.take)
	switch {
	case err == nil && w.got > 0:
		return true, nil
	case err == nil:
		return false, errnoErr("ibv_get_cq_event", syscall.Errno(-w.got))
	case errors.Is(err, os.ErrDeadlineExceeded):
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if hasDL && !time.Now().Before(dl) {
			return false, deadlineErr(ctx)
		}
		return false, nil // a kick
	}
	return false, verbs.ErrClosed // destroy closed the descriptor
}

// deadlineErr is the error of a wait on ctx whose deadline has passed:
// ctx's own once it has ended, and a context may end only when asked for
// its deadline (DAT's waiter's does), else context.DeadlineExceeded
// while its timer has yet to fire.
func deadlineErr(ctx context.Context) error {
	ctx.Deadline()
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// watchLocked makes the end of ctx kick the owner. The registration is
// kept for the next wait with the same context, as registering
// allocates; one whose context ends later kicks an owner that waits with
// another, which then looks and sleeps again. q.mu is held.
func (w *cqWait) watchLocked(ctx context.Context) {
	done := ctx.Done()
	if done == w.wdone {
		return
	}
	w.unwatchLocked()
	w.wdone, w.wstop = done, context.AfterFunc(ctx, w.intr)
}

// unwatchLocked ends the registration, if any; q.mu is held.
func (w *cqWait) unwatchLocked() {
	if w.wstop != nil {
		w.wstop()
		w.wdone, w.wstop = nil, nil
	}
}

func (q *cq) overflowed() {
	q.mu.Lock()
	q.overflow = true
	q.kickLocked(false)
	q.mu.Unlock()
}
