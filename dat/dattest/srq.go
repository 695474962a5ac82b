package dattest

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/srq"
)

// srqTests are the dat_srq_* and ep_create_with_srq cases: every return
// code and corner case of dat_srq_post_recv(3DAT) and dat-api.md §7.
var srqTests = []testCase{
	{"CreateQueryFree", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		iaAttr, pattr, _ := e.a.Query()
		if !pattr.SRQSupported || iaAttr.MaxRecvPerSRQ <= 0 {
			t.Fatalf("SRQ not advertised: %v %d", pattr.SRQSupported, iaAttr.MaxRecvPerSRQ)
		}
		_, err := srq.Create(e.a, s.PZ, srq.Attr{})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: iaAttr.MaxRecvPerSRQ + 1})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: 4, LowWatermark: 5})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = srq.Create(e.a, nil, srq.Attr{MaxRecvDTOs: 4})
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandlePZ)
		q, err := srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: 16, MaxRecvIOV: 2})
		if err != nil {
			t.Fatal(err)
		}
		p, err := q.Query()
		if err != nil || p.State != dat.SRQStateOperational || p.PZ != s.PZ || p.IA != e.a ||
			p.MaxRecvDTOs != 16 || p.MaxRecvIOV != 2 || p.LowWatermark != 0 || p.Available != 0 || p.Outstanding != 0 {
			t.Fatalf("query %+v %v", p, err)
		}
		if q.HandleType() != dat.HandleTypeSRQ {
			t.Fatal("handle type")
		}
		WantErr(t, s.PZ.Free(), dat.InvalidState, dat.InvalidStatePZInUse)
		if err := q.Free(); err != nil {
			t.Fatal(err)
		}
		WantErr(t, q.Free(), dat.InvalidHandle, dat.InvalidHandleSRQ)
		WantErr(t, q.PostRecv(nil, 1), dat.InvalidHandle, dat.InvalidHandleSRQ)
		_, err = q.Query()
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleSRQ)
		WantErr(t, q.SetLW(0), dat.InvalidHandle, dat.InvalidHandleSRQ)
		WantErr(t, q.Resize(4), dat.InvalidHandle, dat.InvalidHandleSRQ)
		var nilSRQ *srq.SRQ
		WantErr(t, nilSRQ.PostRecv(nil, 1), dat.InvalidHandle, dat.InvalidHandleSRQ)
	}},
	{"PostRecvErrors", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		q, err := srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: 2, MaxRecvIOV: 2})
		if err != nil {
			t.Fatal(err)
		}
		ro, _ := lmr.Create(e.a, s.PZ, make([]byte, 64), dat.MemPrivLocalRead, dat.VATypeVA)
		pz2, _ := e.a.CreatePZ()
		other, _ := lmr.Create(e.a, pz2, make([]byte, 64), dat.MemPrivAll, dat.VATypeVA)
		defer func() { other.Free(); pz2.Free() }()
		outside := s.Buf.Triplet(4000, 200)
		unknown := s.Buf.Triplet(0, 8)
		unknown.LMRContext ^= 0x5a5a00
		cases := []struct {
			iov  []dat.LMRTriplet
			code dat.Code
		}{
			{[]dat.LMRTriplet{outside}, dat.InvalidParameter},
			{[]dat.LMRTriplet{s.Buf.Triplet(0, 8), outside}, dat.InvalidParameter},
			{[]dat.LMRTriplet{ro.Triplet(0, 8)}, dat.PrivilegesViolation},
			{[]dat.LMRTriplet{unknown}, dat.PrivilegesViolation},
			{[]dat.LMRTriplet{other.Triplet(0, 8)}, dat.ProtectionViolation},
			{[]dat.LMRTriplet{s.Buf.Triplet(0, 1), s.Buf.Triplet(1, 1), s.Buf.Triplet(2, 1)}, dat.InvalidParameter},
		}
		for i, c := range cases {
			WantErr(t, q.PostRecv(c.iov, dat.DTOCookie(i)), c.code, dat.NoSubtype)
			if p, _ := q.Query(); p.Available != 0 || p.Outstanding != 0 {
				t.Fatalf("case %d changed the SRQ: %+v", i, p)
			}
		}
		// Still usable, and full at max_recv_dtos.
		if err := q.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1); err != nil {
			t.Fatal(err)
		}
		if err := q.PostRecv(nil, 2); err != nil {
			t.Fatal(err)
		}
		WantErr(t, q.PostRecv(nil, 3), dat.InsufficientResources, dat.NoSubtype)
		if p, _ := q.Query(); p.Available != 2 || p.Outstanding != 2 {
			t.Fatalf("query %+v", p)
		}
		ro.Free()
	}},
	{"CanonicalCounts", func(t *testing.T, e *env) {
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 10}, Conns: 1})
		for i := 0; i < 3; i++ {
			if err := r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(i*64, 64)}, dat.DTOCookie(100+i)); err != nil {
				t.Fatal(err)
			}
		}
		wantCounts(t, r.SRQ, 3, 3)
		r.Send(t, 0, 0, 10)
		r.WaitAvailable(t, 2)
		wantCounts(t, r.SRQ, 2, 3)
		ev := Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
		if ev.DTO.EP != dat.Handle(r.Conns[0].Srv) || ev.DTO.Length != 10 || ev.DTO.Op != dat.DTOReceive {
			t.Fatalf("completion %+v", ev.DTO)
		}
		wantCounts(t, r.SRQ, 2, 2)
		WantErr(t, r.SRQ.Free(), dat.InvalidState, dat.InvalidStateSRQInUse)
	}},
	{"SegmentFill", func(t *testing.T, e *env) {
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8, MaxRecvIOV: 4}, Conns: 1})
		src := r.Cli.Buf.Bytes()
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		dst := r.Srv.Buf.Bytes()
		for i := range dst {
			dst[i] = 0xEE
		}
		// Segments of 8 bytes at 0, 100, 200, 300; a 12-byte message fills
		// the first, half the second, nothing of the others.
		iov := []dat.LMRTriplet{r.Srv.Buf.Triplet(0, 8), r.Srv.Buf.Triplet(100, 8), r.Srv.Buf.Triplet(200, 8), r.Srv.Buf.Triplet(300, 8)}
		if err := r.SRQ.PostRecv(iov, 1); err != nil {
			t.Fatal(err)
		}
		if err := r.SRQ.PostRecv(nil, 2); err != nil { // a zero-size receive
			t.Fatal(err)
		}
		r.Send(t, 0, 0, 12)
		r.Send(t, 0, 0, 0)
		d := Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent).DTO
		if d.Cookie != 1 || d.Length != 12 {
			t.Fatalf("first completion %+v", d)
		}
		if !bytes.Equal(dst[0:8], src[0:8]) || !bytes.Equal(dst[100:104], src[8:12]) {
			t.Fatal("leading segments not filled in order")
		}
		for _, b := range append(append([]byte{}, dst[104:108]...), append(dst[200:208], dst[300:308]...)...) {
			if b != 0xEE {
				t.Fatal("segment after the partial one was written")
			}
		}
		d = Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent).DTO
		if d.Cookie != 2 || d.Length != 0 {
			t.Fatalf("zero-size completion %+v", d)
		}
	}},
	{"SharedOrder", func(t *testing.T, e *env) {
		const conns, per = 3, 12
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: conns * per}, Conns: conns, RecvEVDs: 2})
		for i := 0; i < conns*per; i++ {
			if err := r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(i*16, 16)}, dat.DTOCookie(i)); err != nil {
				t.Fatal(err)
			}
		}
		// Message k of connection c is 1+c+k bytes long: the length names it.
		var wg sync.WaitGroup
		for c := 0; c < conns; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < per; k++ {
					r.Conns[c].Cli.PostSend([]dat.LMRTriplet{r.Cli.Buf.Triplet(0, 1+c+k)}, 0, dat.CompletionSuppress)
				}
			}()
		}
		wg.Wait()
		seen := map[dat.DTOCookie]bool{}
		next := make([]int, conns)
		for n := 0; n < conns*per; n++ {
			var ev dat.Event
			var ok bool
			for !ok {
				for _, x := range r.RecvEVDs {
					if ev, ok = TryEvent(t, x); ok {
						break
					}
				}
				if !ok {
					ev, ok = WaitEventFor(t, r.RecvEVDs[n%2], time.Millisecond)
				}
			}
			d := ev.DTO
			c := connOf(r, d.EP)
			if c < 0 || d.Status != dat.DTOSuccess || seen[d.Cookie] {
				t.Fatalf("completion %+v (connection %d, seen %v)", d, c, seen[d.Cookie])
			}
			if ev.EVD != dat.Handle(r.Conns[c].RecvEVD) {
				t.Fatalf("connection %d completed on another EP's recv EVD", c)
			}
			seen[d.Cookie] = true
			if int(d.Length) != 1+c+next[c] {
				t.Fatalf("connection %d: message of %d bytes, want message %d (%d bytes)", c, d.Length, next[c], 1+c+next[c])
			}
			next[c]++
		}
		wantCounts(t, r.SRQ, 0, 0)
	}},
	{"DisconnectKeepsPosted", func(t *testing.T, e *env) {
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8}, Conns: 2})
		for i := 0; i < 5; i++ {
			r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(i*64, 64)}, dat.DTOCookie(i))
		}
		r.Send(t, 0, 0, 4)
		r.WaitAvailable(t, 4)
		Disconnect(t, r.Srv, r.Cli, r.Conns[0].Srv, r.Conns[0].Cli)
		// The completed receive is still delivered, nothing is flushed.
		if d := Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent).DTO; d.EP != dat.Handle(r.Conns[0].Srv) || d.Length != 4 {
			t.Fatalf("completion %+v", d)
		}
		ExpectEmpty(t, r.RecvEVDs[0])
		wantCounts(t, r.SRQ, 4, 4)
		for k := 0; k < 4; k++ {
			r.Send(t, 1, 0, 8)
		}
		for k := 0; k < 4; k++ {
			if d := Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent).DTO; d.EP != dat.Handle(r.Conns[1].Srv) {
				t.Fatalf("completion %+v", d)
			}
		}
		wantCounts(t, r.SRQ, 0, 0)
		// The disconnected EP still holds the SRQ until it is freed.
		WantErr(t, r.SRQ.Free(), dat.InvalidState, dat.InvalidStateSRQInUse)
	}},
	{"LowWatermark", func(t *testing.T, e *env) {
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 8}, Conns: 1})
		async := evd.Async(e.a)
		WantErr(t, r.SRQ.SetLW(9), dat.InvalidParameter, dat.NoSubtype)
		WantErr(t, r.SRQ.SetLW(-1), dat.InvalidParameter, dat.NoSubtype)
		for i := 0; i < 5; i++ {
			r.SRQ.PostRecv(nil, dat.DTOCookie(i))
		}
		if err := r.SRQ.SetLW(3); err != nil {
			t.Fatal(err)
		}
		take := func(avail int) {
			r.Send(t, 0, 0, 0)
			r.WaitAvailable(t, avail)
			Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
		}
		take(4)
		take(3) // 3 is not below 3
		ExpectEmpty(t, async)
		take(2)
		expectLW(t, async, r.SRQ)
		take(1) // fired once: no second event
		if p, _ := r.SRQ.Query(); p.LowWatermark != 3 {
			t.Fatalf("low watermark %d after firing", p.LowWatermark)
		}
		// Re-armed below the current count: at once, during SetLW.
		if err := r.SRQ.SetLW(2); err != nil {
			t.Fatal(err)
		}
		expectLW(t, async, r.SRQ)
		// Re-armed above: only when a take goes below.
		if err := r.SRQ.SetLW(1); err != nil {
			t.Fatal(err)
		}
		take(0)
		expectLW(t, async, r.SRQ)
		if err := r.SRQ.SetLW(0); err != nil { // disarmed: never fires
			t.Fatal(err)
		}
		r.SRQ.PostRecv(nil, 9)
		take(0)
		ExpectEmpty(t, async)
	}},
	{"Resize", func(t *testing.T, e *env) {
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 6}, Conns: 1})
		for i := 0; i < 4; i++ {
			r.SRQ.PostRecv(nil, dat.DTOCookie(i))
		}
		r.Send(t, 0, 0, 0)
		r.WaitAvailable(t, 3)
		WantErr(t, r.SRQ.Resize(3), dat.InvalidState, dat.NoSubtype) // 4 outstanding
		WantErr(t, r.SRQ.Resize(0), dat.InvalidParameter, dat.NoSubtype)
		r.SRQ.SetLW(2)
		if err := r.SRQ.Resize(4); err != nil {
			t.Fatal(err)
		}
		wantCounts(t, r.SRQ, 3, 4)
		WantErr(t, r.SRQ.PostRecv(nil, 9), dat.InsufficientResources, dat.NoSubtype)
		Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
		WantErr(t, r.SRQ.Resize(1), dat.InvalidState, dat.NoSubtype) // below the watermark
		// Grow well past the recv EVD's own size: every buffer may complete
		// to the one EVD and none is lost.
		if err := r.SRQ.Resize(300); err != nil {
			t.Fatal(err)
		}
		if p, _ := r.SRQ.Query(); p.MaxRecvDTOs != 300 || p.Available != 3 || p.Outstanding != 3 {
			t.Fatalf("after grow %+v", p)
		}
		for i := 0; i < 297; i++ {
			if err := r.SRQ.PostRecv(nil, dat.DTOCookie(10+i)); err != nil {
				t.Fatal(i, err)
			}
		}
		for i := 0; i < 300; i++ {
			r.Send(t, 0, 0, 0)
			if i%50 == 49 {
				r.WaitAvailable(t, 300-i-1)
			}
		}
		r.WaitAvailable(t, 0)
		wantCounts(t, r.SRQ, 0, 300)
		for i := 0; i < 300; i++ {
			Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent)
		}
		wantCounts(t, r.SRQ, 0, 0)
		drainAsync(evd.Async(e.a))
	}},
	{"EPWithSRQ", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 64)
		q, _ := srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: 4})
		_, err := ep.CreateWithSRQ(e.a, s.PZ, s.EVD, s.EVD, s.EVD, q, nil)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = ep.CreateWithSRQ(e.a, s.PZ, nil, s.EVD, s.EVD, q, &dat.EPAttr{})
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleEVDRecv)
		_, err = ep.CreateWithSRQ(e.a, s.PZ, s.EVD, s.EVD, s.EVD, nil, &dat.EPAttr{})
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleSRQ)
		pz2, _ := e.a.CreatePZ()
		_, err = ep.CreateWithSRQ(e.a, pz2, s.EVD, s.EVD, s.EVD, q, &dat.EPAttr{})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		pz2.Free()
		x, err := ep.CreateWithSRQ(e.a, s.PZ, s.EVD, s.EVD, s.EVD, q, &dat.EPAttr{RecvCompletionFlags: dat.CompletionUnsignalled})
		if err != nil {
			t.Fatal(err)
		}
		if x.SRQ() != q {
			t.Fatal("EP's SRQ")
		}
		WantErr(t, x.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1, 0), dat.InvalidState, dat.InvalidStateSRQInUse)
		if n, span, err := x.RecvQuery(); err != nil || n != 0 || span != 0 {
			t.Fatalf("recv_query %d %d %v", n, span, err)
		}
		// SRQ receives complete signalled: UNSIGNALLED does not make the
		// recv EVD refuse threshold waits.
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		_, _, err = s.EVD.Wait(ctx, 2)
		cancel()
		WantErr(t, err, dat.TimeoutExpired, dat.NoSubtype)
		WantErr(t, q.Free(), dat.InvalidState, dat.InvalidStateSRQInUse)
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
		if err := q.Free(); err != nil {
			t.Fatal(err)
		}
		_, err = ep.CreateWithSRQ(e.a, s.PZ, s.EVD, s.EVD, s.EVD, q, &dat.EPAttr{})
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleSRQ)
	}},
	{"RecvQueryAndWatermark", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		for i := 0; i < 3; i++ {
			sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(i*64, 64)}, dat.DTOCookie(i), 0)
		}
		if n, span, _ := sep.RecvQuery(); n != 3 || span != 3 {
			t.Fatalf("recv_query %d %d, want 3 3", n, span)
		}
		cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 0, dat.CompletionSuppress)
		Expect(t, srv.EVD, dat.DTOCompletionEvent)
		if n, span, _ := sep.RecvQuery(); n != 2 || span != 2 {
			t.Fatalf("recv_query %d %d, want 2 2", n, span)
		}
		async := evd.Async(e.a)
		WantErr(t, sep.SetWatermark(-2, dat.WatermarkInfinite), dat.InvalidParameter, dat.NoSubtype)
		if err := sep.SetWatermark(2, dat.WatermarkInfinite); err != nil {
			t.Fatal(err)
		}
		ExpectEmpty(t, async)
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(512, 64)}, 9, 0) // 3 > 2
		ev := Expect(t, async, dat.AsyncEPSoftHighWatermark)
		if ev.Async.Handle != dat.Handle(sep) || ev.Async.Reason != dat.ReasonSRQWatermark {
			t.Fatalf("event %+v", ev.Async)
		}
		sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(640, 64)}, 10, 0) // one-shot
		ExpectEmpty(t, async)
		// Past the hard watermark the connection breaks.
		if err := sep.SetWatermark(dat.WatermarkInfinite, 3); err != nil {
			t.Fatal(err)
		}
		waitConn(t, srv.EVD, dat.ConnectionEventBroken)
		if sep.State() != dat.EPStateDisconnected {
			t.Fatalf("state %v", sep.State())
		}
	}},
	{"SolicitedWait", func(t *testing.T, e *env) {
		// An SRQ EP with SOLICITED_WAIT: its completions queue, but only a
		// solicited Send wakes a waiter.
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 4}})
		r.Connect(t, &dat.EPAttr{RecvCompletionFlags: dat.CompletionSolicitedWait})
		for i := 0; i < 3; i++ {
			r.SRQ.PostRecv(nil, dat.DTOCookie(i))
		}
		waiter := func(d time.Duration) <-chan error {
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				_, _, err := r.RecvEVDs[0].Wait(ctx, 1)
				done <- err
			}()
			return done
		}
		// Blocked first, then an unsolicited Send: the waiter times out.
		w := waiter(100 * time.Millisecond)
		waitWaiter(t, r.RecvEVDs[0])
		r.Send(t, 0, 0, 0)
		r.WaitAvailable(t, 2)
		WantErr(t, <-w, dat.TimeoutExpired, dat.NoSubtype)
		Expect(t, r.RecvEVDs[0], dat.DTOCompletionEvent) // it was queued all along
		w = waiter(DefaultTimeout)
		waitWaiter(t, r.RecvEVDs[0])
		if err := r.Conns[0].Cli.PostSend(nil, 0, dat.CompletionSuppress|dat.CompletionSolicitedWait); err != nil {
			t.Fatal(err)
		}
		if err := <-w; err != nil {
			t.Fatalf("solicited Send did not wake the waiter: %v", err)
		}
	}},
	{"TooLongAndEmpty", func(t *testing.T, e *env) {
		// A message longer than the buffer it takes completes with
		// LOCAL_LENGTH; a message that finds the SRQ empty ends the
		// connection (iWARP has no receiver-not-ready retry). Either way
		// the other connection and the SRQ carry on.
		r := NewSRQRig(t, e.a, e.b, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 4}, Conns: 3})
		r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(0, 8)}, 1)
		r.Send(t, 0, 0, 16)
		d := ExpectDTO(t, r.RecvEVDs[0], 1, dat.DTOErrLocalLength)
		if d.EP != dat.Handle(r.Conns[0].Srv) {
			t.Fatal("LOCAL_LENGTH on another EP")
		}
		wantCounts(t, r.SRQ, 0, 0)
		r.Send(t, 1, 0, 4) // nothing posted
		waitConnEvent(t, r.Srv.EVD, r.Conns[1].Srv)
		r.SRQ.PostRecv([]dat.LMRTriplet{r.Srv.Buf.Triplet(0, 8)}, 2)
		r.Send(t, 2, 0, 4)
		if d := ExpectDTO(t, r.RecvEVDs[0], 2, dat.DTOSuccess); d.EP != dat.Handle(r.Conns[2].Srv) || d.Length != 4 {
			t.Fatalf("completion %+v", d)
		}
	}},
	{"ConcurrentPost", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		const g, per = 8, 40
		q, _ := srq.Create(e.a, s.PZ, srq.Attr{MaxRecvDTOs: g*per - 5})
		var wg sync.WaitGroup
		var mu sync.Mutex
		ok, full := 0, 0
		for i := 0; i < g; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < per; k++ {
					err := q.PostRecv([]dat.LMRTriplet{s.Buf.Triplet((i*per+k)%4000, 8)}, dat.DTOCookie(i*per+k))
					mu.Lock()
					if err == nil {
						ok++
					} else {
						full++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if ok != g*per-5 || full != 5 {
			t.Fatalf("%d posted, %d refused", ok, full)
		}
		wantCounts(t, q, ok, ok)
		q.Free()
	}},
	{"RecvQueryShared", testRecvQueryShared},
	{"FlushMidMessage", testFlushMidMessage},
}

