package dat

import (
	"testing"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// countPath counts what a transport bumps on its path; nothing else of
// the path is used.
type countPath struct {
	xport.Path
	n map[xport.Counter]int
}

func (p *countPath) Count(c xport.Counter) { p.n[c]++ }

// A sender's wait is counted once, as a full send ring or a credit
// stall, however often the round finds it still waiting before the
// event goroutine restarts it.
func TestDATStallCounts(t *testing.T) {
	p := &countPath{n: map[xport.Counter]int{}}
	e := &datEP{dp: &datPath{p: p}}
	e.stall(false)
	e.stall(false)
	e.stalled.Store(false) // restarted
	e.stall(true)
	e.stall(false) // still the same wait
	e.stalled.Store(false)
	e.stall(false)
	if got := p.n[xport.CountTxRingFull]; got != 2 {
		t.Errorf("ring full counted %d times, want 2", got)
	}
	if got := p.n[xport.CountCreditStall]; got != 1 {
		t.Errorf("credit stall counted %d times, want 1", got)
	}
}
