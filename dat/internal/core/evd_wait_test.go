package core_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/internal/core"
)

// A waiter that blocks on an EVD whose provider lends its CQ's ring takes
// the completion that wakes it where it lies, as evd_dequeue's hot path
// does, and copies nothing out of the CQ before it sleeps either: on siw
// a Send's receive completion is rarely there when its waiter comes, so
// this is the wait of every such Send. The waiter blocks in CQ.Wait itself
// (with each of waiterCtxs), a Send completes, and the wait must return it without a poll.
func TestEVDBlockedWaitTakesFromRing(t *testing.T) {
	for _, w := range waiterCtxs {
		t.Run(w.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, cli, req, sep, cep := wakeupPair(t)
				if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 100, dat.CompletionDefault); err != nil {
					t.Fatal(err)
				}
				polls := core.CountCQPolls((*core.EVD)(req))
				entered, release := core.GateCQWait((*core.EVD)(req))
				ctx, cancel := w.ctx()
				defer cancel()
				type result struct {
					ev   dat.Event
					more int
					err  error
				}
				done := make(chan result, 1)
				go func() {
					ev, more, err := req.Wait(ctx, 1)
					done <- result{ev, more, err}
				}()
				<-entered
				if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, dat.CompletionDefault); err != nil {
					t.Fatal(err)
				}
				settledCQLen(t, req, 1)
				release()
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("evd_wait slept on with a completion in the CQ")
				}
				if r.err != nil || r.ev.Number != dat.DTOCompletionEvent || r.ev.DTO.Cookie != 1 || r.ev.DTO.Status != dat.DTOSuccess || r.more != 0 {
					t.Fatalf("evd_wait: %v %v cookie %d status %v, %d more; want the send, none more", r.err, r.ev.Number, r.ev.DTO.Cookie, r.ev.DTO.Status, r.more)
				}
				if n := polls.Load(); n != 0 {
					t.Errorf("the wait polled the CQ %d times; want it to take the completion from the lent ring", n)
				}
				dattest.ExpectEmpty(t, req)
			})
		})
	}
}

// A waiter blocked in CQ.Wait itself (its context cannot end) is woken by
// the EVD's teardown when the IA closes under it, and returns DAT_ABORT,
// whether or not the CQ it sleeps on says anything: here the CQ's wait
// ends only through the context the EVD gave it.
func TestEVDDirectWaiterAbortedByClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, cli, req, _, _ := wakeupPair(t)
		entered, release := core.GateCQWait((*core.EVD)(req))
		defer release()
		done := make(chan error, 1)
		go func() {
			_, _, err := req.Wait(context.Background(), 1)
			done <- err
		}()
		<-entered
		closed := make(chan error, 1)
		go func() { closed <- cli.IA.Close(dat.CloseAbrupt) }()
		select {
		case err := <-done:
			dattest.WantErr(t, err, dat.Abort, dat.NoSubtype)
		case <-time.After(10 * time.Second):
			t.Fatal("evd_wait slept on through the close of its IA")
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	})
}

// A waiter whose context can end blocks in CQ.Wait itself, as one whose
// context cannot: with the context's deadline, on which siw's inline
// receive sets its socket's read deadline, and interrupted when the
// context is cancelled. Through the CQ watch every blocking wait on siw
// would cost two goroutine hand-offs more, and the waiter could not
// receive inline.
func TestEVDWaiterWithDeadlineWaitsOnCQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli, req, sep, cep := wakeupPair(t)
		waits := core.RecordCQWaits((*core.EVD)(req))

		// A deadline: the CQ's wait carries it; a completion ends the wait.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		dl, _ := ctx.Deadline()
		done := make(chan error, 1)
		go func() {
			ev, _, err := req.Wait(ctx, 1)
			if err == nil && ev.DTO.Cookie != 1 {
				err = fmt.Errorf("cookie %d, want 1", ev.DTO.Cookie)
			}
			done <- err
		}()
		select {
		case got := <-waits:
			if got.UnixNano() != dl.UnixNano() {
				t.Errorf("the CQ's wait has deadline %v, want the waiter's %v", got, dl)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nobody waits on the CQ")
		}
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 100, dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("evd_wait: %v", err)
		}

		// A cancellation interrupts the waiter in CQ.Wait.
		for len(waits) > 0 {
			<-waits
		}
		ctx2, cancel2 := context.WithCancel(context.Background())
		go func() {
			_, _, err := req.Wait(ctx2, 1)
			done <- err
		}()
		<-waits
		cancel2()
		select {
		case err := <-done:
			dattest.WantErr(t, err, dat.InterruptedCall, dat.SubInterrupted)
		case <-time.After(10 * time.Second):
			t.Fatal("evd_wait slept on after its context was cancelled")
		}
	})
}

