package dattest

import (
	"fmt"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/srq"
)

// testRecvQueryShared: EPs sharing an SRQ report exact counts whether
// none of them, or several at once, hold a buffer in progress: idle, after
// their messages completed but before the completions are dequeued, and
// while all of them receive large messages concurrently (each holds at
// most one buffer then, and never reports DAT_VALUE_UNKNOWN).
func testRecvQueryShared(t *testing.T, e *env) {
	const conns, big, rounds = 3, 1 << 20, 4
	r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8}, Conns: conns, BufSize: conns*big + 4096})
	small := conns * big
	for k := 0; k < 6; k++ {
		if err := r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(small+64*k, 64)}, dat.DTOCookie(k)); err != nil {
			t.Fatal(err)
		}
	}
	want := func(when string) {
		t.Helper()
		for i, c := range r.Conns {
			if n, span, err := c.Srv.RecvQuery(); err != nil || n != 0 || span != 0 {
				t.Fatalf("%s: connection %d: recv_query %d %d %v, want 0 0", when, i, n, span, err)
			}
		}
	}
	want("idle")
	for i := range r.Conns {
		r.Send(t, i, 0, 32)
	}
	r.WaitAvailable(t, 3)
	// The buffers left the SRQ when the messages began; wait (threshold 3)
	// until all three completions were generated, taking only the first.
	// Nobody holds a buffer in progress now, dequeued or not.
	ctx, cancel := deadline()
	ev, _, err := r.RecvEVDs[0].Wait(ctx, conns)
	cancel()
	if err != nil || ev.Number != dat.DTOCompletionEvent || ev.DTO.Status != dat.DTOSuccess {
		t.Fatalf("evd_wait(threshold %d): %v %+v", conns, err, ev)
	}
	want("completed, two not dequeued")
	for range conns - 1 {
		Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
	}
	want("dequeued")

	// The rest of the small buffers go first; drain them.
	for i := 0; i < 3; i++ {
		r.Send(t, i, 0, 16)
	}
	for range 3 {
		Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
	}
	want("small buffers used up")

	stop := make(chan struct{})
	done := make(chan struct{})
	var bad string
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i, c := range r.Conns {
				if n, span, err := c.Srv.RecvQuery(); err != nil || n < 0 || n > 1 || span != n {
					bad = fmt.Sprintf("connection %d: recv_query %d %d %v while receiving one message", i, n, span, err)
				}
			}
		}
	}()
	for round := 0; round < rounds; round++ {
		for i := range r.Conns {
			if err := r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(i*big, big)}, dat.DTOCookie(100*round+i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range r.Conns {
			r.Send(t, i, 0, big)
		}
		for range r.Conns {
			ev := Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
			if ev.DTO.Status != dat.DTOSuccess || ev.DTO.Length != big {
				t.Fatalf("round %d: %+v", round, ev.DTO)
			}
			for i, c := range r.Conns {
				if ev.DTO.EP != dat.Handle(c.Srv) {
					continue
				}
				if n, _, err := c.Srv.RecvQuery(); err != nil || n != 0 {
					t.Fatalf("round %d: connection %d: recv_query %d %v after its completion was dequeued, want 0", round, i, n, err)
				}
			}
		}
	}
	close(stop)
	<-done
	if bad != "" {
		t.Fatal(bad)
	}
	want("after the concurrent rounds")
}

// testFlushMidMessage: a receive caught by a disconnect while its message
// is partly placed (a multi-segment buffer, a message of many DDP
// segments) completes with DAT_DTO_ERR_FLUSHED on that EP's recv EVD; it
// is not put back on the SRQ, whose other buffers stay posted for the
// next connection.
func testFlushMidMessage(t *testing.T, e *env) {
	const half = 4 << 20
	r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8, MaxRecvIOV: 2}, Conns: 1, BufSize: 2*half + 4096})
	big := []dat.LMRTriplet{r.Srv.Buf.Triplet(0, half), r.Srv.Buf.Triplet(half, half)}
	c := r.Conns[0]
	recvEVD := c.RecvEVD
	caught := false
	var cookie dat.DTOCookie
	for attempt := 0; attempt < 5 && !caught; attempt++ {
		cookie = dat.DTOCookie(100 + attempt)
		if err := r.SRQ.PostRecv(big, cookie); err != nil {
			t.Fatal(err)
		}
		r.Send(t, 0, 0, 2*half)
		// Until the message completes, the EP is the SRQ's only taker, so
		// recv_query says exactly when it holds the buffer in progress.
		deadline := time.Now().Add(DefaultTimeout)
		for {
			if n, _, _ := c.Srv.RecvQuery(); n == 1 {
				caught = true
				break
			}
			if ev, ok := TryEvent(t, recvEVD); ok {
				if ev.DTO.Status != dat.DTOSuccess || ev.DTO.Cookie != cookie {
					t.Fatalf("attempt %d: %+v", attempt, ev.DTO)
				}
				break // completed before it was seen in progress: again
			}
			if time.Now().After(deadline) {
				t.Fatal("the message neither arrived nor completed")
			}
		}
	}
	if !caught {
		t.Skip("the message always completed before it could be caught in progress")
	}
	for k := 0; k < 2; k++ {
		if err := r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(2*half+64*k, 64)}, dat.DTOCookie(200+k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Srv.Disconnect(dat.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	ev := Next(t, recvEVD)
	if ev.Number != dat.DTOCompletionEvent || ev.DTO.Status != dat.DTOErrFlushed || ev.DTO.Cookie != cookie || ev.DTO.EP != dat.Handle(c.Srv) {
		t.Fatalf("buffer in progress completed with %v %+v, want DAT_DTO_ERR_FLUSHED for cookie %d", ev.Number, ev.DTO, cookie)
	}
	if ev, ok := WaitEventFor(t, recvEVD, 50*time.Millisecond); ok {
		t.Fatalf("more completions after the flush: %+v", ev.DTO)
	}
	// Not reposted: the two small buffers are all the SRQ has.
	if p := r.WaitAvailable(t, 2); p.Outstanding != 2 {
		t.Fatalf("outstanding %d, want 2", p.Outstanding)
	}
	// The next connection takes them in order.
	waitConnEvent(t, r.Srv.EVD, c.Srv)
	waitConnEvent(t, r.Cli.EVD, c.Cli)
	i := r.Connect(t, &dat.EPAttr{})
	r.Send(t, i, 0, 16)
	ev = Expect(t, r.Conns[i].RecvEVD, dat.DTOCompletionEvent)
	if ev.DTO.Cookie != 200 || ev.DTO.Length != 16 || ev.DTO.EP != dat.Handle(r.Conns[i].Srv) {
		t.Fatalf("next message: %+v", ev.DTO)
	}
}
