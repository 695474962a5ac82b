package core

import (
	"time"

	"github.com/godapl/godapl/dat"
)

// The wait spin: a wait with threshold 1 that finds no event may poll
// for a bounded time before it sleeps.
//
// Why. A waiter asleep in CQ.Wait is woken by the goroutine that pushes
// the completion. For a goroutine that is the callback of a C thread (the
// uDAPL provider library: a C program's dat_evd_wait) that wake-up goes
// through the OS thread the callback is locked to, a futex wake and a
// thread switch, which costs more than a small DTO takes to complete.
// Polling a little first takes the completion on the running thread.
//
// Bounded and adaptive: the budget (SetWaitSpin) halves each time it
// runs out without an event, down to a sixteenth, and doubles back to
// the full budget each time an event comes within it, so an EVD whose
// events are far apart spends little on it. Only an EVD with a CQ spins:
// connection and CR events come from goroutines, not completions, and
// not soon. The spin is the hot path's own take (takeSlow under the
// wait's gate) repeated, so a wait that ends in it is a wait that found
// the event at once: it never becomes the EVD's waiter.

// SetWaitSpin sets the spin budget of a wait; 0 turns it off.
func (e *EVD) SetWaitSpin(d time.Duration) {
	e.spinMax.Store(int64(max(d, 0)))
	e.spinCur.Store(int64(max(d, 0)))
}

// spinCheckEvery is how many polls pass between looks at the clock.
// spinPollFloor bounds the polls of a budget as well, as if each took at
// least that long: in a synctest bubble the clock stands still while the
// spinner runs.
const (
	spinCheckEvery = 16
	spinPollFloor  = 10 * time.Nanosecond
)

// spinPolled, when set (by tests), is called before each poll of a spin.
var spinPolled func(*EVD)

// spinTake repeats takeSlow until it takes an event or the budget runs
// out; it gives up at once when the gate or queued soft events send the
// take down the full path.
func (e *EVD) spinTake(ev *dat.Event, mode TakeMode) (int, bool) {
	budget := time.Duration(e.spinCur.Load())
	if budget <= 0 || e.cq == nil {
		return 0, false
	}
	start := time.Now()
	polls := int64(budget / spinPollFloor)
	for i := int64(1); ; i++ {
		if e.gate.Load()&uint32(mode) != 0 || e.queued.Load() != 0 {
			return 0, false
		}
		if spinPolled != nil {
			spinPolled(e)
		}
		if n, ok := e.takeSlow(ev, uint32(mode)); ok {
			if full := e.spinMax.Load(); int64(budget) < full {
				e.spinCur.Store(min(2*int64(budget), full))
			}
			return n, true
		}
		if i >= polls || i%spinCheckEvery == 0 && time.Since(start) >= budget {
			break
		}
	}
	full := e.spinMax.Load()
	e.spinCur.Store(max(int64(budget)/2, full/16))
	return 0, false
}
