package soft

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// Link is a provider's half of a connected QP: what carries its work to
// the peer. The engine calls it without holding any lock.
type Link interface {
	// Kick says the send queue may have work for NextSend: sends were
	// posted, a fence or ORD slot cleared, or the QP returned to RTS.
	Kick()
	// Close tears the stream down because the QP left the connected states
	// (Modify to ERROR or RESET, Destroy, Device close): abruptly, without
	// waiting for the peer. It is idempotent and must not call back into
	// the QP except through Fail and the Complete methods.
	Close()
}

// QP implements verbs.QP.
//
// A send work request lives in a ring slot from PostSend until it
// completes. Sequence numbers name slots: [sqHead, sqNext) have been
// handed to the provider and are in flight, [sqNext, sqTail) wait for
// NextSend. The provider gets copies, never pointers into the ring, so a
// slot can be flushed and reused while the provider still holds an old
// copy; CompleteSend ignores sequence numbers it no longer knows.
type QP struct {
	dev       *Device
	pd        *PD
	qpn       uint32
	sendCQ    *CQ
	recvCQ    *CQ
	srq       *SRQ
	caps      verbs.QPCaps
	signalAll bool

	mu    sync.Mutex
	state verbs.QPState // guarded by mu; set with setStateLocked
	// stateNow is state, readable without mu: TakeRecv on an SRQ needs
	// the state alone, once a received Send.
	stateNow  atomic.Int32
	link      Link      // guarded by mu
	ird, ord  int       // guarded by mu
	sq        []SendWQE // by seq, see sqSlot; caps.MaxSendWR bounds the count; guarded by mu
	sqHead    uint64    // guarded by mu
	sqNext    uint64    // guarded by mu
	sqTail    uint64    // guarded by mu
	readsOut  int       // RDMA Reads handed out and not completed; guarded by mu
	drained   bool      // SQ_DRAINED raised for the current SQD; guarded by mu
	rq        recvRing  // guarded by mu
	destroyed bool      // guarded by mu
	// kickPending: sends were posted under LockSend; UnlockSend kicks.
	kickPending bool // guarded by mu
	// quietPush: send completions pushed under mu leave the send CQ's
	// wake-up to the holder, which signals once mu is released if
	// pushed says it owes one (see completeSendsLocked).
	quietPush, pushed bool // guarded by mu

	inline atomic.Pointer[inlineRef] // link as an InlineReceiver, while connected

	recvTaken atomic.Int32 // receives taken by TakeRecv, not yet completed
}

// CreateQP implements verbs.PD.
func (pd *PD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	if err := pd.live(); err != nil {
		return nil, err
	}
	d := pd.dev
	a := &d.attr
	caps := attr.Caps
	if caps.MaxSendSGE == 0 {
		caps.MaxSendSGE = 1
	}
	if caps.MaxRecvSGE == 0 {
		caps.MaxRecvSGE = 1
	}
	sendCQ, ok1 := attr.SendCQ.(*CQ)
	recvCQ, ok2 := attr.RecvCQ.(*CQ)
	if !ok1 || !ok2 || sendCQ.dev != d || recvCQ.dev != d {
		return nil, verbs.ErrInvalidArgument
	}
	var srq *SRQ
	if attr.SRQ != nil {
		s, ok := attr.SRQ.(*SRQ)
		if !ok || s.pd != pd {
			return nil, verbs.ErrInvalidArgument
		}
		srq = s
		caps.MaxRecvWR = 0
	} else if caps.MaxRecvWR <= 0 || caps.MaxRecvWR > a.MaxQPWR {
		return nil, verbs.ErrInvalidArgument
	}
	if caps.MaxSendWR <= 0 || caps.MaxSendWR > a.MaxQPWR || caps.MaxSendSGE > a.MaxSGE || caps.MaxRecvSGE > a.MaxSGE ||
		caps.MaxSendSGE < 0 || caps.MaxRecvSGE < 0 || caps.MaxInlineData < 0 || caps.MaxInlineData > a.MaxInline {
		return nil, verbs.ErrInvalidArgument
	}
	qp := &QP{dev: d, pd: pd, sendCQ: sendCQ, recvCQ: recvCQ, srq: srq, caps: caps, signalAll: attr.SignalAll}
	qp.sq = make([]SendWQE, ringSize(caps.MaxSendWR))
	if srq == nil {
		qp.rq.resize(caps.MaxRecvWR)
	}
	d.mu.Lock()
	if d.closed.Load() {
		d.mu.Unlock()
		return nil, verbs.ErrClosed
	}
	if len(d.qps) >= a.MaxQP {
		d.mu.Unlock()
		return nil, verbs.ErrNoResources
	}
	qp.qpn = d.nextQPN
	d.nextQPN++
	d.qps[qp] = struct{}{}
	d.mu.Unlock()
	sendCQ.users.Add(1)
	recvCQ.users.Add(1)
	sendCQ.attach(qp)
	recvCQ.attach(qp)
	if srq != nil {
		srq.users.Add(1)
	}
	pd.users.Add(1)
	d.Counters.QPsCreated.Add(1)
	return qp, nil
}