// waitConnEvent waits until ep's connection ends (DISCONNECTED or
// BROKEN), skipping other EPs' connection events.
func waitConnEvent(t testing.TB, e *evd.EVD, x *ep.EP) {
	t.Helper()
	for {
		ev := Next(t, e)
		if ev.Conn.EP == dat.Handle(x) && (ev.Number == dat.ConnectionEventDisconnected || ev.Number == dat.ConnectionEventBroken) {
			return
		}
	}
}

func wantCounts(t testing.TB, q *srq.SRQ, avail, outstanding int) {
	t.Helper()
	p, err := q.Query()
	if err != nil || p.Available != avail || p.Outstanding != outstanding {
		t.Fatalf("srq_query: available %d outstanding %d (%v), want %d %d", p.Available, p.Outstanding, err, avail, outstanding)
	}
}

func expectLW(t testing.TB, async *evd.EVD, q *srq.SRQ) {
	t.Helper()
	ev := Expect(t, async, dat.AsyncSRQLowWatermark)
	if ev.Async.Handle != dat.Handle(q) || ev.Async.Reason != dat.ReasonSRQWatermark || ev.Number.Stream() != dat.EVDAsync {
		t.Fatalf("low watermark event %+v", ev)
	}
	ExpectEmpty(t, async)
}

func drainAsync(e *evd.EVD) {
	for {
		if _, err := e.Dequeue(); err != nil {
			return
		}
	}
}

func connOf(r *SRQRig, h dat.Handle) int {
	for i, c := range r.Conns {
		if dat.Handle(c.Srv) == h {
			return i
		}
	}
	return -1
}
