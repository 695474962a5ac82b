package soft

import (
	"github.com/godapl/godapl/verbs"
)

// maxMessage bounds a single message: WC.ByteLen is 32 bits.
const maxMessage = 1<<32 - 1

// PostSend implements verbs.QP.
func (qp *QP) PostSend(wrs []verbs.SendWR) (int, error) {
	qp.LockSend()
	n, err := qp.PostSendLocked(wrs)
	qp.UnlockSend()
	return n, err
}

func (qp *QP) postSendLocked(wrs []verbs.SendWR) (int, error) {
	if qp.destroyed {
		return 0, verbs.ErrClosed
	}
	if !qp.state.CanPostSend() {
		return 0, verbs.ErrInvalidState
	}
	if qp.link == nil && qp.state != verbs.QPStateError {
		return 0, verbs.ErrNotConnected
	}
	for i := range wrs {
		if err := qp.postOneLocked(&wrs[i]); err != nil {
			return i, err
		}
	}
	return len(wrs), nil
}

func (qp *QP) postOneLocked(wr *verbs.SendWR) error {
	if len(wr.SGL) == 1 && (wr.Opcode == verbs.OpSend || wr.Opcode == verbs.OpRDMAWrite) &&
		wr.Flags&verbs.SendInline == 0 && qp.state == verbs.QPStateRTS {
		return qp.postOneSGELocked(wr)
	}
	if !wr.Opcode.Valid() {
		return verbs.ErrInvalidArgument
	}
	if len(wr.SGL) > qp.caps.MaxSendSGE {
		return verbs.ErrTooManySGE
	}
	if qp.sqTail-qp.sqHead >= uint64(qp.caps.MaxSendWR) {
		return verbs.ErrQueueFull
	}
	total := verbs.SGLLen(wr.SGL)
	if total > maxMessage {
		return verbs.ErrInvalidArgument
	}
	inline := wr.Flags&verbs.SendInline != 0
	switch wr.Opcode {
	case verbs.OpRDMARead:
		if len(wr.SGL) != 1 || inline {
			return verbs.ErrInvalidArgument
		}
		if qp.ord == 0 && qp.state != verbs.QPStateError {
			return verbs.ErrInvalidArgument // no outbound read resources negotiated (siw refuses too)
		}
	case verbs.OpBindMW:
		if wr.Bind.MW == nil || wr.Bind.MR == nil {
			return verbs.ErrInvalidArgument
		}
	}
	if inline && (total > uint64(qp.caps.MaxInlineData) || total > MaxInline) {
		return verbs.ErrInvalidArgument
	}
	write := wr.Opcode == verbs.OpRDMARead
	for i := range wr.SGL {
		if _, f := qp.dev.checkLocal(qp.pd, &wr.SGL[i], write); f != FaultNone {
			return f.Err()
		}
	}

	seq := qp.sqTail
	w := qp.sqSlot(seq)
	// Field by field rather than a composite literal: that would zero the
	// whole slot, inline buffer included, on every post. What is left
	// stale (SGL past NumSGE, Inline past InlineLen) is never read.
	w.Seq, w.ID, w.Opcode, w.Flags = seq, wr.ID, wr.Opcode, wr.Flags
	w.RemoteAddr, w.RKey, w.InvRKey, w.Len = wr.RemoteAddr, wr.RKey, wr.InvalidateRKey, total
	w.Signaled = qp.signalAll || wr.Flags&verbs.SendSignaled != 0
	w.done, w.status, w.byteLen = false, verbs.WCSuccess, 0
	// No kept region: the transmit resolves the SGL (postOneSGELocked
	// keeps it for the common request).
	w.isInline, w.InlineLen, w.reg = inline, 0, nil
	w.NumSGE = copySGL(&w.SGL, wr.SGL)
	if inline {
		off := 0
		for i := range wr.SGL {
			b, h, _ := qp.dev.resolveLocal(qp.pd, &wr.SGL[i], false)
			off += copy(w.Inline[off:], b)
			h.Release()
		}
		w.InlineLen = off
	}
	qp.sqTail++
	if qp.state == verbs.QPStateError {
		w.done, w.status = true, verbs.WCWRFlushErr
		qp.sqNext = qp.sqTail
		qp.advanceHeadLocked()
		return nil
	}
	// Binds and local invalidations take effect now, so that a key they
	// create is valid before any later Send can carry it to the peer; their
	// completions still come in send-queue order, from NextSend.
	switch wr.Opcode {
	case verbs.OpBindMW:
		mw, ok := wr.Bind.MW.(*MW)
		if !ok {
			w.status = verbs.WCMWBindErr
		} else {
			w.status = mw.bind(qp.pd, &wr.Bind)
		}
	case verbs.OpLocalInv:
		w.status = qp.localInvalidate(wr.InvalidateRKey)
	}
	return nil
}

