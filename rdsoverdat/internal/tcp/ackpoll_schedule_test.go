package tcp

import (
	"testing"
	"testing/synctest"
	"time"
)

// The tcp writer's ack polls on a fake clock: without progress they back
// off from twice ackPollMin to ackPollMax; an ack that frees messages
// brings them back to ackPollMin.
func TestAckPollSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s ackPollSchedule
		timer := time.NewTimer(time.Hour)
		poll := func(progress bool) time.Duration {
			start := time.Now()
			timer.Reset(s.next(progress))
			<-timer.C
			return time.Since(start)
		}
		want := 2 * ackPollMin
		for i := range 10 {
			if d := poll(false); d != want {
				t.Fatalf("poll %d without progress after %v, want %v", i, d, want)
			}
			want = min(2*want, ackPollMax)
		}
		if d := poll(true); d != ackPollMin {
			t.Fatalf("poll after progress after %v, want %v", d, ackPollMin)
		}
		// Polls in 100 ms of no progress from the fastest: 200 µs to
		// 6.4 ms (12.6 ms in all), then one per 10 ms.
		s = ackPollSchedule{}
		n, start := 0, time.Now()
		for {
			poll(false)
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
