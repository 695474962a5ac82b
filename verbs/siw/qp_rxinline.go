package siw

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/godapl/godapl/verbs/internal/soft"
)

// Inline receive: the stream as a soft.InlineReceiver.
//
// Why. A Send that arrives for a goroutine blocked in CQ.Wait costs two
// wakeups when runRx reads it: the network wakes runRx, runRx places the
// message, completes it and wakes the waiter. On the 2-core development
// VM that second wakeup was half of a 64-byte round trip. A raw TCP
// reader pays only the first. So the goroutine waiting on the CQ of the
// stream's QP (the CQ's only QP) reads, places and completes the stream's
// FPDUs itself, and the network wakes it directly.
//
// Who reads. The receive side — the socket, the frame reader and rxState —
// has one owner at a time, named by rxOwner: runRx, a waiter, or nobody.
// Ownership changes only between FPDUs with nothing buffered (rx.idle),
// so a new owner starts at a frame boundary. runRx owns it by default.
// A waiter that finds runRx owning it sets rxWanted and sleeps as usual;
// runRx hands the receive side over (rxOwner = nobody) once it is idle
// again, wakes that waiter's CQ so that it comes to take it, and sleeps.
// A waiter that finds nobody owning it takes it, waits for the socket to
// become readable, processes what arrived, and gives it back to nobody
// when its CQ has what it waits for. When one read brought many FPDUs (a
// streaming peer) or the stream ended, it hands it straight to runRx
// (rxOwner = runRx): left to nobody, it would go to the application's
// next Wait, which comes before runRx runs on a busy host. runRx takes
// it back when it finds nobody owning it after a nap of rxNapMin in which
// no waiter took it: so bytes that arrive while no goroutine waits — RDMA
// Writes, Read Requests, Sends for an application busy elsewhere — wait
// at most two naps, and a stream whose application stops waiting returns
// to plain runRx reception.
//
// Interrupting a waiter. A waiter blocked for readability must return
// when its CQ gets a completion from another goroutine (CQ.Push calls
// Interrupt), when the stream ends, and when its context is done: a
// deadline is set on the socket as the read deadline; a cancellation is
// noticed by runRx, which wakes every rxNap while a waiter holds the
// receive side. Interrupt sets the read deadline to the past, but only
// while the waiter is in that wait (inlinePhase): a deadline that hit a
// read in the middle of an FPDU would end the stream. Past the wait, a
// waiter finishes the FPDUs that arrived before it looks at its CQ or its
// context again, as runRx would.

// Owners of the receive side (stream.rxOwner).
const (
	rxOwnerNone int32 = iota
	rxOwnerGoroutine
	rxOwnerWaiter
)

// Phases of an inline waiter (stream.inlinePhase): the waiter moves it
// between idle and waiting, Interrupt (under inlineMu) to interrupted.
const (
	inlineIdle        = iota // not waiting for readability
	inlineWaiting            // blocked in the readability wait: may be interrupted
	inlineInterrupted        // the read deadline was moved to the past
)