// localInvalidate invalidates an MR or MW of this QP's PD.
func (qp *QP) localInvalidate(stag uint32) verbs.WCStatus {
	r := qp.dev.stags.lookup(stag)
	if r == nil || r.pd != qp.pd {
		return verbs.WCLocProtErr
	}
	if r.mw != nil {
		r.mw.invalidate()
	} else {
		r.invalidate()
	}
	return verbs.WCSuccess
}

// NextSend copies the next send work request the provider should execute
// into w and marks it in flight. It returns false when there is none to
// run now: the queue is empty, the QP is not in RTS, a fenced request waits
// for earlier RDMA Reads, or the ORD limit is reached. The engine completes
// binds and local invalidations itself and never returns them.
func (qp *QP) NextSend(w *SendWQE) bool {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.nextSendLocked(w)
}

// NextSendMore is NextSend that also reports whether more requests were
// queued behind w when it took w: a provider that transmits what a
// poster queued, in the poster's goroutine, then stops after w without
// asking again under the QP's lock only to find the queue empty. A
// request posted after that is the poster's own to kick.
func (qp *QP) NextSendMore(w *SendWQE) (ok, more bool) {
	qp.mu.Lock()
	ok = qp.nextSendLocked(w)
	more = qp.sqNext != qp.sqTail
	qp.mu.Unlock()
	return ok, more
}

func (qp *QP) nextSendLocked(w *SendWQE) bool {
	for {
		if qp.state != verbs.QPStateRTS || qp.sqNext == qp.sqTail {
			return false
		}
		s := qp.sqSlot(qp.sqNext)
		if s.Opcode == verbs.OpBindMW || s.Opcode == verbs.OpLocalInv {
			qp.sqNext++
			s.done = true
			qp.advanceHeadLocked()
			continue
		}
		if s.Flags&verbs.SendFence != 0 && qp.readsOut > 0 {
			return false
		}
		if s.Opcode == verbs.OpRDMARead {
			if qp.readsOut >= qp.ord {
				return false
			}
			qp.readsOut++
		}
		*w = *s
		qp.sqNext++
		return true
	}
}

// CompleteSend finishes the in-flight send request seq. byteLen is
// reported for RDMA Reads. The completion is queued once every earlier
// request has completed too. Unknown or already flushed sequence numbers are
// ignored. An error status does not by itself end the stream: the provider
// calls Fail when the error is fatal, as it always is for RC.
func (qp *QP) CompleteSend(seq uint64, status verbs.WCStatus, byteLen uint32) {
	qp.mu.Lock()
	qp.quietPush = true
	kick := qp.completeSendLocked(seq, status, byteLen)
	qp.finishCompleteLocked(kick)
}

// CompleteSends finishes the in-flight sends seqs successfully, as
// CompleteSend does for each, under one hold of the QP's lock and with one
// wake-up of the CQ's waiters: a provider that hands several messages to
// the wire in one write completes them together, and a waiter woken by
// the first would otherwise find the lock held for the next when it
// posts.
func (qp *QP) CompleteSends(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	qp.mu.Lock()
	qp.quietPush = true
	kick := false
	for _, seq := range seqs {
		kick = qp.completeSendLocked(seq, verbs.WCSuccess, 0) || kick
	}
	qp.finishCompleteLocked(kick)
}

// completeSendLocked marks seq done and queues the completions it
// releases. It reports whether an RDMA Read's ORD slot freed up for
// requests still waiting. The caller holds qp.mu.
func (qp *QP) completeSendLocked(seq uint64, status verbs.WCStatus, byteLen uint32) bool {
	if seq < qp.sqHead || seq >= qp.sqNext {
		return false
	}
	w := qp.sqSlot(seq)
	if w.done || w.Seq != seq {
		return false
	}
	w.done, w.status, w.byteLen = true, status, byteLen
	kick := false
	if w.Opcode == verbs.OpRDMARead {
		qp.readsOut--
		kick = qp.sqNext < qp.sqTail
	}
	qp.advanceHeadLocked()
	qp.checkDrainedLocked()
	return kick
}

