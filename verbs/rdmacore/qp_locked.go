//go:build rdmacore

package rdmacore

import (
	"sync"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// The QP lends its queue locks to the layer above (fastpath): DAT numbers
// a request under the lock the post takes anyway, where it would
// otherwise put a mutex of its own around PostSend and PostRecv, one lock
// and one call through an interface more per DTO. The lock order holds:
// a post takes a CQ's lock under the queue's (drain), never the other way
// round.

var (
	_ fastpath.SendMutexer      = (*qp)(nil)
	_ fastpath.SendPostUnlocker = (*qp)(nil)
	_ fastpath.RecvMutexer      = (*qp)(nil)
	_ fastpath.RecvPostUnlocker = (*qp)(nil)
	_ fastpath.RetireBlind      = (*qp)(nil)
)

func (q *qp) LockSend()              { q.sendMu.Lock() }
func (q *qp) UnlockSend()            { q.sendMu.Unlock() }
func (q *qp) SendMutex() *sync.Mutex { return &q.sendMu }

func (q *qp) PostSendLocked(wrs []verbs.SendWR) (int, error) { return q.postSendLocked(wrs) }

// PostSendUnlock posts and, when every request was taken, unlocks.
func (q *qp) PostSendUnlock(wrs []verbs.SendWR) (int, error) {
	n, err := q.postSendLocked(wrs)
	if err == nil {
		q.sendMu.Unlock()
	}
	return n, err
}

// SendInProgressLocked is not known: the device retires unsignalled
// requests without a word (RetireBlind), so the layer above posts every
// request signalled, as it does over a QP that lends no lock.
func (q *qp) SendInProgressLocked() int { return -1 }

// RetireBlind implements fastpath.RetireBlind.
func (q *qp) RetireBlind() bool { return true }

func (q *qp) LockRecv()              { q.recvMu.Lock() }
func (q *qp) UnlockRecv()            { q.recvMu.Unlock() }
func (q *qp) RecvMutex() *sync.Mutex { return &q.recvMu }

func (q *qp) PostRecvLocked(wrs []verbs.RecvWR) (int, error) { return q.postRecvLocked(wrs) }

// PostRecvUnlock is PostSendUnlock for the receive queue.
func (q *qp) PostRecvUnlock(wrs []verbs.RecvWR) (int, error) {
	n, err := q.postRecvLocked(wrs)
	if err == nil {
		q.recvMu.Unlock()
	}
	return n, err
}
