package xport

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff spaces a path's connection attempts, as the kernel's
// rds_queue_reconnect does for every transport: each retry waits a
// random delay of up to a bound that doubles, from the reconnect minimum
// up to the maximum, and starts over once a connection came up. Random,
// so that two nodes that lost each other at once do not retry in step.
// The zero value has not waited yet.
type Backoff struct {
	bound time.Duration
}

// Next doubles the bound within [lo, hi] and returns a delay in
// (0, bound].
func (b *Backoff) Next(lo, hi time.Duration) time.Duration {
	b.bound = min(max(2*b.bound, lo), hi)
	return rand.N(b.bound) + 1
}

// Reset makes the next retry wait at most lo again.
func (b *Backoff) Reset() { b.bound = 0 }

// Wait sleeps Next's delay; false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context, lo, hi time.Duration) bool {
	t := time.NewTimer(b.Next(lo, hi))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
