package fastpath

import (
	"sync"

	"github.com/godapl/godapl/verbs"
)

// Optional interfaces that let the layer above do its own bookkeeping of a
// post or a poll under the provider's lock, instead of taking a lock of its
// own around the provider's. DAT numbers its requests in the order the QP
// takes them and retires them in the order the CQ hands them out; on the
// in-memory provider a lock round trip is a tenth of a whole operation, so
// sharing the provider's lock is what keeps the DAT layer within 10 % of
// raw verbs. A provider without them costs the caller a lock of its own.

// SendQueueLocker is an optional QP interface: the lock PostSend takes,
// held by the caller across several posts and its own work.
type SendQueueLocker interface {
	// LockSend takes the send queue's lock. The caller must not call any
	// other method of the QP, or of its CQs, until UnlockSend, except
	// PostSendLocked and (for the lock order) CQLocker methods of a CQ.
	LockSend()
	// PostSendLocked is PostSend for the holder of the lock.
	PostSendLocked(wrs []verbs.SendWR) (int, error)
	// SendInProgressLocked returns the requests posted that have neither
	// completed nor (unsignalled and successful) retired. While the lock
	// is held it cannot drop, and the completions of the requests it no
	// longer counts are on the CQ: a consumer that has polled them all
	// knows that every unsignalled request it posted has succeeded.
	SendInProgressLocked() int
	// UnlockSend releases the lock and starts the requests posted under it.
	UnlockSend()
}

// RetireBlind is an optional SendQueueLocker interface for a provider
// whose device retires a successful unsignalled request without telling
// it (a hardware queue), so that SendInProgressLocked is always -1: the
// layer above then posts every request signalled, as over a QP that
// lends no lock, since a trailing unsignalled request would never be
// seen to retire.
type RetireBlind interface {
	RetireBlind() bool
}

// RecvQueueLocker is SendQueueLocker for the receive queue.
type RecvQueueLocker interface {
	LockRecv()
	PostRecvLocked(wrs []verbs.RecvWR) (int, error)
	UnlockRecv()
}

// SendPostUnlocker is an optional extension of SendQueueLocker: the last
// post of a locked section and the unlock in one call, which spares the
// caller a call through the interface on every post.
type SendPostUnlocker interface {
	// PostSendUnlock is PostSendLocked and then, if it took every
	// request, UnlockSend. On an error the lock stays held, so that the
	// caller can undo its own bookkeeping of the requests before it calls
	// UnlockSend.
	PostSendUnlock(wrs []verbs.SendWR) (int, error)
}

// RecvPostUnlocker is SendPostUnlocker for the receive queue: PostRecvLocked
// and then, if it took every request, UnlockRecv; on an error the lock
// stays held.
type RecvPostUnlocker interface {
	PostRecvUnlock(wrs []verbs.RecvWR) (int, error)
}

// SendMutexer is an optional SendQueueLocker interface for a provider
// whose LockSend takes one sync.Mutex and does nothing else (UnlockSend
// may do more: it starts what was posted). The consumer then takes that
// mutex itself, inlined, instead of calling LockSend through the
// interface, and ends with UnlockSend or PostSendUnlock as before. The
// rules of SendQueueLocker hold for the mutex.
type SendMutexer interface {
	SendQueueLocker
	// SendMutex returns the mutex LockSend takes.
	SendMutex() *sync.Mutex
}

// RecvMutexer is SendMutexer for the receive queue: LockRecv takes the
// mutex RecvMutex returns and does nothing else.
type RecvMutexer interface {
	RecvQueueLocker
	RecvMutex() *sync.Mutex
}

// SGLChecker is an optional QP and SRQ interface: a provider whose posts
// check every local SGE says so, and the layer above need not check its
// own view of the same memory before it posts. ChecksSGL reports that
// PostSend, PostRecv and their Locked forms (an SRQ's PostRecv) refuse an
// SGE, before they take the request, with verbs.ErrInvalidKey (the lkey names no MR: unknown,
// invalidated, or a memory window), verbs.ErrWrongPD, verbs.ErrAccess (local write
// asked of an MR without verbs.AccessLocalWrite) or verbs.ErrBounds, in that order of
// precedence for one SGE and for the first faulty SGE of a list. Local
// read is always granted: a consumer with a finer notion of it checks it
// itself.
type SGLChecker interface {
	ChecksSGL() bool
}

// CQLocker is an optional CQ interface: the lock Poll takes, held by the
// consumer across polls and its own work on what it polled. The provider
// takes a CQ's lock after a QP's (completions are queued under the QP's),
// so a caller holding a QP's send or receive lock may take it, never the
// other way round. Len, Wait, Resize and Destroy must not be called with
// it held.
type CQLocker interface {
	Lock()
	PollLocked(wcs []verbs.WC) int
	Unlock()
}

// CQMutexer is an optional CQLocker interface for a provider whose Lock
// and Unlock take and release one sync.Mutex and do nothing else. The
// consumer then takes that mutex itself, which the compiler inlines (a
// compare-and-swap and an atomic add), instead of calling Lock and Unlock
// through the interface: on the in-memory provider those two dynamic
// calls are a third of what a DAT dequeue adds to a raw verbs Poll. The
// rules of CQLocker hold for the mutex.
type CQMutexer interface {
	CQLocker
	// CQMutex returns the mutex Lock takes and Unlock releases.
	CQMutex() *sync.Mutex
}

// CQYielder is an optional CQLocker interface for a provider that wants
// a consumer spinning on its CQ to yield the processor now and then
// (verbs/rdmacore: before Go's sysmon interrupts a goroutine that has run
// 10 ms with a signal). PollLocked keeps the count under the lock; once
// the consumer has released the lock and holds no other, it calls
// YieldDue, which yields when a yield is due and returns at once
// otherwise.
type CQYielder interface {
	CQLocker
	YieldDue()
}

// CQRinger is an optional CQMutexer interface for a provider that keeps
// its completions in a CQRing: Poll and PollLocked take them from it and
// nothing else does. The consumer, holding the mutex, then takes the
// oldest completion in place (CQRing.Peek and Pop, which inline) instead
// of calling PollLocked to copy it into a buffer of its own: DAT hands a
// completion out one at a time, translated straight into its event. The
// rules of CQMutexer hold for the ring, and Push is the provider's alone.
type CQRinger interface {
	CQMutexer
	// CQRing returns the ring, guarded by the mutex CQMutex returns.
	CQRing() *CQRing
}
