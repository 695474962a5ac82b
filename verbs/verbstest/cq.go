package verbstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

var cqTests = []testCase{
	{"CreateInvalid", testCQCreateInvalid},
	{"PollBatch", testCQPollBatch},
	{"WaitTimeout", testCQWaitTimeout},
	{"WaitSolicitedOnly", testCQWaitSolicited},
	{"Overflow", testCQOverflow},
	{"Resize", testCQResize},
	{"DestroyInUse", testCQDestroyInUse},
}

// waitLen waits until cq holds at least n completions. CQ.Wait wakes on the
// first completion only, so this is a bounded settle loop.
func waitLen(t testing.TB, cq verbs.CQ, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for cq.Len() < n {
		if time.Now().After(deadline) {
			t.Fatalf("CQ holds %d completions after %v, want %d", cq.Len(), timeout, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// flushedRecvs creates a QP whose receive CQ is cq, posts n receives with
// IDs 0..n-1 and moves it to ERROR, which completes all n with
// WCWRFlushErr. It needs no connection.
func flushedRecvs(t testing.TB, dev verbs.Device, pd verbs.PD, cq verbs.CQ, n int) verbs.QP {
	t.Helper()
	scq, err := dev.CreateCQ(verbs.CQAttr{Depth: 4})
	expectNoErr(t, "CreateCQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: scq, RecvCQ: cq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxRecvWR: n, MaxSendSGE: 1, MaxRecvSGE: 1}})
	expectNoErr(t, "CreateQP", err)
	expectNoErr(t, "Modify(INIT)", qp.Modify(verbs.QPStateInit))
	buf := NewBuf(t, pd, 64, verbs.AccessLocalWrite)
	for i := range n {
		MustPostRecv(t, qp, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{buf.SGE(0, 64)}})
	}
	expectNoErr(t, "Modify(ERROR)", qp.Modify(verbs.QPStateError))
	return qp
}

func testCQCreateInvalid(t *testing.T, e *env) {
	for _, depth := range []int{0, -1} {
		cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: depth})
		if err == nil {
			cq.Destroy()
		}
		expectErr(t, "CreateCQ(depth "+itoa(depth)+")", err, verbs.ErrInvalidArgument)
	}
	max := e.a.Query().MaxCQE
	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: max + 1})
	if err == nil {
		cq.Destroy()
	}
	expectErr(t, "CreateCQ(MaxCQE+1)", err, verbs.ErrInvalidArgument, verbs.ErrNoResources)
	cq, err = e.a.CreateCQ(verbs.CQAttr{Depth: 5})
	expectNoErr(t, "CreateCQ(5)", err)
	if cq.Depth() < 5 || cq.Len() != 0 {
		t.Errorf("new CQ: Depth() = %d, Len() = %d; want >= 5 and 0", cq.Depth(), cq.Len())
	}
}

func testCQPollBatch(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	const n = 10
	for i := range n {
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(i*8, 8)}})
	}
	for i := range n {
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(100 + i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(i*8, 8)}})
	}
	for _, side := range []struct {
		cq     verbs.CQ
		qpn    uint32
		baseID uint64
		op     verbs.WCOpcode
	}{{sb.CQ, sb.QP.QPN(), 100, verbs.WCSend}, {sa.CQ, sa.QP.QPN(), 0, verbs.WCRecv}} {
		var got []verbs.WC
		batch := make([]verbs.WC, 3)
		ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
		for len(got) < n {
			k := side.cq.Poll(batch)
			if k > len(batch) || k < 0 {
				t.Fatalf("Poll into 3 slots returned %d", k)
			}
			got = append(got, batch[:k]...)
			if k == 0 {
				if err := side.cq.Wait(ctx, false); err != nil {
					t.Fatalf("Wait after %d of %d completions: %v", len(got), n, err)
				}
				if side.cq.Len() == 0 {
					t.Fatal("Wait returned nil but Len() is 0")
				}
			}
		}
		cancel()
		if len(got) != n {
			t.Fatalf("polled %d completions, want %d", len(got), n)
		}
		for i, wc := range got {
			ExpectWC(t, wc, side.baseID+uint64(i), verbs.WCSuccess, side.op)
			if wc.QPN != side.qpn {
				t.Errorf("completion %d has QPN %d, want %d", i, wc.QPN, side.qpn)
			}
		}
		if k := side.cq.Poll(batch); k != 0 || side.cq.Len() != 0 {
			t.Fatalf("CQ not empty after all completions: Poll = %d, Len = %d", k, side.cq.Len())
		}
	}
}

func testCQWaitTimeout(t *testing.T, e *env) {
	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 4})
	expectNoErr(t, "CreateCQ", err)
	for _, solicited := range []bool{false, true} {
		const d = 50 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), d)
		// Judged against the context's own deadline: a clock read after
		// WithTimeout starts late whenever the test is descheduled in
		// between, as on a loaded host (a Wait that ended at its deadline
		// can look tens of milliseconds late from such a start).
		deadline, _ := ctx.Deadline()
		err := cq.Wait(ctx, solicited)
		returned := time.Now()
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait(solicitedOnly=%v) on an empty CQ = %v, want context.DeadlineExceeded", solicited, err)
		}
		if returned.Before(deadline) {
			t.Fatalf("Wait returned %v before its deadline", deadline.Sub(returned))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	expectErr(t, "Wait with a cancelled context", cq.Wait(ctx, false), context.Canceled)
}

