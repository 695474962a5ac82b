package core_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/internal/core"
)

// A dequeue that looked at the EVD's gate before a waiter claimed it
// must not take what arrives after the claim: once dequeue can report
// EVD_WAITER, what comes is the waiter's. Here the dequeue stops between
// its look at the gate and the CQ's lock (on the path of a provider that
// lends neither ring nor mutex, whose lock can be held up; the lent
// mutex's path has the same gap, only narrower), a waiter claims the EVD
// and sleeps, a Send completes, and the dequeue goes on. It took the
// completion from under the waiter, which slept on.
func TestEVDDequeueYieldsToWaiterClaimingMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli, req, sep, cep := wakeupPair(t)
		for i := 1; i <= 2; i++ {
			if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, dat.DTOCookie(100+i), dat.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		e := (*core.EVD)(req)
		core.LendNothing(e)
		waits, releaseWait := core.GateCQWait(e)
		releaseWait = sync.OnceFunc(releaseWait)
		defer releaseWait()
		locked, releaseLock := core.GateFirstCQLock(e)
		releaseLock = sync.OnceFunc(releaseLock)
		defer releaseLock()

		dequeued := make(chan error, 1)
		go func() {
			_, err := req.Dequeue()
			dequeued <- err
		}()
		<-locked // past the gate, before the CQ's lock
		type result struct {
			ev  dat.Event
			err error
		}
		waited := make(chan result, 1)
		go func() {
			ev, _, err := req.Wait(context.Background(), 1)
			waited <- result{ev, err}
		}()
		<-waits // the waiter owns the EVD and sleeps
		if !core.Waiting(e) {
			t.Fatal("the waiter sleeps without owning the EVD")
		}
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		settledCQLen(t, req, 1)
		releaseLock()
		dattest.WantErr(t, <-dequeued, dat.InvalidState, dat.InvalidStateEVDWaiter)
		releaseWait()
		select {
		case r := <-waited:
			if r.err != nil || r.ev.DTO.Cookie != 1 {
				t.Fatalf("evd_wait: %v cookie %d, want the send", r.err, r.ev.DTO.Cookie)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("evd_wait slept on with the send completed")
		}
	})
}