// finishCompleteLocked ends a completion under quietPush: it releases
// qp.mu, then wakes the send CQ's waiters if completions were queued and
// kicks the link if an ORD slot freed up.
func (qp *QP) finishCompleteLocked(kick bool) {
	pushed := qp.pushed
	qp.quietPush, qp.pushed = false, false
	link := qp.link
	kick = kick && qp.state == verbs.QPStateRTS && link != nil
	qp.mu.Unlock()
	if pushed {
		qp.sendCQ.signal()
	}
	if kick {
		link.Kick()
	}
}

func (qp *QP) pushSendLocked(w *SendWQE, status verbs.WCStatus, byteLen uint32) {
	if status == verbs.WCSuccess && !w.Signaled {
		return
	}
	wc := verbs.WC{ID: w.ID, Status: status, Opcode: verbs.WCOpcodeOf(w.Opcode), QPN: qp.qpn}
	if w.Opcode == verbs.OpRDMARead && status == verbs.WCSuccess {
		wc.ByteLen = byteLen
	}
	if !qp.quietPush {
		qp.sendCQ.Push(&wc)
		return
	}
	if qp.sendCQ.pushQuiet(&wc) {
		qp.pushed = true
	}
}

// advanceHeadLocked retires the finished requests at the head of the send
// queue and queues their completions: in posting order, as the verbs model
// promises, so a Write that finishes while an earlier Read is outstanding
// waits for the Read.
func (qp *QP) advanceHeadLocked() {
	for qp.sqHead < qp.sqNext {
		w := qp.sqSlot(qp.sqHead)
		if !w.done {
			return
		}
		qp.pushSendLocked(w, w.status, w.byteLen)
		qp.sqHead++
	}
}

func (qp *QP) checkDrainedLocked() {
	if qp.state == verbs.QPStateSQD && !qp.drained && qp.sqHead == qp.sqNext {
		qp.drained = true
		qp.dev.Event(verbs.AsyncEvent{Type: verbs.EventSQDrained, QP: qp})
	}
}

// PostRecv implements verbs.QP. It unlocks without a defer, as PostSend
// does: postRecvLocked does not panic, and the deferred call is work on
// every receive posted.
func (qp *QP) PostRecv(wrs []verbs.RecvWR) (int, error) {
	qp.mu.Lock()
	n, err := qp.postRecvLocked(wrs)
	qp.mu.Unlock()
	return n, err
}

func (qp *QP) postRecvLocked(wrs []verbs.RecvWR) (int, error) {
	if qp.destroyed {
		return 0, verbs.ErrClosed
	}
	if qp.srq != nil || !qp.state.CanPostRecv() {
		return 0, verbs.ErrInvalidState
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > qp.caps.MaxRecvSGE {
			return i, verbs.ErrTooManySGE
		}
		if qp.rq.full() {
			return i, verbs.ErrQueueFull
		}
		if verbs.SGLLen(wr.SGL) > maxMessage {
			return i, verbs.ErrInvalidArgument
		}
		if err := checkRecvSGL(qp.dev, qp.pd, wr.SGL); err != nil {
			return i, err
		}
		if qp.state == verbs.QPStateError {
			qp.recvCQ.Push(&verbs.WC{ID: wr.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: qp.qpn})
			continue
		}
		qp.rq.push(wr)
	}
	return len(wrs), nil
}

// TakeRecv dequeues the receive an inbound Send consumes, from the QP's
// receive queue or its SRQ. It returns false when none is posted (the
// provider then terminates the stream: iWARP has no RNR retry) or the QP
// is not in a state that receives. The provider owns the receive until it
// calls CompleteRecv, which it must do even when the stream dies.
//
// A QP on an SRQ takes its receive under the SRQ's lock alone: of the
// QP it needs only the state, which may change right after it is read
// whether read under the QP's lock or not.
func (qp *QP) TakeRecv(w *RecvWQE) bool {
	if qp.srq != nil {
		if !receives(verbs.QPState(qp.stateNow.Load())) || !qp.srq.take(w) {
			return false
		}
		qp.recvTaken.Add(1)
		return true
	}
	qp.mu.Lock()
	if !receives(qp.state) {
		qp.mu.Unlock()
		return false
	}
	ok := qp.rq.pop(w)
	qp.mu.Unlock()
	if ok {
		qp.recvTaken.Add(1)
	}
	return ok
}