// A waiter blocked in CQ.Wait itself is interrupted by the first of two
// events pushed before it takes the EVD's lock again; the second finds
// its wait already ended and must leave it alone: the context is
// cancelled once. Two pushes in a row, a push and a foreign drain, or
// set_unwaitable and the IA's close do this; before 17f5598 the second
// interrupt called the context's dropped cancel (nil) and panicked.
func TestEVDDirectWaiterInterruptedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ias := dattest.OpenMem(t, 1)
		s := dattest.NewSide(t, ias[0], 0)
		entered, release := core.HoldCQWaitReturn((*core.EVD)(s.EVD))
		type result struct {
			ev  dat.Event
			err error
		}
		done := make(chan result, 1)
		go func() {
			ev, _, err := s.EVD.Wait(context.Background(), 1)
			done <- result{ev, err}
		}()
		<-entered
		// The pushes run apart from the test's goroutine: a panic there
		// holds the EVD's lock and hangs the IA's close in the cleanup.
		pushed := make(chan error, 1)
		go func() {
			for i := 1; i <= 2; i++ {
				if err := s.EVD.PostSE(i); err != nil {
					pushed <- err
					return
				}
			}
			pushed <- nil
		}()
		if err := <-pushed; err != nil {
			t.Fatalf("evd_post_se: %v", err)
		}
		release()
		var r result
		select {
		case r = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("evd_wait slept on with two events queued")
		}
		if r.err != nil || r.ev.Number != dat.SoftwareEvent || r.ev.Software != 1 {
			t.Fatalf("evd_wait: %v %v %v, want the first software event", r.err, r.ev.Number, r.ev.Software)
		}
		ev := dattest.Expect(t, s.EVD, dat.SoftwareEvent)
		if ev.Software != 2 {
			t.Fatalf("second event %v, want 2", ev.Software)
		}
		dattest.ExpectEmpty(t, s.EVD)
	})
}

// A waiter owns the EVD (evd_dequeue fails with EVD_WAITER) only once it
// has looked at what is queued and goes to sleep: a completion that
// arrives after that waits for what wakes it (a solicited one, enough
// for the threshold). Owned before its first look, the waiter returned a
// completion that came after dequeue had reported it blocked, and the
// harness's SolicitedWait test, which waits for that report and then
// sends an unsolicited message, saw the waiter return it (5 in 900 runs
// under two CPU burners). The waiter here stops at its first look, in
// the lock of the CQ of a drain (threshold 2: the ring's way).
func TestEVDWaiterOwnsEVDOnlyToSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, cli, req, sep, cep := wakeupPair(t)
		entered, release := core.GateCQLock((*core.EVD)(req))
		released := false
		defer func() {
			if !released {
				release()
			}
		}()
		type result struct {
			ev  dat.Event
			err error
		}
		done := make(chan result, 1)
		go func() {
			ev, _, err := req.Wait(context.Background(), 2)
			done <- result{ev, err}
		}()
		<-entered
		if core.Waiting((*core.EVD)(req)) {
			t.Error("the waiter owns the EVD before its first look at the queue")
		}
		release()
		released = true
		for i := 1; i <= 2; i++ {
			if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, dat.DTOCookie(100+i), dat.CompletionDefault); err != nil {
				t.Fatal(err)
			}
			if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, dat.DTOCookie(i), dat.CompletionDefault); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case r := <-done:
			if r.err != nil || r.ev.DTO.Cookie != 1 {
				t.Fatalf("evd_wait: %v cookie %d, want the first send", r.err, r.ev.DTO.Cookie)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("evd_wait slept on with two completions")
		}
		dattest.ExpectDTO(t, req, 2, dat.DTOSuccess)
		dattest.ExpectEmpty(t, req)
	})
}

