package rdsoverdat

import (
	"testing"
	"time"
)

// TestWatchStall drives the stall watchdog by hand: progress at every
// tick keeps it quiet; limit ticks in a row without progress make it
// report once and return; done ends it without a report.
func TestWatchStall(t *testing.T) {
	// The counts progress returns, one a call: at the start, then at
	// each tick. The watchdog alone calls it.
	seq := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 11, 11, 11, 11}
	calls := 0
	progress := func() uint64 { v := seq[calls]; calls++; return v }
	tick := make(chan time.Time)
	done := make(chan struct{})
	stalls := make(chan struct{}, 2)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		watchStall(progress, tick, 3, done, func() { stalls <- struct{}{} })
	}()
	for i := 1; i < len(seq); i++ {
		select {
		case tick <- time.Time{}:
		case <-ended:
			t.Fatalf("the watchdog ended before tick %d (count %d)", i, seq[i])
		}
	}
	<-ended
	if len(stalls) != 1 || calls != len(seq) {
		t.Fatalf("%d reports after %d looks, want 1 after %d", len(stalls), calls, len(seq))
	}

	tick2 := make(chan time.Time)
	ended2 := make(chan struct{})
	go func() {
		defer close(ended2)
		watchStall(func() uint64 { return 0 }, tick2, 3, done, func() { stalls <- struct{}{} })
	}()
	tick2 <- time.Time{}
	tick2 <- time.Time{}
	close(done)
	<-ended2
	if len(stalls) != 1 {
		t.Fatal("reported a stall after done")
	}
}

// TestSumCounts checks the watchdog's view of the streams.
func TestSumCounts(t *testing.T) {
	cs := make([]streamCount, 3)
	cs[0].n.Store(5)
	cs[2].n.Store(7)
	if got := sumCounts(cs); got != 12 {
		t.Fatalf("sumCounts = %d, want 12", got)
	}
}
