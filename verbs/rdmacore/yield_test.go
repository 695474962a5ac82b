//go:build rdmacore

package rdmacore

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// GODAPL_RDMACORE_TEST_YIELD_AFTER sets yieldAfter in the test binary
// ("0" turns yielding off), so that the lab can time a stream with the
// yield and without it in the same boot.
func init() {
	if v := os.Getenv("GODAPL_RDMACORE_TEST_YIELD_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			panic("GODAPL_RDMACORE_TEST_YIELD_AFTER: " + err.Error())
		}
		yieldAfter = d
	}
}

// setYieldAfter sets yieldAfter for one test.
func setYieldAfter(t *testing.T, d time.Duration) {
	old := yieldAfter
	yieldAfter = d
	t.Cleanup(func() { yieldAfter = old })
}

// TestYielder: the clock is read once per yieldCheckPolls empty device
// polls (BusyPoll's spins count) and at every poll that found
// completions, and a yield is due once yieldAfter has passed since the
// last one, not before; yieldAfter 0 never yields.
func TestYielder(t *testing.T) {
	setYieldAfter(t, 5*time.Millisecond)
	var clock int64 = int64(time.Hour)
	reads := 0
	now := func() int64 { reads++; return clock }
	var y yielder
	for i := range yieldCheckPolls - 1 {
		if y.polled(0, 0, now) {
			t.Fatalf("yield after %d empty polls, before the first clock check", i+1)
		}
	}
	if reads != 0 {
		t.Fatalf("%d clock reads in %d empty polls, want none", reads, yieldCheckPolls-1)
	}
	if !y.polled(0, 0, now) || reads != 1 || y.count != 1 {
		t.Fatalf("no yield at the first check, %d reads, count %d", reads, y.count)
	}
	// The next check, at the same time: none due.
	for range yieldCheckPolls {
		if y.polled(0, 0, now) {
			t.Fatal("a second yield with no time passed")
		}
	}
	clock += int64(yieldAfter) - 1
	for range yieldCheckPolls {
		if y.polled(0, 0, now) {
			t.Fatal("a yield 1 ns before yieldAfter passed")
		}
	}
	clock++
	// One busy poll of yieldCheckPolls-1 spins is a check by itself.
	if !y.polled(0, yieldCheckPolls-1, now) || y.count != 2 {
		t.Fatalf("no yield once yieldAfter passed (count %d)", y.count)
	}

	// A Poll that returns completions reads the clock every time.
	reads = 0
	for range 3 {
		if y.polled(5, 0, now) {
			t.Fatal("a yield with no time passed since the last")
		}
	}
	if reads != 3 {
		t.Fatalf("%d clock reads in 3 polls that found completions, want 3", reads)
	}
	clock += int64(yieldAfter)
	if !y.polled(1, 0, now) || y.count != 3 {
		t.Fatalf("no yield at a poll with completions once yieldAfter passed (count %d)", y.count)
	}

	setYieldAfter(t, 0)
	clock += int64(time.Hour)
	reads = 0
	for i := range 4 * yieldCheckPolls {
		if y.polled(i%2, 0, now) {
			t.Fatal("a yield with yielding off")
		}
	}
	if reads != 0 {
		t.Fatalf("%d clock reads with yielding off", reads)
	}
}

// TestPollYields: a goroutine that polls an empty CQ yields on the real
// clock, allocating nothing, and so does one whose polls find
// completions, which still arrive whole.
func TestPollYields(t *testing.T) {
	sa, sb := pair(t, verbstest.PairAttr{})
	count := func() int { return yields(sa.CQ) }
	wcs := make([]verbs.WC, 4)
	start := count()
	deadline := time.Now().Add(30 * time.Second)
	for count() < start+2 {
		if n := sa.CQ.Poll(wcs); n != 0 {
			t.Fatalf("Poll of an empty CQ: %d completions", n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two yields in 30 s of polling an empty CQ (count %d)", count()-start)
		}
	}

	// Every check yields: the yielding Poll allocates nothing either.
	setYieldAfter(t, time.Nanosecond)
	before := count()
	allocs := testing.AllocsPerRun(20, func() {
		for range yieldCheckPolls {
			sa.CQ.Poll(wcs)
		}
	})
	if allocs != 0 {
		t.Fatalf("a yielding Poll of an empty CQ allocates %.1f times", allocs)
	}
	if got := count() - before; got < 20 {
		t.Fatalf("%d yields in 21 x %d empty polls, want one per check", got, yieldCheckPolls)
	}

	// A sender that finds a completion at every poll yields as well, and
	// every message arrives whole.
	setYieldAfter(t, time.Millisecond)
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}
	txStart := yields(sb.CQ)
	deadline = time.Now().Add(30 * time.Second)
	for i := 0; yields(sb.CQ) < txStart+2; i++ {
		copy(sb.Buf.B[:64], fmt.Sprintf("yield %d", i%10))
		sendRecv(t, sa, sb, send, recv, wcs)
		if wcs[1].ID != 2 || wcs[1].ByteLen != 64 || string(sa.Buf.B[:7]) != fmt.Sprintf("yield %d", i%10) {
			t.Fatalf("message %d: receive %+v, data %q", i, wcs[1], sa.Buf.B[:7])
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two yields of the sender's CQ in %d messages", i+1)
		}
	}
}

// TestPollLockedLeavesYield: a consumer polling under the CQ's lock (DAT)
// is not yielded there; the yield falls due and YieldDue takes it once
// the lock is released, allocating nothing.
func TestPollLockedLeavesYield(t *testing.T) {
	sa, _ := pair(t, verbstest.PairAttr{})
	q := sa.CQ.(*cq)
	wcs := make([]verbs.WC, 4)
	setYieldAfter(t, time.Nanosecond)
	due := func() bool {
		q.Lock()
		for range yieldCheckPolls {
			if n := q.PollLocked(wcs); n != 0 {
				t.Fatalf("PollLocked of an empty CQ: %d completions", n)
			}
		}
		q.Unlock()
		return q.yieldDue.Load()
	}
	if !due() {
		t.Fatalf("no yield due after %d empty PollLocked calls with yields due every ns", yieldCheckPolls)
	}
	q.YieldDue()
	if q.yieldDue.Load() {
		t.Fatal("YieldDue left the yield due")
	}
	allocs := testing.AllocsPerRun(20, func() {
		due()
		q.YieldDue()
	})
	if allocs != 0 {
		t.Fatalf("PollLocked and YieldDue allocate %.1f times", allocs)
	}

	// With yielding off nothing falls due.
	setYieldAfter(t, 0)
	if due() {
		t.Fatal("a yield fell due with yielding off")
	}
}