// receives reports whether a QP in state st takes inbound Sends.
func receives(st verbs.QPState) bool {
	return st == verbs.QPStateRTR || st == verbs.QPStateRTS || st == verbs.QPStateSQD
}

// RecvInProgress implements fastpath.RecvInProgress: receives taken with
// TakeRecv whose CompleteRecv has not run.
func (qp *QP) RecvInProgress() int { return int(qp.recvTaken.Load()) }

// CompleteRecv reports a receive taken with TakeRecv.
func (qp *QP) CompleteRecv(w *RecvWQE, status verbs.WCStatus, byteLen uint32, flags verbs.WCFlags, invRKey uint32) {
	qp.completeRecv(w, status, byteLen, flags, invRKey, nil)
}

// CompleteRecvInline is CompleteRecv of a successful receive by the
// goroutine that runs the QP's receive side for waiter, a CQ's waiter
// (InlineReceiver.ReceiveInline), or by any other if waiter is nil: when
// the completion goes to that CQ, the push's own hold of the CQ's lock
// also finds what the waiter's next look (CQ.Satisfied) would, and keeps
// it for that look.
func (qp *QP) CompleteRecvInline(w *RecvWQE, byteLen uint32, flags verbs.WCFlags, invRKey uint32, waiter *CQ) {
	qp.completeRecv(w, verbs.WCSuccess, byteLen, flags, invRKey, waiter)
}

func (qp *QP) completeRecv(w *RecvWQE, status verbs.WCStatus, byteLen uint32, flags verbs.WCFlags, invRKey uint32, waiter *CQ) {
	wc := verbs.WC{ID: w.ID, Status: status, Opcode: verbs.WCRecv, Flags: flags, ByteLen: byteLen, QPN: qp.qpn, InvalidatedRKey: invRKey}
	if status != verbs.WCSuccess {
		wc.Flags, wc.ByteLen, wc.InvalidatedRKey = 0, 0, 0
	}
	// Before the push: whoever polls the completion sees it not counted.
	qp.recvTaken.Add(-1)
	if cq := qp.recvCQ; waiter != nil && cq == waiter {
		cq.pushInline(&wc)
	} else {
		cq.Push(&wc)
	}
}

// ResolveSGE returns the memory a local SGE names, checked against the QP's
// PD; write asks for local write rights (receives, RDMA Read sinks). The
// caller releases the Hold as soon as its copy is done.
func (qp *QP) ResolveSGE(sge *verbs.SGE, write bool) ([]byte, Hold, Fault) {
	return qp.dev.resolveLocal(qp.pd, sge, write)
}

// SendSlices appends to out the memory of w's data, in order: the inline
// copy, or one slice per SGE, and keeps their accesses in hs, which the
// caller releases when done with the memory. It fails, holding nothing,
// if an MR went away since the post.
func (qp *QP) SendSlices(w *SendWQE, out [][]byte, hs *Holds) ([][]byte, Fault) {
	if w.isInline {
		return append(out, w.Inline[:w.InlineLen]), FaultNone
	}
	if w.reg != nil {
		return sendSlice1(w, out, hs)
	}
	for i := 0; i < w.NumSGE; i++ {
		b, h, f := qp.dev.resolveLocal(qp.pd, &w.SGL[i], false)
		if f != FaultNone {
			hs.Release()
			return out, f
		}
		hs.add(h)
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out, FaultNone
}

// ResolveRemote checks an inbound tagged access against this QP's PD. The
// caller releases the Hold as soon as its copy is done.
func (qp *QP) ResolveRemote(stag uint32, addr, n uint64, need verbs.Access) ([]byte, Hold, Fault) {
	return qp.dev.ResolveRemote(stag, qp.pd, addr, n, need)
}

// InvalidateRemote applies a peer's Send with Invalidate. The caller must
// hold no access to the STag (release the Placer first).
func (qp *QP) InvalidateRemote(stag uint32) Fault {
	return qp.dev.InvalidateRemote(stag, qp.pd)
}
