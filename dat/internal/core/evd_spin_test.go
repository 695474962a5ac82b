package core_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/internal/core"
)

// A wait with a spin budget that finds no event polls instead of
// sleeping, and takes a completion that comes meanwhile on its own
// goroutine: the send is posted from the spin's first poll, and the
// waiter must return it without ever entering CQ.Wait.
func TestEVDWaitSpinTakesWithoutSleeping(t *testing.T) {
	srv, cli, req, _, cep := wakeupPair(t)
	(*core.EVD)(req).SetWaitSpin(time.Hour) // never runs out here
	entered, release := core.GateCQWait((*core.EVD)(req))
	defer release()
	var post sync.Once
	defer core.OnSpinPoll(func(*core.EVD) {
		post.Do(func() {
			if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 7, srv.Buf.RMRTriplet(0, 8), dat.CompletionDefault); err != nil {
				t.Error(err)
			}
		})
	})()
	ev, more, err := req.Wait(context.Background(), 1)
	if err != nil || ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 7 || ev.DTO.Status != dat.DTOSuccess || more != 0 {
		t.Fatalf("evd_wait: %v %v cookie %d status %v, %d more; want the write, none more", err, ev.Number, ev.DTO.Cookie, ev.DTO.Status, more)
	}
	select {
	case <-entered:
		t.Fatal("the waiter slept in CQ.Wait; want it to take the completion while spinning")
	default:
	}
	if b := core.SpinBudget((*core.EVD)(req)); b != time.Hour {
		t.Errorf("budget after a spin that took an event: %v, want %v", b, time.Hour)
	}
	dattest.ExpectEmpty(t, req)
}

// A spin that runs out sleeps as a wait without one does, and halves the
// next wait's budget, down to a sixteenth of the one set.
func TestEVDWaitSpinRunsOut(t *testing.T) {
	srv, cli, req, _, cep := wakeupPair(t)
	const budget = 64 * time.Microsecond
	(*core.EVD)(req).SetWaitSpin(budget)
	entered, release := core.GateCQWait((*core.EVD)(req))
	done := make(chan error, 1)
	go func() {
		ev, _, err := req.Wait(context.Background(), 1)
		if err == nil && (ev.DTO.Cookie != 9 || ev.DTO.Status != dat.DTOSuccess) {
			err = errors.New("wrong completion")
		}
		done <- err
	}()
	<-entered // the spin ran out: the waiter sleeps
	if b := core.SpinBudget((*core.EVD)(req)); b != budget/2 {
		t.Errorf("budget after a spin that ran out: %v, want %v", b, budget/2)
	}
	if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 9, srv.Buf.RMRTriplet(0, 8), dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := req.Dequeue(); !errors.Is(err, dat.ErrQueueEmpty) {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, _, err := req.Wait(ctx, 1)
		cancel()
		if !errors.Is(err, dat.ErrTimeoutExpired) {
			t.Fatalf("wait on an empty EVD: %v, want DAT_TIMEOUT_EXPIRED", err)
		}
	}
	if b := core.SpinBudget((*core.EVD)(req)); b != budget/16 {
		t.Errorf("budget after many spins ran out: %v, want %v", b, budget/16)
	}
}

// The spin takes nothing a wait may not: an unwaitable EVD refuses the
// wait at once (with a budget that would otherwise spin for an hour),
// and the event stays queued.
func TestEVDWaitSpinUnwaitable(t *testing.T) {
	srv, cli, req, _, cep := wakeupPair(t)
	(*core.EVD)(req).SetWaitSpin(time.Hour)
	if err := req.SetUnwaitable(); err != nil {
		t.Fatal(err)
	}
	_, _, err := req.Wait(context.Background(), 1)
	if !errors.Is(err, &dat.Error{Code: dat.InvalidState, Sub: dat.InvalidStateEVDUnwaitable}) {
		t.Fatalf("wait on an unwaitable EVD: %v, want DAT_INVALID_STATE (EVD unwaitable)", err)
	}
	if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 3, srv.Buf.RMRTriplet(0, 8), dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if _, _, err := req.Wait(context.Background(), 1); err == nil {
		t.Fatal("an unwaitable EVD's wait took an event")
	}
	if err := req.ClearUnwaitable(); err != nil {
		t.Fatal(err)
	}
	if ev, _, err := req.Wait(context.Background(), 1); err != nil || ev.DTO.Cookie != 3 {
		t.Fatalf("wait after clear_unwaitable: %v cookie %d", err, ev.DTO.Cookie)
	}
}
