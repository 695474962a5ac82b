package core

import "time"

// OnSpinPoll makes f run before each poll of a wait spin, until the test
// ends (reset).
func OnSpinPoll(f func(*EVD)) (reset func()) {
	spinPolled = f
	return func() { spinPolled = nil }
}

// SpinBudget is what the next wait of e may spend spinning.
func SpinBudget(e *EVD) time.Duration { return time.Duration(e.spinCur.Load()) }
