package core

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// takeSRQLocked is takeSlow for wc, the CQ's oldest completion, a
// successful receive of the SRQ whose owner is e.srqOwn (wc's ID has
// e.srqKey): it translates wc from its cookie slot, where it lies, and
// frees the slot, as the usual path (a poll into wcs, the owner table's
// lookup, translateOwnerLocked and the hold's release) would, with none
// of the lookups whose answers the last receive already gave. It
// declines, touching nothing, whatever that path would treat otherwise:
// an SRQ freed meanwhile (whose owner the table no longer holds, or soon
// will not: freed is set before the owner is removed), a slot out of
// range, a QP with no EP. The caller holds cql,
// with the ring and the polled completions empty.
func (e *EVD) takeSRQLocked(r *fastpath.CQRing, wc *verbs.WC, ev *dat.Event) (int, bool) {
	o := e.srqOwn
	if o.srq.freed.Load() {
		// Let go of the freed SRQ's table; its late completions take
		// the usual path, which drops them.
		e.srqKey, e.srqOwn = noQueue, nil
		return 0, false
	}
	idx := uint32(wc.ID & wrSlotMask)
	slots := *o.table.slots.Load()
	if int(idx) >= len(slots) {
		return 0, false
	}
	s := &slots[idx] // an SRQ's receives have no completion flags: none is suppressed
	ep := e.epByQPN(wc.QPN)
	if ep == nil {
		return 0, false
	}
	// wc stays where it lies until a Push, under cql (see Take).
	n := min(r.Pop(wc), len(e.wcs)-1)
	ev.Number = dat.DTOCompletionEvent
	fillDTO(&ev.DTO, ep.handle, s, wc, dat.DTOSuccess)
	o.table.put(idx) // after fillDTO: put clears the slot
	return n, true
}
