package dattest

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/lmr"
)

var handleTests = []testCase{
	{"UseAfterFree", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		x := s.NewEP(t, nil)
		r, err := lmr.CreateRMR(s.PZ)
		if err != nil {
			t.Fatal(err)
		}
		cno, err := evd.CreateCNO(e.a, nil)
		if err != nil {
			t.Fatal(err)
		}
		psp, _, err := ep.CreatePSPAny(e.a, s.EVD, dat.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []func() error{psp.Free, x.Free, r.Free, s.Buf.Free, cno.Free} {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.EVD.Free(); err != nil {
			t.Fatal(err)
		}
		if err := s.PZ.Free(); err != nil {
			t.Fatal(err)
		}
		WantErr(t, x.Free(), dat.InvalidHandle, dat.InvalidHandleEP)
		WantErr(t, x.PostRecv(nil, 1, 0), dat.InvalidHandle, dat.InvalidHandleEP)
		WantErr(t, x.PostSend(nil, 1, 0), dat.InvalidHandle, dat.InvalidHandleEP)
		_, err = x.Query()
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleEP)
		WantErr(t, r.Free(), dat.InvalidHandle, dat.InvalidHandleRMR)
		WantErr(t, s.Buf.Free(), dat.InvalidHandle, dat.InvalidHandleLMR)
		WantErr(t, cno.Free(), dat.InvalidHandle, dat.InvalidHandleCNO)
		WantErr(t, psp.Free(), dat.InvalidHandle, dat.InvalidHandlePSP)
		WantErr(t, s.PZ.Free(), dat.InvalidHandle, dat.InvalidHandlePZ)
		_, err = s.EVD.Dequeue()
		WantErr(t, err, dat.InvalidHandle, dat.NoSubtype)
		_, err = ep.Create(e.a, s.PZ, nil, nil, nil, nil)
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandlePZ)
		_, err = s.PZ.Query()
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandlePZ)
		_, err = x.ConsumerContext()
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleEP)
		if x.HandleType() != dat.HandleTypeEP || s.PZ.HandleType() != dat.HandleTypePZ || r.HandleType() != dat.HandleTypeRMR {
			t.Fatal("handle types")
		}
	}},
	{"ConsumerContext", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		for _, h := range []dat.Handle{e.a, s.PZ, s.EVD} {
			if err := h.SetConsumerContext(h.HandleType()); err != nil {
				t.Fatal(err)
			}
			got, err := h.ConsumerContext()
			if err != nil || got != h.HandleType() {
				t.Fatalf("%v: context %v %v", h.HandleType(), got, err)
			}
		}
	}},
	{"CloseIA", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		s.NewEP(t, nil)
		// Graceful close refuses while objects exist (dapltest hwconn 3).
		WantErr(t, e.a.Close(dat.CloseGraceful), dat.InvalidState, dat.InvalidStateIAInUse)
		// A waiter is aborted by an abrupt close.
		done := make(chan error, 1)
		go func() {
			ctx, cancel := deadline()
			defer cancel()
			_, _, err := s.EVD.Wait(ctx, 1)
			done <- err
		}()
		waitWaiter(t, s.EVD)
		if err := e.a.Close(dat.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
		WantErr(t, <-done, dat.Abort, dat.NoSubtype)
		WantErr(t, e.a.Close(dat.CloseAbrupt), dat.InvalidHandle, dat.InvalidHandleIA)
		_, err := e.a.CreatePZ()
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleIA)
		WantErr(t, s.PZ.Free(), dat.InvalidHandle, dat.InvalidHandlePZ)
	}},
	{"GracefulClose", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		s.Buf.Free()
		s.EVD.Free()
		s.PZ.Free()
		if err := e.a.Close(dat.CloseGraceful); err != nil {
			t.Fatal(err)
		}
	}},
	{"Query", func(t *testing.T, e *env) {
		a, p, err := e.a.Query()
		if err != nil || !a.Address.IsValid() || a.MaxEPs <= 0 || p.MaxPrivateDataSize <= 0 || !p.IsThreadSafe {
			t.Fatalf("ia_query: %+v %+v %v", a, p, err)
		}
		if a.Address != e.a.Addr() {
			t.Fatal("address")
		}
		s := NewSide(t, e.a, 4096)
		x := s.NewEP(t, nil)
		if ia2, err := s.PZ.Query(); err != nil || ia2 != e.a {
			t.Fatal("pz_query")
		}
		q, err := x.Query()
		if err != nil || q.State != dat.EPStateUnconnected || q.PZ != s.PZ || q.RecvEVD != s.EVD || q.Attr.MaxRecvDTOs == 0 {
			t.Fatalf("ep_query %+v %v", q, err)
		}
		lp, err := s.Buf.Query()
		if err != nil || lp.Length != 4096 || lp.PZ != s.PZ || lp.LMRContext != s.Buf.Context() || lp.RMRContext == 0 {
			t.Fatalf("lmr_query %+v %v", lp, err)
		}
		ep2, err := evd.Async(e.a).Query()
		if err != nil || ep2.Flags != dat.EVDAsync {
			t.Fatalf("async evd_query %+v %v", ep2, err)
		}
		psp, qual, err := ep.CreatePSPAny(e.a, s.EVD, dat.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		pp, err := psp.Query()
		if err != nil || pp.ConnQual != qual || pp.EVD != s.EVD {
			t.Fatalf("psp_query %+v %v", pp, err)
		}
		psp.Free()
	}},
}

