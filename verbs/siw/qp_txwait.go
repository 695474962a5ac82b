package siw

import (
	"context"
	"sync/atomic"
	"time"
)

// Transmit in wait (Options.TransmitInWait): a message too large for the
// direct path is sent by the next goroutine that waits on the QP's CQ.
//
// Why. Such a message goes to the tx goroutine, which its poster readies.
// For a Go poster that is cheap: the goroutine runs on the poster's
// thread as soon as the poster waits, and the completion it pushes
// readies the poster on that same thread. A C thread that calls in
// through cgo runs nothing but its own calls: the goroutine it readies
// waits for another thread to be woken, and the completion must wake
// the C thread's own OS thread in turn, a futex wake and a thread switch
// each. A C program that posts and then waits on the QP's CQ can send
// the message itself when it waits, with the blocking writes the tx
// goroutine would make, and find the completions on its own thread.
//
// How. A poster that holds tx.mu (so the tx goroutine is not sending)
// and leaves work behind marks it left instead of kicking the tx
// goroutine, and arms a fallback. soft's CQ.Wait, on a CQ that serves
// this QP alone, calls TransmitInline before it sleeps, which pumps as
// runTx does. If no waiter comes within txWaitFallback (the program
// polls, waits on a CQ of several QPs, or does something else), the
// fallback kicks the tx goroutine and the stream kicks it on every post
// from then on, until a waiter finds posted work the tx goroutine has
// not taken and sends it.
//
// Bounds. A waiter whose wait has a deadline never sends, since a
// blocking write may outlast it: it kicks the tx goroutine. A waiter
// without one may block in the write while the peer does not read, as
// long as the completion it waits for would take in any case.

// txWaitFallback is how long work left to a waiter waits for one before
// the tx goroutine is kicked. A variable so that tests that count the
// waiters' sends can keep a slow machine from turning them off.
var txWaitFallback = time.Millisecond

// txWaitState is the stream's state for Options.TransmitInWait.
type txWaitState struct {
	left     atomic.Bool // work is left to a waiter
	off      atomic.Bool // the fallback fired: posts kick the tx goroutine
	fallback *time.Timer // under tx.mu
}

// leaveToWaiter, called by a poster holding tx.mu whose direct path left
// work, marks the work left to a waiter and reports whether it did.
func (s *stream) leaveToWaiter() bool {
	w := &s.txWait
	if !s.dev.opts.TransmitInWait || w.off.Load() || s.irq.len() > 0 || s.stopped() {
		return false
	}
	if w.left.Swap(true) {
		return true // the fallback runs from the oldest work left
	}
	if w.fallback == nil {
		w.fallback = time.AfterFunc(txWaitFallback, s.txWaitExpired)
	} else {
		w.fallback.Reset(txWaitFallback)
	}
	return true
}

// txWaitExpired is the fallback: no waiter came for the work left.
func (s *stream) txWaitExpired() {
	if s.txWait.left.Swap(false) {
		s.txWait.off.Store(true)
		s.signalTx()
	}
}

// TransmitInline implements soft.InlineTransmitter.
func (s *stream) TransmitInline(ctx context.Context) bool {
	w := &s.txWait
	left := w.left.Load()
	if !left && !w.off.Load() {
		return false
	}
	if _, ok := ctx.Deadline(); ok {
		if left && w.left.Swap(false) {
			s.signalTx()
		}
		return false
	}
	tx := &s.tx
	if left {
		tx.mu.Lock()
	} else if !tx.mu.TryLock() {
		return false
	}
	if !w.left.Load() && !tx.pending() || s.stopped() {
		tx.mu.Unlock()
		return false
	}
	w.off.Store(false)
	s.dev.Counters.InlineSends.Add(1)
	err := s.pump()
	tx.mu.Unlock()
	if err != nil {
		s.end(linkErrorCause(err), nil, false)
	}
	return true
}

// pending reports whether a poster's direct path left work that no
// pump has taken yet. The caller holds mu.
func (tx *txState) pending() bool {
	return tx.curOn || tx.fwDirect.Buffered() > 0 || len(tx.backlog) > 0
}

// stopTxWait stops the fallback when the tx goroutine ends.
func (s *stream) stopTxWait() {
	s.tx.mu.Lock()
	if s.txWait.fallback != nil {
		s.txWait.fallback.Stop()
	}
	s.tx.mu.Unlock()
}
