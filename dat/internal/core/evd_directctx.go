package core

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/internal/fastpath"
)

// directCtx is the context a waiter blocks in CQ.Wait itself with (see
// EVD.dctx). It ends when cancel is called or, if the waiter's own
// context has a deadline, once that has passed.
//
// It is not context.WithCancel's because the provider asks it on every
// wait: siw's inline receive calls Err between the frames it reads and
// Deadline before each readability wait. A cancelCtx answers Err through
// an atomic.Value and Deadline by asking its parents in turn; here Err is
// a load and Deadline a load and, only when there is a deadline, the
// clock: cheap enough to ask between every two frames.
//
// The deadline is the waiter's: siw puts it on the socket its inline
// receive reads, so that the wait ends on time without a timer. Deadline
// ends the context once it has passed, so that the provider's wait
// returns rather than reading again until the waiter's context's own
// timer has fired and the EVD has cancelled this one.
type directCtx struct {
	done chan struct{}
	err  atomic.Pointer[error]  // set once, just before done closes
	dl   atomic.Int64           // the deadline in Unix ns; 0 for none
	hook atomic.Pointer[func()] // the provider's wake-up (fastpath.EndHooker)
}

var _ fastpath.EndHooker = (*directCtx)(nil)

func newDirectCtx() *directCtx { return &directCtx{done: make(chan struct{})} }

var (
	errDirectCanceled = context.Canceled
	errDirectDeadline = context.DeadlineExceeded
)

// end ends the context with err, unless it has ended.
func (c *directCtx) end(err *error) {
	if c.err.CompareAndSwap(nil, err) {
		close(c.done)
		if h := c.hook.Load(); h != nil {
			(*h)()
		}
	}
}

// SetEndHook makes the context a fastpath.EndHooker: a provider whose
// wait sleeps in the network poller (rdmacore's CQ) is woken by end
// itself, with no goroutine between the canceller and the waiter.
func (c *directCtx) SetEndHook(f *func()) { c.hook.Store(f) }

// over reports whether the context has ended.
func (c *directCtx) over() bool { return c.err.Load() != nil }

// cancel ends the context.
func (c *directCtx) cancel() { c.end(&errDirectCanceled) }

// setDeadline makes the context end at dl if ok (the deadline of the
// waiter's context). Only the waiter calls it and clearDeadline, before
// it waits.
func (c *directCtx) setDeadline(dl time.Time, ok bool) {
	var ns int64
	if ok {
		ns = max(dl.UnixNano(), 1)
	}
	c.dl.Store(ns)
}

// clearDeadline takes the deadline away, if the last wait set one.
func (c *directCtx) clearDeadline() {
	if c.dl.Load() != 0 {
		c.dl.Store(0)
	}
}

func (c *directCtx) Deadline() (time.Time, bool) {
	ns := c.dl.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	if time.Now().UnixNano() >= ns {
		c.end(&errDirectDeadline)
	}
	return time.Unix(0, ns), true
}

func (c *directCtx) Done() <-chan struct{} { return c.done }
func (c *directCtx) Value(any) any         { return nil }

func (c *directCtx) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}