// Tunables of inline receive.
const (
	// rxNapMin is how long runRx leaves the receive side to waiters
	// before it takes it back, and how often it checks a holding
	// waiter's context; rxNapMax is where that check backs off to while
	// a waiter holds the receive side for long.
	rxNapMin = time.Millisecond
	rxNapMax = 64 * time.Millisecond
	// inlineStreamFrames is how many FPDUs one read of a waiter may bring
	// before the stream counts as streaming; runRx then keeps the receive
	// side for inlineCooldownFrames FPDUs, so that placement runs in
	// parallel with the application (BenchmarkSend64: inline receive
	// serialises placing and reposting, and the rate drops).
	inlineStreamFrames   = 8
	inlineCooldownFrames = 4096
)

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// ReceiveInline implements soft.InlineReceiver.
func (s *stream) ReceiveInline(ctx context.Context, cq *soft.CQ, solicitedOnly bool) bool {
	if s.dev.opts.NoInlineReceive || s.rx.sock.rc == nil {
		return false
	}
	if !s.rxOwner.CompareAndSwap(rxOwnerNone, rxOwnerWaiter) {
		if s.rxOwner.Load() == rxOwnerGoroutine && !s.stopped() {
			s.rxWantedBy.Store(cq)
			s.rxWanted.Store(true)
		}
		return false
	}
	s.inlineUses.Add(1)
	s.rx.inlineCQ = cq
	s.receiveInline(ctx, cq, solicitedOnly)
	s.rx.inlineCQ = nil
	if s.rx.over || s.stopped() {
		s.rxGiveBack.Store(true) // runRx must finish the stream
	}
	if s.rxGiveBack.Load() {
		// Straight to runRx, not to nobody: the next waiter would take
		// it back before runRx runs. With one P it always did, and the
		// stream stayed inline however much it streamed.
		s.rxOwner.Store(rxOwnerGoroutine)
		s.signalRx()
		return true
	}
	wake := s.rxNap.Load() > int64(rxNapMin)
	s.rxOwner.Store(rxOwnerNone)
	if wake {
		s.signalRx()
	}
	return true
}

// receiveInline is the waiter's receive loop.
func (s *stream) receiveInline(ctx context.Context, cq *soft.CQ, solicitedOnly bool) {
	rx := &s.rx
	frames := 0 // processed since the last read
	// fresh: nothing happened since the caller (soft's CQ.Wait) found cq
	// unsatisfied, so the first look is awaitInline's, which it makes in
	// any case once it may be interrupted: one hold of the CQ's lock
	// less per wait.
	fresh := true
	for !rx.over {
		if !rx.idle() {
			if !s.rxStep() {
				rx.over = true
			}
			s.dev.Counters.InlineFrames.Add(1)
			frames++
			fresh = false
			continue
		}
		if frames >= inlineStreamFrames {
			// The peer streams: receiving in parallel with the
			// application beats saving wakeups. Give the receive side
			// back to runRx for a while.
			s.rxGiveBack.Store(true)
			return
		}
		frames = 0
		if !fresh && cq.Satisfied(solicitedOnly) || ctx.Err() != nil || s.stopped() {
			return
		}
		fresh = false
		err, interrupted := s.awaitInline(ctx, cq, solicitedOnly)
		if interrupted {
			return
		}
		if err != nil {
			s.rxFailed(nil, err)
			rx.over = true
		}
	}
}

// awaitInline blocks until the socket is readable and reads what it
// holds into the frame reader's buffer, unless Interrupt, the context's
// deadline or a completion on cq comes first (interrupted).
func (s *stream) awaitInline(ctx context.Context, cq *soft.CQ, solicitedOnly bool) (err error, interrupted bool) {
	dl, hasDL := ctx.Deadline()
	// The context is recorded for runRx's checks (interruptIfCanceled)
	// only when it is not the one recorded last: a consumer waits with
	// the same context wait after wait, and a hold of inlineMu per wait
	// would be two lock operations per message. Done channels compare
	// where contexts of some types would not.
	if done := ctx.Done(); done != s.inlineDone || hasDL {
		s.inlineMu.Lock()
		s.inlineCtx, s.inlineDone = ctx, done
		if hasDL {
			s.nc.SetReadDeadline(dl)
		}
		s.inlineMu.Unlock()
	}
	s.inlinePhase.Store(inlineWaiting)
	// A completion pushed before the phase was set did not interrupt us.
	if !cq.Satisfied(solicitedOnly) {
		// Idle (receiveInline's loop): the buffer is empty and whole.
		var n int
		n, err = s.rx.sock.waitRead(s.rx.fr.Space())
		s.rx.fr.Filled(n)
	}
	// Back to idle without the lock unless an Interrupt won the phase
	// (it moves the read deadline under inlineMu, and the waiter must
	// see that done before it moves the deadline back) or the waiter
	// set a deadline of its own.
	if !s.inlinePhase.CompareAndSwap(inlineWaiting, inlineIdle) || hasDL {
		s.inlineMu.Lock()
		if !s.stopped() {
			s.nc.SetReadDeadline(time.Time{})
		}
		s.inlinePhase.Store(inlineIdle)
		s.inlineMu.Unlock()
	}
	switch {
	case err == nil:
		return nil, s.rx.idle()
	case errors.Is(err, os.ErrDeadlineExceeded) && !s.stopped():
		return nil, true
	}
	return err, false
}