// waitWaiter waits until a goroutine blocks in e.Wait: a Dequeue then
// fails with DAT_INVALID_STATE / EVD_WAITER.
func waitWaiter(t testing.TB, e *evd.EVD) {
	t.Helper()
	waitFor(t, "a waiter blocked in evd_wait", func() bool {
		_, err := e.Dequeue()
		var de *dat.Error
		return errors.As(err, &de) && de.Code == dat.InvalidState
	})
}

var evdTests = []testCase{
	{"DequeueEmpty", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		_, err := s.EVD.Dequeue()
		WantErr(t, err, dat.QueueEmpty, dat.NoSubtype)
		if n := testing.AllocsPerRun(100, func() { s.EVD.Dequeue() }); n != 0 {
			t.Fatalf("empty dequeue allocates %v", n)
		}
	}},
	{"WaitTimeout", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		start := time.Now() // before the deadline is set: it cannot come sooner than 50ms after this
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, n, err := s.EVD.Wait(ctx, 1)
		WantErr(t, err, dat.TimeoutExpired, dat.NoSubtype)
		if el := time.Since(start); el < 50*time.Millisecond || n != 0 {
			t.Fatalf("returned after %v with %d", el, n)
		}
		ctx, cancel = context.WithCancel(context.Background())
		cancel()
		_, _, err = s.EVD.Wait(ctx, 1)
		WantErr(t, err, dat.InterruptedCall, dat.NoSubtype)
	}},
	{"Threshold", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		ctx, cancel := deadline()
		defer cancel()
		_, _, err := s.EVD.Wait(ctx, 0)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, _, err = s.EVD.Wait(ctx, 257)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		done := make(chan int, 1)
		go func() {
			ev, n, err := s.EVD.Wait(ctx, 3)
			if err != nil || ev.Software != 1 {
				t.Errorf("wait: %v %+v", err, ev)
			}
			done <- n
		}()
		waitWaiter(t, s.EVD)
		for i := 1; i <= 3; i++ {
			if err := s.EVD.PostSE(i); err != nil {
				t.Fatal(err)
			}
		}
		if n := <-done; n != 2 {
			t.Fatalf("nmore %d", n)
		}
		for i := 2; i <= 3; i++ {
			if ev, err := s.EVD.Dequeue(); err != nil || ev.Software != i || ev.Number != dat.SoftwareEvent || ev.EVD != s.EVD {
				t.Fatalf("dequeue %d: %+v %v", i, ev, err)
			}
		}
	}},
	{"WaitBackground", func(t *testing.T, e *env) {
		// A wait whose context cannot end blocks in the CQ itself, not
		// through the EVD's watcher: a DTO completion, a software event,
		// set_unwaitable and evd_free's teardown (IA close) each end it.
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		_, cep := Connect(t, srv, cli, nil)
		type result struct {
			ev  dat.Event
			err error
		}
		wait := func(x *evd.EVD) chan result {
			r := make(chan result, 1)
			go func() {
				ev, _, err := x.Wait(context.Background(), 1)
				r <- result{ev, err}
			}()
			waitWaiter(t, x)
			return r
		}
		r := wait(cli.EVD)
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 5, srv.Buf.RMRTriplet(0, 8), 0); err != nil {
			t.Fatal(err)
		}
		if got := <-r; got.err != nil || got.ev.DTO.Cookie != 5 {
			t.Fatalf("woken by a completion: %v %+v", got.err, got.ev)
		}
		r = wait(cli.EVD)
		if err := cli.EVD.PostSE("x"); err != nil {
			t.Fatal(err)
		}
		if got := <-r; got.err != nil || got.ev.Number != dat.SoftwareEvent || got.ev.Software != "x" {
			t.Fatalf("woken by a software event: %v %+v", got.err, got.ev)
		}
		r = wait(cli.EVD)
		cli.EVD.SetUnwaitable()
		WantErr(t, (<-r).err, dat.InvalidState, dat.NoSubtype)
		cli.EVD.ClearUnwaitable()
		x, err := evd.Create(e.b, 4, nil, dat.EVDDTO)
		if err != nil {
			t.Fatal(err)
		}
		r = wait(x)
		e.b.Close(dat.CloseAbrupt)
		WantErr(t, (<-r).err, dat.Abort, dat.NoSubtype)
	}},
	{"PostSEFull", func(t *testing.T, e *env) {
		x, err := evd.Create(e.a, 4, nil, dat.EVDSoftware)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if err := x.PostSE(i); err != nil {
				t.Fatal(err)
			}
		}
		WantErr(t, x.PostSE(9), dat.QueueFull, dat.NoSubtype)
		WantErr(t, x.Resize(3), dat.InvalidState, dat.NoSubtype)
		if err := x.Resize(8); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if ev, err := x.Dequeue(); err != nil || ev.Software != i {
				t.Fatalf("%d: %v %v", i, ev.Software, err)
			}
		}
		y, _ := evd.Create(e.a, 4, nil, dat.EVDDTO)
		WantErr(t, y.PostSE(1), dat.InvalidParameter, dat.NoSubtype)
		_, err = evd.Create(e.a, 0, nil, dat.EVDDTO)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = evd.Create(e.a, 4, nil, 0x2)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
	}},
	{"Unwaitable", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		done := make(chan error, 1)
		go func() {
			ctx, cancel := deadline()
			defer cancel()
			_, _, err := s.EVD.Wait(ctx, 1)
			done <- err
		}()
		waitWaiter(t, s.EVD)
		WantErr(t, s.EVD.Free(), dat.InvalidState, dat.InvalidStateEVDInUse)
		s.EVD.SetUnwaitable()
		WantErr(t, <-done, dat.InvalidState, dat.InvalidStateEVDUnwaitable)
		ctx, cancel := deadline()
		defer cancel()
		_, _, err := s.EVD.Wait(ctx, 1)
		WantErr(t, err, dat.InvalidState, dat.InvalidStateEVDUnwaitable)
		s.EVD.PostSE("x")
		if ev, err := s.EVD.Dequeue(); err != nil || ev.Software != "x" {
			t.Fatal("dequeue on an unwaitable EVD")
		}
		s.EVD.ClearUnwaitable()
		s.EVD.PostSE("y")
		if ev, _, err := s.EVD.Wait(ctx, 1); err != nil || ev.Software != "y" {
			t.Fatal(err)
		}
	}},
	{"CNO", func(t *testing.T, e *env) {
		cno, err := evd.CreateCNO(e.a, "agent")
		if err != nil {
			t.Fatal(err)
		}
		x, err := evd.Create(e.a, 8, cno, dat.EVDSoftware)
		if err != nil {
			t.Fatal(err)
		}
		WantErr(t, cno.Free(), dat.InvalidState, dat.InvalidStateCNOInUse)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err = cno.Wait(ctx)
		WantErr(t, err, dat.QueueEmpty, dat.NoSubtype)
		got := make(chan *evd.EVD, 1)
		go func() {
			ctx, cancel := deadline()
			defer cancel()
			w, err := cno.Wait(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- w
		}()
		x.PostSE(1)
		if w := <-got; w != x {
			t.Fatalf("cno_wait returned %v", w)
		}
		x.Disable()
		x.Dequeue()
		x.PostSE(2)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel2()
		if w, err := cno.Wait(ctx2); err == nil {
			t.Fatalf("disabled EVD triggered the CNO: %v", w)
		}
		x.Enable()
		ctx3, cancel3 := deadline()
		defer cancel3()
		if w, err := cno.Wait(ctx3); err != nil || w != x {
			t.Fatalf("enabled EVD: %v %v", w, err)
		}
		if _, a, err := cno.Query(); err != nil || a != "agent" {
			t.Fatal("cno_query")
		}
		x.ModifyCNO(nil)
		if err := cno.Free(); err != nil {
			t.Fatal(err)
		}
	}},
	{"FreeInUse", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		x := s.NewEP(t, nil)
		WantErr(t, s.EVD.Free(), dat.InvalidState, dat.InvalidStateEVDInUse)
		WantErr(t, evd.Async(e.a).Free(), dat.InvalidState, dat.NoSubtype)
		x.Free()
		if err := s.EVD.Free(); err != nil {
			t.Fatal(err)
		}
	}},
}