func testCQWaitSolicited(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	for i := range 3 {
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i + 1), SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	}
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 11, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}})
	waitLen(t, sa.CQ, 1, e.timeout)

	// An unsolicited receive does not satisfy a solicited-only wait.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := sa.CQ.Wait(ctx, true)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait(solicitedOnly) with only an unsolicited receive queued = %v, want context.DeadlineExceeded", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- sa.CQ.Wait(ctx, true) }()
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 12, Opcode: verbs.OpSend, Flags: verbs.SendSolicited, SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}})
	expectNoErr(t, "Wait(solicitedOnly) for a solicited receive", <-woke)
	wcs := PollN(t, sa.CQ, 2, e.timeout)
	ExpectWC(t, wcs[0], 1, verbs.WCSuccess, verbs.WCRecv)
	ExpectWC(t, wcs[1], 2, verbs.WCSuccess, verbs.WCRecv)
	if wcs[0].Flags&verbs.WCSolicited != 0 || wcs[1].Flags&verbs.WCSolicited == 0 {
		t.Fatalf("solicited flags: plain send %v, solicited send %v", wcs[0].Flags, wcs[1].Flags)
	}

	// An error completion satisfies a solicited-only wait too.
	go func() { woke <- sa.CQ.Wait(ctx, true) }()
	expectNoErr(t, "Modify(ERROR)", sa.QP.Modify(verbs.QPStateError))
	expectNoErr(t, "Wait(solicitedOnly) for a flushed receive", <-woke)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 3, verbs.WCWRFlushErr, verbs.WCRecv)
}

func testCQOverflow(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 2})
	expectNoErr(t, "CreateCQ", err)
	d := cq.Depth()
	if d < 2 || d > 4096 {
		t.Fatalf("CreateCQ(2).Depth() = %d", d)
	}
	before := e.a.Stats().CQOverflows
	flushedRecvs(t, e.a, pd, cq, d+1)
	ev := WaitAsyncEvent(t, e.a, e.timeout, func(ev verbs.AsyncEvent) bool { return ev.Type == verbs.EventCQErr })
	if ev.CQ != cq {
		t.Errorf("EventCQErr names CQ %v, want the overflowed one", ev.CQ)
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	expectErr(t, "Wait on an overflowed CQ", cq.Wait(ctx, false), verbs.ErrCQOverflow)
	if got := e.a.Stats().CQOverflows; got <= before {
		t.Errorf("Stats().CQOverflows = %d after an overflow, was %d", got, before)
	}
}

func testCQResize(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 4})
	expectNoErr(t, "CreateCQ", err)
	flushedRecvs(t, e.a, pd, cq, 3)
	waitLen(t, cq, 3, e.timeout)
	d := cq.Depth()
	for _, depth := range []int{2, 0} {
		expectErr(t, "Resize("+itoa(depth)+") below the queued completions", cq.Resize(depth), verbs.ErrInvalidArgument)
		if cq.Depth() != d || cq.Len() != 3 {
			t.Fatalf("failed Resize changed the CQ: Depth %d -> %d, Len %d", d, cq.Depth(), cq.Len())
		}
	}
	expectNoErr(t, "Resize(64)", cq.Resize(64))
	if cq.Depth() < 64 || cq.Len() != 3 {
		t.Fatalf("after Resize(64): Depth() = %d, Len() = %d; want >= 64 and 3", cq.Depth(), cq.Len())
	}
	for i, wc := range PollN(t, cq, 3, e.timeout) {
		ExpectWC(t, wc, uint64(i), verbs.WCWRFlushErr, verbs.WCRecv)
	}
}

func testCQDestroyInUse(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	scq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 4})
	expectNoErr(t, "CreateCQ", err)
	rcq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 4})
	expectNoErr(t, "CreateCQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: scq, RecvCQ: rcq, Caps: smallCaps})
	expectNoErr(t, "CreateQP", err)
	expectErr(t, "Destroy of a send CQ in use", scq.Destroy(), verbs.ErrInUse)
	expectErr(t, "Destroy of a receive CQ in use", rcq.Destroy(), verbs.ErrInUse)
	expectNoErr(t, "QP.Destroy", qp.Destroy())

	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- scq.Wait(ctx, false) }()
	expectNoErr(t, "Destroy after the QP is gone", scq.Destroy())
	expectErr(t, "Wait blocked across Destroy", <-woke, verbs.ErrClosed)
	expectErr(t, "second Destroy", scq.Destroy(), verbs.ErrClosed)
	expectErr(t, "Wait after Destroy", scq.Wait(ctx, false), verbs.ErrClosed)
	if n := scq.Poll(make([]verbs.WC, 1)); n != 0 {
		t.Errorf("Poll after Destroy = %d", n)
	}
	expectErr(t, "Resize after Destroy", scq.Resize(8), verbs.ErrClosed)
	expectNoErr(t, "Destroy", rcq.Destroy())
}
