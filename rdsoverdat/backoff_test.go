package rdsoverdat

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
		var b reconnectBackoff
		ctx := t.Context()
		bound := lo
		for i := range 14 {
			start := time.Now()
			if !b.wait(ctx, lo, hi) {
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
		b.reset()
		start := time.Now()
		b.wait(ctx, lo, hi)
		if d := time.Since(start); d > lo {
			t.Fatalf("first wait after reset lasted %v, want at most %v", d, lo)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		start = time.Now()
		if b.wait(cctx, lo, hi) {
			t.Fatal("wait on a cancelled context reported the timer")
		}
		if d := time.Since(start); d != 0 {
			t.Fatalf("wait on a cancelled context lasted %v", d)
		}
	})
}

// The tcp writer's ack polls on a fake clock: without progress they back
// off from twice ackPollMin to ackPollMax; an ack that frees messages
// brings them back to ackPollMin; a lone message waits ackPollLone.
func TestAckPollSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s ackPollSchedule
		timer := time.NewTimer(time.Hour)
		poll := func(progress, lone bool) time.Duration {
			start := time.Now()
			timer.Reset(s.next(progress, lone))
			<-timer.C
			return time.Since(start)
		}
		want := 2 * ackPollMin
		for i := range 10 {
			if d := poll(false, false); d != want {
				t.Fatalf("poll %d without progress after %v, want %v", i, d, want)
			}
			want = min(2*want, ackPollMax)
		}
		if d := poll(true, false); d != ackPollMin {
			t.Fatalf("poll after progress after %v, want %v", d, ackPollMin)
		}
		if d := poll(true, true); d != max(ackPollMin, ackPollLone) {
			t.Fatalf("lone poll after %v, want %v", d, ackPollLone)
		}
		// Polls in 100 ms of no progress from the fastest: 200 µs to
		// 6.4 ms (12.6 ms in all), then one per 10 ms.
		s = ackPollSchedule{}
		n, start := 0, time.Now()
		for {
			poll(false, false)
			if time.Since(start) > 100*time.Millisecond {
				break
			}
			n++
		}
		if n != 14 {
			t.Fatalf("%d polls in 100 ms without progress, want 14", n)
		}
	})
}