var memTests = []testCase{
	{"PZInUse", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		WantErr(t, s.PZ.Free(), dat.InvalidState, dat.InvalidStatePZInUse) // LMR (dapltest pz 2)
		s.Buf.Free()
		x := s.NewEP(t, nil)
		WantErr(t, s.PZ.Free(), dat.InvalidState, dat.InvalidStatePZInUse) // EP (dapltest pz 1)
		x.Free()
		r, _ := lmr.CreateRMR(s.PZ)
		WantErr(t, s.PZ.Free(), dat.InvalidState, dat.InvalidStatePZInUse)
		r.Free()
		if err := s.PZ.Free(); err != nil {
			t.Fatal(err)
		}
	}},
	{"LMRCreate", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		_, err := lmr.Create(e.a, s.PZ, nil, dat.MemPrivAll, dat.VATypeVA)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype) // size 0 (dapltest mem 2)
		_, err = lmr.Create(e.a, nil, make([]byte, 8), dat.MemPrivAll, dat.VATypeVA)
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandlePZ) // no PZ (dapltest mem 3)
		_, err = lmr.Create(e.a, s.PZ, make([]byte, 8), dat.MemPrivAll, dat.VAType(2))
		WantErr(t, err, dat.InvalidParameter, dat.InvalidArg7)
		var nilLMR *lmr.LMR
		WantErr(t, nilLMR.Free(), dat.InvalidHandle, dat.InvalidHandleLMR) // dapltest mem 4
		l, err := lmr.Create(e.a, s.PZ, make([]byte, 100), dat.MemPrivLocalRead|dat.MemPrivLocalWrite, dat.VATypeVA)
		if err != nil || l.RMRContext() != 0 || l.Context() == 0 {
			t.Fatalf("local-only LMR: %v rmr_context %#x", err, l.RMRContext())
		}
		a, err := lmr.Alloc(e.a, s.PZ, 1<<20, dat.MemPrivAll)
		if err != nil || len(a.Bytes()) != 1<<20 || uint64(a.Addr())%4096 != 0 {
			t.Fatalf("alloc: %v", err)
		}
		d, err := lmr.CreateFromLMR(e.a, s.PZ, a, dat.MemPrivLocalRead)
		if err != nil || &d.Bytes()[0] != &a.Bytes()[0] || d.Context() == a.Context() {
			t.Fatalf("lmr from lmr: %v", err)
		}
		if err := lmr.SyncRDMARead(e.a, []dat.LMRTriplet{a.Triplet(0, 4096)}); err != nil {
			t.Fatal(err)
		}
		WantErr(t, lmr.SyncRDMAWrite(e.a, []dat.LMRTriplet{a.Triplet(1<<20-1, 2)}), dat.InvalidParameter, dat.NoSubtype)
		for _, x := range []*lmr.LMR{d, a, l} {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}},
}

