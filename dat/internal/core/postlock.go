package core

import (
	"sync"

	"github.com/godapl/godapl/verbs"
)

// A post and a dequeue each take one lock: the provider's own, lent
// through verbs.SendQueueLocker, RecvQueueLocker and CQLocker, under which
// DAT numbers a request as the QP takes it and retires it as the CQ hands
// it out. For a provider that does not lend its locks, these adapters put
// a mutex of DAT's around the plain calls: correct, one lock dearer.

// sendQueue returns qp's send queue as a SendQueueLocker.
func sendQueue(qp verbs.QP) verbs.SendQueueLocker {
	if l, ok := qp.(verbs.SendQueueLocker); ok {
		return l
	}
	return &mutexSQ{qp: qp}
}

// recvQueue returns qp's receive queue as a RecvQueueLocker.
func recvQueue(qp verbs.QP) verbs.RecvQueueLocker {
	if l, ok := qp.(verbs.RecvQueueLocker); ok {
		return l
	}
	return &mutexRQ{qp: qp}
}

// cqLocker returns cq as a CQLocker.
func cqLocker(cq verbs.CQ) verbs.CQLocker {
	if l, ok := cq.(verbs.CQLocker); ok {
		return l
	}
	return &mutexCQ{cq: cq}
}

type mutexSQ struct {
	mu sync.Mutex
	qp verbs.QP
}

func (m *mutexSQ) LockSend()                                    { m.mu.Lock() }
func (m *mutexSQ) PostSendLocked(w []verbs.SendWR) (int, error) { return m.qp.PostSend(w) }
func (m *mutexSQ) UnlockSend()                                  { m.mu.Unlock() }

// SendInProgressLocked: unknown. EPs on such a QP post every request
// signalled (see slotRing).
func (m *mutexSQ) SendInProgressLocked() int { return -1 }

type mutexRQ struct {
	mu sync.Mutex
	qp verbs.QP
}

func (m *mutexRQ) LockRecv()                                    { m.mu.Lock() }
func (m *mutexRQ) PostRecvLocked(w []verbs.RecvWR) (int, error) { return m.qp.PostRecv(w) }
func (m *mutexRQ) UnlockRecv()                                  { m.mu.Unlock() }

type mutexCQ struct {
	mu sync.Mutex
	cq verbs.CQ
}

func (m *mutexCQ) Lock()                       { m.mu.Lock() }
func (m *mutexCQ) PollLocked(w []verbs.WC) int { return m.cq.Poll(w) }
func (m *mutexCQ) Unlock()                     { m.mu.Unlock() }
