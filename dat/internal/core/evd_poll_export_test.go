package core

import (
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// CountCQPolls counts, from now on, the polls of e's CQ through its
// locker: each copies completions out of the CQ into the EVD's raw batch,
// where a take from the provider's lent ring (Take, takeSlow)
// translates them where they lie.
func CountCQPolls(e *EVD) *atomic.Int64 {
	n := new(atomic.Int64)
	e.mu.Lock()
	e.cql = countingCQL{CQLocker: e.cql, n: n}
	e.mu.Unlock()
	return n
}

type countingCQL struct {
	verbs.CQLocker
	n *atomic.Int64
}

func (c countingCQL) PollLocked(wcs []verbs.WC) int {
	c.n.Add(1)
	return c.CQLocker.PollLocked(wcs)
}