func (qp *QP) QPN() uint32     { return qp.qpn }
func (qp *QP) PD() verbs.PD    { return qp.pd }
func (qp *QP) Device() *Device { return qp.dev }

// State implements verbs.QP.
func (qp *QP) State() verbs.QPState {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.state
}

// Query implements verbs.QP.
func (qp *QP) Query() verbs.QPAttr {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return verbs.QPAttr{State: qp.state, Caps: qp.caps, IRD: qp.ird, ORD: qp.ord, SignalAll: qp.signalAll}
}

// Modify implements verbs.QP.
func (qp *QP) Modify(s verbs.QPState) error {
	qp.mu.Lock()
	if qp.destroyed {
		qp.mu.Unlock()
		return verbs.ErrClosed
	}
	from := qp.state
	if !verbs.ValidTransition(from, s) {
		qp.mu.Unlock()
		return verbs.ErrInvalidState
	}
	var link Link
	kick := false
	switch s {
	case verbs.QPStateError:
		if from != verbs.QPStateError {
			qp.enterErrorLocked()
		}
		link = qp.link
	case verbs.QPStateReset:
		if from != verbs.QPStateError {
			qp.enterErrorLocked() // completions of a live QP must not vanish silently
		}
		link, qp.link = qp.link, nil
		qp.setInlineLocked(nil)
		qp.setStateLocked(verbs.QPStateReset)
		qp.sqHead, qp.sqNext = qp.sqTail, qp.sqTail
		qp.readsOut = 0
		qp.rq.reset()
		qp.ird, qp.ord = 0, 0
	case verbs.QPStateSQD:
		qp.setStateLocked(s)
		qp.drained = false
		qp.checkDrainedLocked()
	default:
		qp.setStateLocked(s)
		kick = s == verbs.QPStateRTS && qp.link != nil
		link = qp.link
	}
	qp.mu.Unlock()
	if link != nil {
		if kick {
			link.Kick()
		} else if s == verbs.QPStateError || s == verbs.QPStateReset {
			link.Close()
		}
	}
	return nil
}

// Connect attaches the provider's link once the stream is up and moves the
// QP to RTS through INIT and RTR. The QP must be in RESET or INIT.
func (qp *QP) Connect(link Link, ird, ord int) error {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	if qp.destroyed {
		return verbs.ErrClosed
	}
	if qp.state != verbs.QPStateReset && qp.state != verbs.QPStateInit {
		return verbs.ErrInvalidState
	}
	if qp.link != nil {
		return verbs.ErrInvalidState
	}
	qp.link, qp.ird, qp.ord = link, ird, ord
	qp.setInlineLocked(link)
	qp.setStateLocked(verbs.QPStateRTS)
	return nil
}

