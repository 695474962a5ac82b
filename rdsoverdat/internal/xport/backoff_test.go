package xport

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The reconnect backoff on a fake clock: each wait lasts (0, bound], the
// bound doubling from the minimum to the maximum, back to the minimum
// after reset, and a cancelled context ends a wait at once.
func TestReconnectBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lo, hi = time.Millisecond, time.Second
		var b Backoff
		ctx := t.Context()
		bound := lo
		for i := range 14 {
			start := time.Now()
			if !b.Wait(ctx, lo, hi) {
				t.Fatalf("wait %d: context ended", i)
			}
			if d := time.Since(start); d <= 0 || d > bound {
				t.Fatalf("wait %d lasted %v, want (0, %v]", i, d, bound)
			}
			bound = min(2*bound, hi)
		}
		if b.bound != hi {
			t.Fatalf("bound %v after 14 waits, want the maximum %v", b.bound, hi)
		}
		b.Reset()
		start := time.Now()
		b.Wait(ctx, lo, hi)
		if d := time.Since(start); d > lo {
			t.Fatalf("first wait after reset lasted %v, want at most %v", d, lo)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		start = time.Now()
		if b.Wait(cctx, lo, hi) {
			t.Fatal("wait on a cancelled context reported the timer")
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("wait on a cancelled context lasted %v", d)
		}
	})
}