var stateTests = []testCase{
	{"Unconnected", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		x := s.NewEP(t, nil)
		is := func(err error) { t.Helper(); WantErr(t, err, dat.InvalidState, dat.InvalidStateEPUnconnected) }
		is(x.PostSend([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1, 0))
		is(x.PostRDMAWrite([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1, s.Buf.RMRTriplet(0, 8), 0))
		is(x.PostRDMARead([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1, s.Buf.RMRTriplet(0, 8), 0))
		is(x.Disconnect(dat.CloseAbrupt))
		r, _ := lmr.CreateRMR(s.PZ)
		_, err := r.Bind(s.Buf, s.Buf.Triplet(0, 8), dat.MemPrivRemoteRead, x, 1, 0)
		is(err)
		// Receives may be posted in every state; Reset of UNCONNECTED keeps them.
		if err := x.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 64)}, 7, 0); err != nil {
			t.Fatal(err)
		}
		if err := x.Reset(); err != nil {
			t.Fatal(err)
		}
		if st, ri, qi, err := x.Status(); err != nil || st != dat.EPStateUnconnected || ri || !qi {
			t.Fatalf("status %v recv idle %v req idle %v %v", st, ri, qi, err)
		}
		// Freeing an EP with a posted receive (dapltest endpoint 2).
		if err := x.Free(); err != nil {
			t.Fatal(err)
		}
		ExpectEmpty(t, s.EVD)
	}},
	{"Reserved", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		x := s.NewEP(t, nil)
		rsp, err := ep.CreateRSP(e.a, 0, x, s.EVD)
		if err != nil {
			// qualifier 0 may be refused by providers that need a port
			rsp, err = ep.CreateRSP(e.a, 23456, x, s.EVD)
			if err != nil {
				t.Fatal(err)
			}
		}
		if x.State() != dat.EPStateReserved {
			t.Fatalf("state %v", x.State())
		}
		WantErr(t, x.Free(), dat.InvalidState, dat.InvalidStateEPReserved)
		WantErr(t, x.Connect(e.b.Addr(), 1, time.Second, nil, 0, 0), dat.InvalidState, dat.InvalidStateEPReserved)
		WantErr(t, x.Reset(), dat.InvalidState, dat.InvalidStateEPReserved)
		_, err = ep.CreateRSP(e.a, 23457, x, s.EVD)
		WantErr(t, err, dat.InvalidState, dat.InvalidStateEPReserved)
		if err := rsp.Free(); err != nil {
			t.Fatal(err)
		}
		if x.State() != dat.EPStateUnconnected {
			t.Fatalf("state after rsp_free %v", x.State())
		}
	}},
	{"Connected", func(t *testing.T, e *env) {
		srv, cli := NewSide(t, e.a, 4096), NewSide(t, e.b, 4096)
		sep, cep := Connect(t, srv, cli, nil)
		is := func(err error) { t.Helper(); WantErr(t, err, dat.InvalidState, dat.InvalidStateEPConnected) }
		is(cep.Connect(e.a.Addr(), 1, time.Second, nil, 0, 0))
		is(cep.Reset())
		_, err := ep.CreateRSP(e.a, 23458, sep, srv.EVD)
		is(err)
		Disconnect(t, srv, cli, sep, cep)
		// DISCONNECTED: posts are flushed at once, reset returns to UNCONNECTED.
		if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 5, 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 5, dat.DTOErrFlushed)
		if err := cep.PostRecv([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 6, 0); err != nil {
			t.Fatal(err)
		}
		ExpectDTO(t, cli.EVD, 6, dat.DTOErrFlushed)
		if err := cep.Disconnect(dat.CloseAbrupt); err != nil { // no-op
			t.Fatal(err)
		}
		WantErr(t, cep.Connect(e.a.Addr(), 1, time.Second, nil, 0, 0), dat.InvalidState, dat.InvalidStateEPDisconnected)
		if err := cep.Reset(); err != nil || cep.State() != dat.EPStateUnconnected {
			t.Fatalf("reset: %v %v", err, cep.State())
		}
	}},
	{"Params", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		_, err := ep.Create(e.a, s.PZ, nil, nil, nil, &dat.EPAttr{MaxRecvIOV: 1000})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		_, err = ep.Create(e.a, s.PZ, nil, nil, nil, &dat.EPAttr{RequestCompletionFlags: dat.CompletionSolicitedWait})
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		cr, _ := evd.Create(e.a, 4, nil, dat.EVDCR)
		_, err = ep.Create(e.a, s.PZ, cr, nil, nil, nil)
		WantErr(t, err, dat.InvalidHandle, dat.InvalidHandleEVDRecv)
		x := s.NewEP(t, nil)
		WantErr(t, x.Connect(e.b.Addr(), 70000, time.Second, nil, 0, 0), dat.InvalidParameter, dat.NoSubtype)
		WantErr(t, x.Connect(e.b.Addr(), 1, time.Second, make([]byte, 1000), 0, 0), dat.InvalidParameter, dat.NoSubtype)
		WantErr(t, x.Connect(netipZero, 1, time.Second, nil, 0, 0), dat.InvalidAddress, dat.NoSubtype)
		WantErr(t, x.Disconnect(7), dat.InvalidParameter, dat.NoSubtype)
		// Modify in UNCONNECTED rebuilds the QP on other EVDs.
		y, _ := evd.Create(e.a, 16, nil, dat.EVDDTO|dat.EVDConnection)
		if err := x.Modify(s.PZ, y, y, y, &dat.EPAttr{MaxRecvDTOs: 8}); err != nil {
			t.Fatal(err)
		}
		if p, _ := x.Query(); p.RecvEVD != y || p.Attr.MaxRecvDTOs != 8 {
			t.Fatalf("after modify %+v", p)
		}
		x.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1, 0)
		WantErr(t, x.Modify(s.PZ, s.EVD, s.EVD, s.EVD, nil), dat.InvalidState, dat.NoSubtype)
	}},
}

var netipZero netip.Addr