// Fail moves the QP to ERROR because its stream ended and flushes every
// outstanding work request. err says why: nil or verbs.ErrDisconnected
// for an orderly close, which raises no async event; a *TerminateError
// raises EventQPAccessErr for protection faults and EventQPFatal otherwise.
func (qp *QP) Fail(err error) {
	qp.mu.Lock()
	if qp.state == verbs.QPStateError || qp.state == verbs.QPStateReset || qp.destroyed {
		qp.mu.Unlock()
		return
	}
	qp.enterErrorLocked()
	qp.mu.Unlock()
	var te *verbs.TerminateError
	if errors.As(err, &te) {
		typ := verbs.EventQPFatal
		if te.EType == 1 && (te.Layer == verbs.TermLayerRDMAP || te.Layer == verbs.TermLayerDDP) {
			typ = verbs.EventQPAccessErr
		}
		qp.dev.Event(verbs.AsyncEvent{Type: typ, QP: qp, Err: err})
	} else if err != nil && !errors.Is(err, verbs.ErrDisconnected) {
		qp.dev.Event(verbs.AsyncEvent{Type: verbs.EventQPFatal, QP: qp, Err: err})
	}
}

// sqSlot is the send queue's slot of request seq. The array is
// caps.MaxSendWR rounded up to a power of two, so the slot is a mask of
// seq, not a division; the queue still holds caps.MaxSendWR requests.
func (qp *QP) sqSlot(seq uint64) *SendWQE { return &qp.sq[seq&uint64(len(qp.sq)-1)] }

// setStateLocked moves the QP to st; the caller holds mu.
func (qp *QP) setStateLocked(st verbs.QPState) {
	qp.state = st
	qp.stateNow.Store(int32(st))
}

// enterErrorLocked moves to ERROR and flushes both queues.
func (qp *QP) enterErrorLocked() {
	wasConnected := qp.state == verbs.QPStateRTR || qp.state == verbs.QPStateRTS || qp.state == verbs.QPStateSQD
	qp.setStateLocked(verbs.QPStateError)
	// In posting order: requests that finished behind an unfinished one
	// report how they finished, the rest are flushed.
	for seq := qp.sqHead; seq < qp.sqTail; seq++ {
		w := qp.sqSlot(seq)
		if !w.done {
			w.done, w.status, w.byteLen = true, verbs.WCWRFlushErr, 0
		}
		qp.pushSendLocked(w, w.status, w.byteLen)
	}
	qp.sqHead, qp.sqNext = qp.sqTail, qp.sqTail
	qp.readsOut = 0
	var r RecvWQE
	for qp.rq.n > 0 {
		qp.rq.pop(&r)
		qp.recvCQ.Push(&verbs.WC{ID: r.ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: qp.qpn})
	}
	if qp.srq != nil && wasConnected {
		qp.dev.Event(verbs.AsyncEvent{Type: verbs.EventQPLastWQEReached, QP: qp})
	}
}

// Destroy implements verbs.QP.
func (qp *QP) Destroy() error {
	qp.mu.Lock()
	if qp.destroyed {
		qp.mu.Unlock()
		return verbs.ErrClosed
	}
	if qp.state != verbs.QPStateError && qp.state != verbs.QPStateReset {
		qp.enterErrorLocked()
	}
	qp.destroyed = true
	link := qp.link
	qp.link = nil
	qp.setInlineLocked(nil)
	qp.mu.Unlock()
	if link != nil {
		link.Close()
	}
	d := qp.dev
	d.mu.Lock()
	delete(d.qps, qp)
	d.mu.Unlock()
	qp.sendCQ.detach(qp)
	qp.recvCQ.detach(qp)
	qp.sendCQ.users.Add(-1)
	qp.recvCQ.users.Add(-1)
	if qp.srq != nil {
		qp.srq.users.Add(-1)
	}
	qp.pd.users.Add(-1)
	return nil
}
