package soft

import (
	"sync"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// The fast-path interfaces of package fastpath: the QP's mu and the CQ's
// mu, lent to the layer above.

var (
	_ fastpath.SendQueueLocker  = (*QP)(nil)
	_ fastpath.RecvQueueLocker  = (*QP)(nil)
	_ fastpath.CQLocker         = (*CQ)(nil)
	_ fastpath.SGLChecker       = (*QP)(nil)
	_ fastpath.SGLChecker       = (*SRQ)(nil)
	_ fastpath.SendPostUnlocker = (*QP)(nil)
	_ fastpath.RecvPostUnlocker = (*QP)(nil)
	_ fastpath.SendMutexer      = (*QP)(nil)
	_ fastpath.RecvMutexer      = (*QP)(nil)
)

// SendMutex implements fastpath.SendMutexer: LockSend takes qp.mu.
func (qp *QP) SendMutex() *sync.Mutex { return &qp.mu }

// RecvMutex implements fastpath.RecvMutexer: LockRecv takes qp.mu.
func (qp *QP) RecvMutex() *sync.Mutex { return &qp.mu }

// ChecksSGL implements fastpath.SGLChecker: postOneLocked and
// postRecvLocked check every SGE with Device.checkLocal, whose faults
// Fault.Err reports apart.
func (qp *QP) ChecksSGL() bool { return true }

// ChecksSGL implements fastpath.SGLChecker for the SRQ: PostRecv checks
// every SGE with checkRecvSGL, as a QP's receive queue does.
func (s *SRQ) ChecksSGL() bool { return true }

// LockSend implements fastpath.SendQueueLocker.
func (qp *QP) LockSend() { qp.mu.Lock() }

// PostSendLocked implements fastpath.SendQueueLocker.
func (qp *QP) PostSendLocked(wrs []verbs.SendWR) (int, error) {
	n, err := qp.postSendLocked(wrs)
	if n > 0 {
		qp.kickPending = true
	}
	return n, err
}

// SendInProgressLocked implements fastpath.SendQueueLocker. sqHead passes a
// request when its completion is queued or, unsignalled, it retires.
func (qp *QP) SendInProgressLocked() int { return int(qp.sqTail - qp.sqHead) }

// UnlockSend implements fastpath.SendQueueLocker: the link is kicked, as
// after PostSend, once the lock is released.
func (qp *QP) UnlockSend() { qp.unlockSend(false) }

// PostSendUnlock implements fastpath.SendPostUnlocker.
func (qp *QP) PostSendUnlock(wrs []verbs.SendWR) (int, error) {
	n, err := qp.postSendLocked(wrs)
	if err != nil {
		if n > 0 {
			qp.kickPending = true
		}
		return n, err
	}
	qp.unlockSend(n > 0)
	return n, nil
}

// unlockSend releases the send lock and kicks the link if requests were
// posted under it: posted, or earlier ones (kickPending).
func (qp *QP) unlockSend(posted bool) {
	link := qp.link
	kick := (posted || qp.kickPending) && qp.state == verbs.QPStateRTS && link != nil
	qp.kickPending = false
	qp.mu.Unlock()
	if kick {
		link.Kick()
	}
}

// LockRecv implements fastpath.RecvQueueLocker.
func (qp *QP) LockRecv() { qp.mu.Lock() }

// PostRecvLocked implements fastpath.RecvQueueLocker.
func (qp *QP) PostRecvLocked(wrs []verbs.RecvWR) (int, error) { return qp.postRecvLocked(wrs) }

// UnlockRecv implements fastpath.RecvQueueLocker.
func (qp *QP) UnlockRecv() { qp.mu.Unlock() }

// PostRecvUnlock implements fastpath.RecvPostUnlocker.
func (qp *QP) PostRecvUnlock(wrs []verbs.RecvWR) (int, error) {
	n, err := qp.postRecvLocked(wrs)
	if err == nil {
		qp.mu.Unlock()
	}
	return n, err
}

// Lock implements fastpath.CQLocker.
func (cq *CQ) Lock() { cq.mu.Lock() }

// PollLocked implements fastpath.CQLocker.
func (cq *CQ) PollLocked(wcs []verbs.WC) int { return cq.pollLocked(wcs) }

// Unlock implements fastpath.CQLocker.
func (cq *CQ) Unlock() { cq.mu.Unlock() }

var _ fastpath.CQMutexer = (*CQ)(nil)

// CQMutex implements fastpath.CQMutexer: Lock and Unlock are cq.mu's.
func (cq *CQ) CQMutex() *sync.Mutex { return &cq.mu }

var _ fastpath.CQRinger = (*CQ)(nil)

// CQRing implements fastpath.CQRinger: the ring Push queues to and pollLocked
// takes from.
func (cq *CQ) CQRing() *fastpath.CQRing { return &cq.ring }
