package core

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// wcStatus maps verbs completion statuses to DAT's, as the reference
// implementation does.
func wcStatus(s verbs.WCStatus) dat.DTOStatus {
	switch s {
	case verbs.WCSuccess:
		return dat.DTOSuccess
	case verbs.WCLocLenErr:
		return dat.DTOErrLocalLength
	case verbs.WCLocQPOpErr:
		return dat.DTOErrLocalEP
	case verbs.WCLocProtErr, verbs.WCLocAccessErr:
		return dat.DTOErrLocalProtection
	case verbs.WCWRFlushErr:
		return dat.DTOErrFlushed
	case verbs.WCMWBindErr:
		return dat.RMROperationFailed
	case verbs.WCBadRespErr:
		return dat.DTOErrBadResponse
	case verbs.WCRemAccessErr:
		return dat.DTOErrRemoteAccess
	case verbs.WCRemInvReqErr, verbs.WCRemOpErr, verbs.WCRemAbortErr:
		return dat.DTOErrRemoteResponder
	case verbs.WCRespTimeoutErr:
		return dat.DTOErrReceiverNotReady
	}
	return dat.DTOErrTransport
}

// hold is the cookie slot a translated completion keeps until its event
// is handed out: a slot of an SRQ's table, or a request of an EP queue.
type hold struct {
	tbl  *cookieTable
	slot uint32
	q    *slotRing
	seq  uint32
}

// releaseLocked frees the slot; the caller holds the EVD's mu.
func (h *hold) releaseLocked() {
	if h.tbl != nil {
		h.tbl.put(h.slot)
	}
	if h.q != nil {
		h.q.retireLocked(h.seq)
	}
}

// translateLocked turns a work completion of e's CQ into the event it
// stands for, written into ev: Number, and every field of the member
// Number names (DTO or RMRBind); the other members are left as they were,
// as in C's DAT_EVENT union (clearing all 256 bytes of an Event costs as
// much as the rest of the translation). It returns the slot the event
// holds. It returns ok false, and leaves ev alone, for completions that
// produce no event: those of freed EPs, and successful suppressed DTOs
// (whose slots it frees at once). The caller holds e.cql.
func (e *EVD) translateLocked(wc *verbs.WC, ev *dat.Event) (h hold, quiet, ok bool) {
	return e.translateOwnerLocked(e.ia.lookupOwner(wc.ID), wc, ev)
}

// translateOwnerLocked is translateLocked with the owner of wc's work
// request already looked up (o, nil for none).
func (e *EVD) translateOwnerLocked(o *owner, wc *verbs.WC, ev *dat.Event) (h hold, quiet, ok bool) {
	if o == nil {
		return hold{}, false, false
	}
	idx := uint32(wc.ID & wrSlotMask)
	var s *cookieSlot
	var epHandle dat.Handle
	if o.srq != nil {
		cs, found := o.table.peek(idx)
		if !found {
			return hold{}, false, false
		}
		s = &cs
		h.tbl, h.slot = &o.table, idx
		// The EP is the one whose QP consumed the buffer; a freed EP's
		// late completion (its buffers vanish with it) frees the slot.
		ep := e.epByQPN(wc.QPN)
		if ep == nil {
			h.releaseLocked()
			return hold{}, false, false
		}
		epHandle = ep.handle
	} else {
		q := &o.req
		if wc.ID&wrRecvBit != 0 {
			q = &o.recv
		}
		if q.evd != e {
			return hold{}, false, false // not a queue of this EVD: cannot happen
		}
		p, seq := q.lookupLocked(idx)
		if p == nil {
			return hold{}, false, false
		}
		s = p // stays ours until the hold is released
		h.q, h.seq = q, seq
		epHandle = o.ep.handle
	}
	status := wcStatus(wc.Status)
	var rmr *RMR
	if s.op == dat.DTOBindMW {
		// The slot's later DTOs leave rmr (cookieSlot.set): let go of
		// it now, or a freed RMR, its window and the buffer that was
		// bound would stay reachable until a bind lands on the slot.
		// The slot is still the bind's: its hold is not released.
		rmr, s.rmr = s.rmr, nil
	}
	if status == dat.DTOSuccess && s.flags&dat.CompletionSuppress != 0 {
		h.releaseLocked()
		return hold{}, false, false
	}
	quiet = s.flags&dat.CompletionUnsignalled != 0 && status == dat.DTOSuccess
	if s.op == dat.DTOBindMW {
		b := dat.RMRBindCompletion{Cookie: s.cookie, Status: status}
		if rmr != nil {
			b.RMR = rmr.handle
			if status != dat.DTOSuccess {
				b.Status = dat.RMROperationFailed
				if wc.Status == verbs.WCWRFlushErr {
					b.Status = dat.DTOErrFlushed
				}
			}
		}
		ev.Number, ev.RMRBind = dat.RMRBindCompletionEvent, b
		return h, quiet, true
	}
	ev.Number = dat.DTOCompletionEvent
	fillDTO(&ev.DTO, epHandle, s, wc, status)
	return h, quiet, true
}

// fillDTO writes every field of d, the event of the DTO of slot s that
// completed with wc and status, field by field (see EP.fill for why).
func fillDTO(d *dat.DTOCompletion, ep dat.Handle, s *cookieSlot, wc *verbs.WC, status dat.DTOStatus) {
	op := s.op // once: after the stores into d, which may alias s, it was loaded again
	d.EP, d.Cookie, d.Status, d.Op, d.Length, d.RMRContext = ep, s.cookie, status, op, 0, 0
	switch {
	case status != dat.DTOSuccess:
	case op != dat.DTOReceive: // sends and RDMA report what was posted (a split Read's total)
		d.Length = s.length
	default:
		d.Length = wc.ByteLen
		if wc.Flags&verbs.WCWithInv != 0 {
			d.Op = dat.DTOReceiveWithInvalidate
			d.RMRContext = dat.RMRContext(wc.InvalidatedRKey)
		}
	}
}