// Interrupt implements soft.InlineReceiver. The phase moves to
// inlineInterrupted only here, under inlineMu, and the waiter's way back
// to idle (a compare-and-swap from inlineWaiting) fails once it has: the
// waiter then takes inlineMu, after the read deadline was moved.
func (s *stream) Interrupt() {
	if s.inlinePhase.Load() != inlineWaiting {
		return
	}
	s.inlineMu.Lock()
	if s.inlinePhase.CompareAndSwap(inlineWaiting, inlineInterrupted) {
		s.nc.SetReadDeadline(aLongTimeAgo)
	}
	s.inlineMu.Unlock()
}

// signalRx wakes runRx while it has handed the receive side over.
func (s *stream) signalRx() {
	select {
	case s.rxWake <- struct{}{}:
	default:
	}
}

// rxHandOver gives the receive side to waiters, runRx being idle, and
// waits until it can take it back: after rxNap without a waiter holding
// it, or when a waiter hands it back (rxOwner = runRx) because the peer
// streams or the stream ended. It returns owning the receive side, false
// if a waiter's processing ended the stream.
func (s *stream) rxHandOver() bool {
	s.rxWanted.Store(false)
	nap := rxNapMin
	if s.rx.nap == nil {
		s.rx.nap = time.NewTimer(nap)
	} else {
		s.rx.nap.Reset(nap)
	}
	s.rxNap.Store(int64(nap))
	s.rxOwner.Store(rxOwnerNone)
	// The waiter that asked may be asleep with nothing to wake it: the
	// FPDU just processed need not have completed anything.
	if cq := s.rxWantedBy.Swap(nil); cq != nil {
		cq.Wake()
	}
	stop := s.stop
	uses := s.inlineUses.Load()
	for {
		take := true
		select {
		case <-s.rxWake:
			take = false // returned to nobody mid-backoff: nap afresh
		case <-s.rx.nap.C:
			// Waiters came by during the nap: they are still at it.
			if u := s.inlineUses.Load(); u != uses && !s.stopped() {
				uses, take = u, false
			}
		case <-stop:
			stop = nil // closed: look once, then rely on rxWake and the nap
		}
		handed := s.rxOwner.Load() == rxOwnerGoroutine
		if handed || take && s.rxOwner.CompareAndSwap(rxOwnerNone, rxOwnerGoroutine) {
			s.rx.nap.Stop()
			if s.rxGiveBack.Swap(false) {
				s.rx.cooldown = inlineCooldownFrames
			}
			return !s.rx.over
		}
		if take {
			// A waiter holds it: check on its context less and less often.
			s.interruptIfCanceled()
			nap = min(2*nap, rxNapMax)
		} else {
			nap = rxNapMin
		}
		s.rxNap.Store(int64(nap))
		s.rx.nap.Reset(nap)
	}
}

// interruptIfCanceled interrupts a waiter holding the receive side whose
// context has been canceled or the stream has ended (a waiter's context
// is known while it waits for readability, the only wait it interrupts).
func (s *stream) interruptIfCanceled() {
	s.inlineMu.Lock()
	ctx := s.inlineCtx
	s.inlineMu.Unlock()
	// ctx may be an earlier wait's: Interrupt does nothing unless a
	// waiter waits, and a waiter with another context recorded it.
	if s.stopped() || (ctx != nil && ctx.Err() != nil) {
		s.Interrupt()
	}
}
