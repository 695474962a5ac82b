package core

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/internal/fastpath"
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
	fastpath.CQLocker
	n *atomic.Int64
}

func (c countingCQL) PollLocked(wcs []verbs.WC) int {
	c.n.Add(1)
	return c.CQLocker.PollLocked(wcs)
}

// RecordCQWaits reports, from now on, the deadline (zero for none) of
// the context of every CQ.Wait on e's CQ, the waiter's own or the CQ
// watch's.
func RecordCQWaits(e *EVD) <-chan time.Time {
	c := make(chan time.Time, 64)
	e.mu.Lock()
	e.cq = &recordingCQ{CQ: e.cq, waits: c}
	e.mu.Unlock()
	return c
}

type recordingCQ struct {
	verbs.CQ
	waits chan<- time.Time
}

func (r *recordingCQ) Wait(ctx context.Context, solicitedOnly bool) error {
	dl, _ := ctx.Deadline()
	select {
	case r.waits <- dl:
	default:
	}
	return r.CQ.Wait(ctx, solicitedOnly)
}
