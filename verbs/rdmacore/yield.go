//go:build rdmacore

package rdmacore

import "time"

// A goroutine that spins on a CQ never passes through Go's scheduler on
// its own: it polls, posts, polls again. Go's sysmon asks such a
// goroutine to yield once it has run 10 ms since it was last scheduled,
// and by default also interrupts its thread with a signal to make it; on
// a software device the signal lands on a thread that is doing the
// device's work inside a post or a poll. The runtime's
// GODEBUG=asyncpreemptoff=1 removes the signal, but only a program's
// environment can set it. So Poll yields first: once yieldAfter has
// passed since the CQ last yielded it calls runtime.Gosched, after it has
// let go of the CQ's lock, and sysmon finds the goroutine rescheduled
// within its 10 ms and never signals it. The yield is what sysmon would
// have forced anyway, without the signal.
//
// When to read the clock: a Poll that returns completions reads it every
// time, because a streaming sender may find completions at nearly every
// poll (rxe completes a Send inside the post's system call) and poll only
// once per hundred posts, so a count of its polls would come round too
// late; such a poll costs a crossing into C and the completions' work
// besides, beside which one clock read is small. An empty Poll reads it
// once per yieldCheckPolls polls of the device, so that a loop spinning on
// an empty CQ does not pay a clock read for every crossing.

// yieldAfter is how long a goroutine may go between two yields: half of
// sysmon's 10 ms, so that every interval sysmon looks at holds a yield
// even when the clock is read late. 0 turns yielding off (tests).
var yieldAfter = 5 * time.Millisecond

// yieldCheckPolls is how many polls of an empty device pass between two
// reads of the clock (BusyPoll's spins count): even on a device whose
// poll is a system call a check comes far more often than every
// millisecond.
const yieldCheckPolls = 64

// epoch is the origin of the monotonic clock the yield reads: time.Since
// of a time with a monotonic reading is one read of the runtime's clock.
var epoch = time.Now()

// yielder is a CQ's record of its pollers; the CQ's lock guards it.
type yielder struct {
	polls int   // device polls that found nothing since the last check
	last  int64 // when the CQ last yielded, ns since epoch
	count int   // yields so far, for tests
}

// polled records a Poll that returned n completions after spins extra
// polls of an empty device (BusyPoll) and reports whether the caller
// should yield once it holds no lock. now reads the clock.
func (y *yielder) polled(n, spins int, now func() int64) bool {
	if yieldAfter <= 0 {
		return false
	}
	if n == 0 {
		y.polls += 1 + spins
		if y.polls < yieldCheckPolls {
			return false
		}
	}
	y.polls = 0
	t := now()
	if t-y.last < int64(yieldAfter) {
		return false
	}
	y.last = t
	y.count++
	return true
}

// monoNow is the clock empty reads.
func monoNow() int64 { return int64(time.Since(epoch)) }