// The callback that interrupts a waiter when its context ends stays
// registered after the wait, for the next wait with the same context;
// when that context ends later, it must leave alone a waiter that waits
// with another (here context.Background, in CQ.Wait itself). Woken, a
// waiter on an EVD with SOLICITED_WAIT returns the unsolicited completion
// that came while it slept, as the wake-up it takes every wake for: a
// consumer that cancels each wait's context once the wait is over (defer
// cancel()) could have its next wait returned by the callback.
func TestEVDStaleContextLeavesWaiterAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recv, send := solicitedPair(t)
		waits := core.RecordCQWaits((*core.EVD)(recv))

		// A wait with a context that can end, which it leaves registered.
		ctxA, cancelA := context.WithCancel(context.Background())
		defer cancelA()
		done := make(chan dat.Event, 1)
		go func() {
			ev, _, err := recv.Wait(ctxA, 1)
			if err != nil {
				t.Error(err)
			}
			done <- ev
		}()
		<-waits
		send(1, dat.CompletionSolicitedWait)
		if ev := <-done; ev.DTO.Cookie != 1 {
			t.Fatalf("first wait: %+v", ev.DTO)
		}

		// A wait with context.Background, asleep in CQ.Wait with an
		// unsolicited completion in the CQ, when the first context ends.
		for len(waits) > 0 {
			<-waits
		}
		go func() {
			ev, _, err := recv.Wait(context.Background(), 1)
			if err != nil {
				t.Error(err)
			}
			done <- ev
		}()
		<-waits
		send(2, 0)
		settledCQLen(t, recv, 1)
		cancelA()
		synctest.Wait() // the waiter has gone back to sleep, or returned
		select {
		case ev := <-done:
			t.Fatalf("the end of an earlier wait's context woke the waiter: %+v", ev.DTO)
		default:
		}
		send(3, dat.CompletionSolicitedWait)
		if ev := <-done; ev.DTO.Cookie != 2 {
			t.Fatalf("second wait: %+v, want the unsolicited receive first", ev.DTO)
		}
	})
}

// A drain of the CQ by someone other than the waiter (here evd_resize)
// wakes the waiter only for what would have ended its CQ.Wait: on an EVD
// with SOLICITED_WAIT, a solicited completion (or a failed one), not an
// unsolicited receive, which the woken waiter returned at once.
func TestEVDForeignDrainWakesOnlyForSolicited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recv, send := solicitedPair(t)
		waits := core.RecordCQWaits((*core.EVD)(recv))
		done := make(chan dat.Event, 1)
		go func() {
			ev, _, err := recv.Wait(context.Background(), 1)
			if err != nil {
				t.Error(err)
			}
			done <- ev
		}()
		<-waits
		send(1, 0)
		settledCQLen(t, recv, 1)
		if err := recv.Resize(15); err != nil {
			t.Fatalf("evd_resize: %v", err)
		}
		synctest.Wait() // the waiter has gone back to sleep, or returned
		select {
		case ev := <-done:
			t.Fatalf("a drain of an unsolicited receive woke the waiter: %+v", ev.DTO)
		default:
		}
		send(2, dat.CompletionSolicitedWait)
		if ev := <-done; ev.DTO.Cookie != 1 {
			t.Fatalf("wait: %+v, want the unsolicited receive first", ev.DTO)
		}
		dattest.ExpectDTO(t, recv, 2, dat.DTOSuccess)
	})
}

// solicitedPair connects two mem sides; the server's EP completes its
// receives, with SOLICITED_WAIT, to recv, an EVD of their own, and has
// three posted. send sends a suppressed message from the client with the
// cookie and flags.
func solicitedPair(t *testing.T) (recv *evd.EVD, send func(dat.DTOCookie, dat.CompletionFlags)) {
	t.Helper()
	ias := dattest.OpenMem(t, 2)
	srv, cli := dattest.NewSide(t, ias[0], 4096), dattest.NewSide(t, ias[1], 4096)
	recv, err := evd.Create(srv.IA, 16, nil, dat.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	psp, qual, err := ep.CreatePSPAny(srv.IA, srv.EVD, dat.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	sep, err := ep.Create(srv.IA, srv.PZ, recv, srv.EVD, srv.EVD, &dat.EPAttr{RecvCompletionFlags: dat.CompletionSolicitedWait})
	if err != nil {
		t.Fatal(err)
	}
	cep := cli.NewEP(t, nil)
	dattest.ConnectEPs(t, srv, cli, sep, cep, qual)
	for i := 1; i <= 3; i++ {
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64*i, 64)}, dat.DTOCookie(i), dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
	}
	return recv, func(cookie dat.DTOCookie, flags dat.CompletionFlags) {
		t.Helper()
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, cookie, dat.CompletionSuppress|flags); err != nil {
			t.Fatal(err)
		}
	}
}
