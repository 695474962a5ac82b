package core

import (
	"context"
	"sync/atomic"
	"time"
)

// directCtx is the context a waiter blocks in CQ.Wait itself with (see
// EVD.dctx): it has no deadline and ends only when cancel is called.
//
// It is not context.WithCancel's because the provider asks it on every
// wait: siw's inline receive calls Err between the frames it reads and
// Deadline before each readability wait. A cancelCtx answers Err through
// an atomic.Value and Deadline by asking its parents in turn; here each
// is a load or a constant. On a siw Send iteration that was 66
// instructions (callgrind) where context.Background's cost 8.
type directCtx struct {
	done     chan struct{}
	canceled atomic.Bool
}

func newDirectCtx() *directCtx { return &directCtx{done: make(chan struct{})} }

// cancel ends the context; it must be called once.
func (c *directCtx) cancel() {
	c.canceled.Store(true) // before done closes: Err is non-nil once Done is
	close(c.done)
}

func (c *directCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *directCtx) Done() <-chan struct{}       { return c.done }
func (c *directCtx) Value(any) any               { return nil }

func (c *directCtx) Err() error {
	if c.canceled.Load() {
		return context.Canceled
	}
	return nil
}
