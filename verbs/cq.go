package verbs

import "context"

// CQAttr configures a completion queue.
type CQAttr struct {
	// Depth is the number of completions the CQ can hold unpolled. A
	// completion that finds the CQ full is lost: the CQ enters an error
	// state and the device reports EventCQErr.
	Depth int
}

// CQ is a completion queue shared by any number of QPs.
type CQ interface {
	// Poll moves up to len(wcs) completions into wcs, oldest first, and
	// returns how many. It never blocks and never allocates.
	Poll(wcs []WC) int
	// Wait blocks until the CQ holds a completion, or with solicitedOnly
	// until it holds a solicited receive or an error completion (WC.Solicited).
	// It returns ctx.Err() when ctx ends first, ErrClosed after Destroy, and
	// a non-nil error once the CQ has overflowed.
	Wait(ctx context.Context, solicitedOnly bool) error
	// Len returns the number of completions waiting to be polled.
	Len() int
	// Depth returns the capacity.
	Depth() int
	// Resize changes the capacity; it fails with ErrInvalidArgument below
	// the number of completions queued.
	Resize(depth int) error
	// Destroy frees the CQ; it fails with ErrInUse while QPs use it.
	Destroy() error
}
