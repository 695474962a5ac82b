package core

import (
	"sync"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// A post and a dequeue each take one lock: the provider's own, lent
// through fastpath.SendQueueLocker, RecvQueueLocker and CQLocker, under which
// DAT numbers a request as the QP takes it and retires it as the CQ hands
// it out. For a provider that does not lend its locks, these adapters put
// a mutex of DAT's around the plain calls: correct, one lock dearer.

//
// A post ends in one call that posts and unlocks (fastpath.SendPostUnlocker,
// RecvPostUnlocker) where the provider has it, in two calls otherwise.

// sendQ is a send queue as the post paths use it.
type sendQ interface {
	fastpath.SendQueueLocker
	fastpath.SendPostUnlocker
}

// recvQ is a receive queue as the post paths use it.
type recvQ interface {
	fastpath.RecvQueueLocker
	fastpath.RecvPostUnlocker
}

// sendQueue returns qp's send queue as a sendQ.
func sendQueue(qp verbs.QP) sendQ {
	l, ok := qp.(fastpath.SendQueueLocker)
	if !ok {
		return &mutexSQ{qp: qp}
	}
	if q, ok := l.(sendQ); ok {
		return q
	}
	return sqUnlocker{l}
}

// recvQueue returns qp's receive queue as a recvQ.
func recvQueue(qp verbs.QP) recvQ {
	l, ok := qp.(fastpath.RecvQueueLocker)
	if !ok {
		return &mutexRQ{qp: qp}
	}
	if q, ok := l.(recvQ); ok {
		return q
	}
	return rqUnlocker{l}
}

// queueMutexes returns the mutexes LockSend and LockRecv of sq and rq take,
// nil for one that is not known: the provider's (fastpath.SendMutexer,
// RecvMutexer) or this file's adapters'.
func queueMutexes(sq sendQ, rq recvQ) (sqMu, rqMu *sync.Mutex) {
	switch q := sq.(type) {
	case fastpath.SendMutexer:
		sqMu = q.SendMutex()
	case *mutexSQ:
		sqMu = &q.mu
	}
	switch q := rq.(type) {
	case fastpath.RecvMutexer:
		rqMu = q.RecvMutex()
	case *mutexRQ:
		rqMu = &q.mu
	}
	return sqMu, rqMu
}

// sqUnlocker adds PostSendUnlock to a provider's SendQueueLocker.
type sqUnlocker struct{ fastpath.SendQueueLocker }

func (q sqUnlocker) PostSendUnlock(w []verbs.SendWR) (int, error) {
	n, err := q.PostSendLocked(w)
	if err == nil {
		q.UnlockSend()
	}
	return n, err
}

// rqUnlocker adds PostRecvUnlock to a provider's RecvQueueLocker.
type rqUnlocker struct{ fastpath.RecvQueueLocker }

func (q rqUnlocker) PostRecvUnlock(w []verbs.RecvWR) (int, error) {
	n, err := q.PostRecvLocked(w)
	if err == nil {
		q.UnlockRecv()
	}
	return n, err
}

// cqLocker returns cq as a CQLocker.
func cqLocker(cq verbs.CQ) fastpath.CQLocker {
	if l, ok := cq.(fastpath.CQLocker); ok {
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

func (m *mutexSQ) PostSendUnlock(w []verbs.SendWR) (int, error) {
	n, err := m.qp.PostSend(w)
	if err == nil {
		m.mu.Unlock()
	}
	return n, err
}

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

func (m *mutexRQ) PostRecvUnlock(w []verbs.RecvWR) (int, error) {
	n, err := m.qp.PostRecv(w)
	if err == nil {
		m.mu.Unlock()
	}
	return n, err
}

type mutexCQ struct {
	mu sync.Mutex
	cq verbs.CQ
}

func (m *mutexCQ) Lock()                       { m.mu.Lock() }
func (m *mutexCQ) PollLocked(w []verbs.WC) int { return m.cq.Poll(w) }
func (m *mutexCQ) Unlock()                     { m.mu.Unlock() }
