package siw

import (
	"time"

	"github.com/godapl/godapl/verbs"
)

// InlineWaiting reports whether a goroutine waiting on the CQ of c's QP
// is blocked reading c's socket itself (inline receive), where an
// interrupt, the end of its context or an inbound frame reaches it.
func InlineWaiting(c verbs.Conn) bool {
	return c.(*conn).s.inlinePhase.Load() == inlineWaiting
}

// RxWanted reports whether a waiter on the CQ of c's QP has asked the
// receive goroutine for the socket, which it hands over once it has
// processed an FPDU and has nothing read ahead.
func RxWanted(c verbs.Conn) bool { return c.(*conn).s.rxWanted.Load() }

// SetTxWaitFallback sets how long work left to a waiter waits for one
// (Options.TransmitInWait) from now on, and returns a function that
// restores it.
func SetTxWaitFallback(d time.Duration) (restore func()) {
	old := txWaitFallback
	txWaitFallback = d
	return func() { txWaitFallback = old }
}
