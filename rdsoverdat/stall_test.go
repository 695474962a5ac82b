package rdsoverdat

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// A stream benchmark whose messages stop coming must fail, not hang:
// the run is counted in messages, so one message lost, or one wake-up
// lost, leaves it waiting for good, at no CPU, with nothing to show why.
// watchStall looks at the streams' progress once a period and, after
// stallPeriods periods with none, writes what stalled and every
// goroutine's stack and ends the process, before any cleanup that could
// hang behind the stall too. A minute without a single message is no
// slow run, even on a loaded host.
const (
	stallPeriod  = time.Second
	stallPeriods = 60
)

// streamCount is one stream's messages received so far, alone on its
// cache line: each receiver stores its own, the watchdog reads them all.
type streamCount struct {
	n atomic.Uint64
	_ [56]byte
}

// progressEvery is how many messages a receiver takes between stores
// of its count, so that counting costs the timed part nothing.
const progressEvery = 64

// sumCounts returns the messages received over all streams.
func sumCounts(cs []streamCount) uint64 {
	var t uint64
	for i := range cs {
		t += cs[i].n.Load()
	}
	return t
}

// watchStall calls stalled once progress has returned the same value
// at limit ticks in a row, and returns; it returns at once when done is
// closed.
func watchStall(progress func() uint64, tick <-chan time.Time, limit int, done <-chan struct{}, stalled func()) {
	last, still := progress(), 0
	for {
		select {
		case <-done:
			return
		case <-tick:
		}
		if p := progress(); p != last {
			last, still = p, 0
			continue
		}
		if still++; still >= limit {
			stalled()
			return
		}
	}
}

// stallExit is watchStall's end of a stalled benchmark: what stalled,
// every goroutine's stack, exit status 2.
func stallExit(w io.Writer, what string) func() {
	return func() {
		fmt.Fprintf(w, "%s: no progress for %v; goroutines:\n", what, stallPeriod*stallPeriods)
		buf := make([]byte, 8<<20)
		w.Write(buf[:runtime.Stack(buf, true)])
		os.Exit(2)
	}
}

// watchProgress runs watchStall on progress with the standard period
// and limit until the returned stop is called (once or more).
func watchProgress(progress func() uint64, what string) (stop func()) {
	done := make(chan struct{})
	exited := make(chan struct{})
	t := time.NewTicker(stallPeriod)
	go func() {
		defer close(exited)
		watchStall(progress, t.C, stallPeriods, done, stallExit(os.Stderr, what))
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-exited
		t.Stop()
	})
}

// delivered returns the messages the nodes of st delivered to their
// sockets so far: a daemon's progress, whoever its clients are.
func delivered(st *Stack) uint64 {
	var t uint64
	for _, n := range st.allNodes() {
		t += n.stats.recvDelivered.Load()
	}
	return t
}
