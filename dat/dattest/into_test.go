package dattest

import (
	"context"
	"errors"
	"testing"

	"github.com/godapl/godapl/dat"
)

// TestIntoWritesUnion checks what evd.WaitInto and DequeueInto promise
// about the caller's Event, which they write like C's DAT_EVENT union:
// EVD, Number and every field of the member Number names, whatever the
// Event held before (the other members may keep it); nothing at all on
// error.
func TestIntoWritesUnion(t *testing.T) {
	srv, cli, sep, cep := memPair(t)
	iov := []dat.LMRTriplet{cli.Buf.Triplet(0, 64)}
	remote := srv.Buf.RMRTriplet(1024, 64)
	ctx, cancel := deadline()
	defer cancel()

	// stale is what the caller's Event held: every DTO field set to what
	// no completion below reports.
	stale := func() dat.Event {
		return dat.Event{
			Number:   dat.SoftwareEvent,
			EVD:      srv.EVD,
			DTO:      dat.DTOCompletion{EP: sep, Cookie: 99, Status: dat.DTOErrRemoteAccess, Op: dat.DTOReceiveWithInvalidate, Length: 999, RMRContext: 7},
			Software: "stale",
		}
	}
	isStale := func(ev *dat.Event) bool {
		return ev.Number == dat.SoftwareEvent && ev.EVD == srv.EVD && ev.DTO == stale().DTO && ev.Software == "stale"
	}
	waitInto := func(ev *dat.Event) error { _, err := cli.EVD.WaitInto(ctx, 1, ev); return err }
	ways := []struct {
		name string
		into func(*dat.Event) error
	}{{"WaitInto", waitInto}, {"DequeueInto", cli.EVD.DequeueInto}}

	// Straight from the CQ (the hot path), and behind a software event
	// (through the EVD's ring).
	cookie := dat.DTOCookie(0)
	for _, behind := range []bool{false, true} {
		for _, w := range ways {
			cookie++
			if behind {
				if err := cli.EVD.PostSE("first"); err != nil {
					t.Fatal(err)
				}
			}
			if err := cep.PostRDMAWrite(iov, cookie, remote, dat.CompletionDefault); err != nil {
				t.Fatal(err)
			}
			if behind {
				ev := stale()
				if err := waitInto(&ev); err != nil || ev.Number != dat.SoftwareEvent || ev.Software != "first" || ev.EVD != cli.EVD {
					t.Fatalf("software event: %v %+v", err, ev)
				}
			}
			ev := stale()
			for {
				err := w.into(&ev)
				if err == nil {
					break
				}
				if !errors.Is(err, dat.ErrQueueEmpty) || !isStale(&ev) {
					t.Fatalf("%s: %v, wrote %+v", w.name, err, ev)
				}
			}
			want := dat.DTOCompletion{EP: cep, Cookie: cookie, Status: dat.DTOSuccess, Op: dat.DTORDMAWrite, Length: 64}
			if ev.Number != dat.DTOCompletionEvent || ev.EVD != cli.EVD || ev.DTO != want {
				t.Fatalf("%s (behind a software event: %v): %v EVD %v DTO %+v, want the DTO %+v of the client's EVD",
					w.name, behind, ev.Number, ev.EVD, ev.DTO, want)
			}
		}
	}

	// Failures on an empty EVD write nothing.
	ev := stale()
	if err := cli.EVD.DequeueInto(&ev); !errors.Is(err, dat.ErrQueueEmpty) || !isStale(&ev) {
		t.Fatalf("dequeue of an empty EVD: %v, wrote %+v", err, ev)
	}
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := cli.EVD.WaitInto(cctx, 1, &ev); err == nil || !isStale(&ev) {
		t.Fatalf("wait on an empty EVD with a cancelled context: %v, wrote %+v", err, ev)
	}

	// A flushed receive reports no length and no invalidated context.
	riov := []dat.LMRTriplet{srv.Buf.Triplet(0, 64)}
	if err := sep.PostRecv(riov, 42, dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := cep.Disconnect(dat.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	for {
		ev := stale()
		if _, err := srv.EVD.WaitInto(ctx, 1, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Number != dat.DTOCompletionEvent {
			continue
		}
		want := dat.DTOCompletion{EP: sep, Cookie: 42, Status: dat.DTOErrFlushed, Op: dat.DTOReceive}
		if ev.EVD != srv.EVD || ev.DTO != want {
			t.Fatalf("flushed receive: EVD %v DTO %+v, want %+v", ev.EVD, ev.DTO, want)
		}
		return
	}
}
