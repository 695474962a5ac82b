package soft

import "github.com/godapl/godapl/verbs"

// A Send or RDMA Write of one SGE, the common case, has its memory
// checked twice: at post, that the lkey names an MR of the QP's PD
// covering the range (checkLocal), and at transmit, where the provider
// resolves it again and holds it while it copies (SendSlices). The
// second time need not look the STag up nor check the range again: the
// post keeps the region it found in the request (SendWQE.reg), and what
// the post checked of it cannot change while the region stays valid
// with the same STag. An MR's PD, extent and rights are fixed at
// registration (windows, whose extent a bind changes, have no local
// access and never get here), so the transmit only takes the hold and
// checks, after counting it, that the region is still valid under that
// STag (hold.go): a region invalidated, deregistered or rekeyed since
// the post fails the request as the full resolution would. A retired
// slot keeps its region reachable until the slot is posted to again: a
// deregistered MR's struct (never its memory's use) outlives it by at
// most the queue's depth of posts; clearing it at retirement cost a
// store with a write barrier check a request.

// sendSlice1 is SendSlices for a request of one SGE whose region the
// post kept (w.reg set).
func sendSlice1(w *SendWQE, out [][]byte, hs *Holds) ([][]byte, Fault) {
	r, sge := w.reg, &w.SGL[0]
	if !r.enter(sge.LKey) {
		return out, FaultSTag
	}
	e := r.ext.Load() // an MR's: never replaced
	off := sge.Addr - e.base
	b := e.buf[off : off+uint64(sge.Length) : off+uint64(sge.Length)]
	hs.h[hs.n] = Hold{r}
	hs.n++
	if len(b) > 0 {
		out = append(out, b)
	}
	return out, FaultNone
}

// postOneSGELocked is postOneLocked for the common request: a Send or
// RDMA Write of one SGE, not inline, on a QP in RTS. It checks what
// postOneLocked checks of such a request, in the same order, and fills
// the slot as it does; what it leaves out cannot apply (the opcode is
// valid, one SGE's length is below maxMessage, there is no inline data,
// bind or invalidation, and the QP is not in ERROR).
func (qp *QP) postOneSGELocked(wr *verbs.SendWR) error {
	if qp.caps.MaxSendSGE < 1 {
		return verbs.ErrTooManySGE
	}
	if qp.sqTail-qp.sqHead >= uint64(qp.caps.MaxSendWR) {
		return verbs.ErrQueueFull
	}
	sge := &wr.SGL[0]
	r, f := qp.dev.checkLocal(qp.pd, sge, false)
	if f != FaultNone {
		return f.Err()
	}
	seq := qp.sqTail
	w := qp.sqSlot(seq)
	w.Seq, w.ID, w.Opcode, w.Flags = seq, wr.ID, wr.Opcode, wr.Flags
	w.RemoteAddr, w.RKey, w.InvRKey, w.Len = wr.RemoteAddr, wr.RKey, wr.InvalidateRKey, uint64(sge.Length)
	w.Signaled = qp.signalAll || wr.Flags&verbs.SendSignaled != 0
	w.done, w.status, w.byteLen = false, verbs.WCSuccess, 0
	w.isInline, w.InlineLen, w.reg = false, 0, r
	w.NumSGE, w.SGL[0] = 1, *sge
	qp.sqTail++
	return nil
}
