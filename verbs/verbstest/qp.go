package verbstest

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

var qpTests = []testCase{
	{"Create", testQPCreate},
	{"CreateInvalid", testQPCreateInvalid},
	{"Transitions", testQPTransitions},
	{"PostByState", testQPPostByState},
	{"SendQueueFull", testQPSendQueueFull},
	{"RecvQueueFull", testQPRecvQueueFull},
	{"TooManySGE", testQPTooManySGE},
	{"InvalidOpcode", testQPInvalidOpcode},
}

// qpKit is a PD and CQ for QPs that need no connection.
type qpKit struct {
	dev verbs.Device
	pd  verbs.PD
	cq  verbs.CQ
	buf *Buf
}

func newQPKit(t testing.TB, dev verbs.Device) *qpKit {
	t.Helper()
	pd, err := dev.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := dev.CreateCQ(verbs.CQAttr{Depth: 256})
	expectNoErr(t, "CreateCQ", err)
	return &qpKit{dev: dev, pd: pd, cq: cq, buf: NewBuf(t, pd, 4096, DefaultAccess)}
}

func (k *qpKit) qp(t testing.TB, caps verbs.QPCaps) verbs.QP {
	t.Helper()
	qp, err := k.pd.CreateQP(verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: caps})
	expectNoErr(t, "CreateQP", err)
	return qp
}

// pathTo lists the Modify calls that take a new QP to s without a
// connection; SQE is reachable only through a send error.
var pathTo = map[verbs.QPState][]verbs.QPState{
	verbs.QPStateReset: nil,
	verbs.QPStateInit:  {verbs.QPStateInit},
	verbs.QPStateRTR:   {verbs.QPStateInit, verbs.QPStateRTR},
	verbs.QPStateRTS:   {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS},
	verbs.QPStateSQD:   {verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD},
	verbs.QPStateError: {verbs.QPStateError},
}

func driveTo(t testing.TB, qp verbs.QP, s verbs.QPState) {
	t.Helper()
	for _, step := range pathTo[s] {
		from := qp.State()
		if err := qp.Modify(step); err != nil {
			t.Fatalf("Modify %v -> %v (a legal transition): %v", from, step, err)
		}
		if qp.State() != step {
			t.Fatalf("after Modify %v -> %v the QP is in %v", from, step, qp.State())
		}
	}
}

func testQPCreate(t *testing.T, e *env) {
	k := newQPKit(t, e.a)
	caps := verbs.QPCaps{MaxSendWR: 5, MaxRecvWR: 7, MaxSendSGE: 1, MaxRecvSGE: min(2, e.a.Query().MaxSGE)}
	seen := make(map[uint32]bool)
	for i := range 4 {
		qp, err := k.pd.CreateQP(verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: caps, SignalAll: i%2 == 1})
		expectNoErr(t, "CreateQP", err)
		if seen[qp.QPN()] {
			t.Fatalf("QPN %d handed out twice", qp.QPN())
		}
		seen[qp.QPN()] = true
		if qp.State() != verbs.QPStateReset {
			t.Fatalf("new QP in %v, want RESET", qp.State())
		}
		if qp.PD() != k.pd {
			t.Error("QP.PD() is not the PD that created it")
		}
		a := qp.Query()
		if a.State != verbs.QPStateReset || a.SignalAll != (i%2 == 1) {
			t.Errorf("Query() = %+v: state or SignalAll wrong", a)
		}
		c := a.Caps
		if c.MaxSendWR < caps.MaxSendWR || c.MaxRecvWR < caps.MaxRecvWR || c.MaxSendSGE < caps.MaxSendSGE || c.MaxRecvSGE < caps.MaxRecvSGE {
			t.Errorf("Query().Caps = %+v, smaller than requested %+v", c, caps)
		}
	}
}

func testQPCreateInvalid(t *testing.T, e *env) {
	k := newQPKit(t, e.a)
	attr := e.a.Query()
	for _, tc := range []struct {
		name string
		init verbs.QPInitAttr
		errs []error
	}{
		{"no send CQ", verbs.QPInitAttr{RecvCQ: k.cq, Caps: smallCaps}, []error{verbs.ErrInvalidArgument}},
		{"no receive CQ", verbs.QPInitAttr{SendCQ: k.cq, Caps: smallCaps}, []error{verbs.ErrInvalidArgument}},
		{"zero MaxSendWR", verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: verbs.QPCaps{MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}, []error{verbs.ErrInvalidArgument}},
		{"zero MaxRecvWR without SRQ", verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}, []error{verbs.ErrInvalidArgument}},
		{"MaxSendWR beyond the device", verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: verbs.QPCaps{MaxSendWR: attr.MaxQPWR + 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}}, []error{verbs.ErrInvalidArgument, verbs.ErrNoResources}},
		{"MaxSendSGE beyond the device", verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: attr.MaxSGE + 1, MaxRecvSGE: 1}}, []error{verbs.ErrInvalidArgument, verbs.ErrNoResources}},
		{"MaxRecvSGE beyond the device", verbs.QPInitAttr{SendCQ: k.cq, RecvCQ: k.cq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: attr.MaxSGE + 1}}, []error{verbs.ErrInvalidArgument, verbs.ErrNoResources}},
	} {
		qp, err := k.pd.CreateQP(tc.init)
		if err == nil {
			qp.Destroy()
		}
		expectErr(t, "CreateQP with "+tc.name, err, tc.errs...)
	}
}

func testQPTransitions(t *testing.T, e *env) {
	k := newQPKit(t, e.a)
	all := []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS, verbs.QPStateSQD, verbs.QPStateSQE, verbs.QPStateError}
	for _, from := range all {
		if from == verbs.QPStateSQE {
			continue // only a failed send enters SQE
		}
		for _, to := range append(all, verbs.QPState(99)) {
			qp := k.qp(t, smallCaps)
			driveTo(t, qp, from)
			err := qp.Modify(to)
			switch {
			case to == verbs.QPState(99):
				expectErr(t, "Modify to an unknown state", err, verbs.ErrInvalidState, verbs.ErrInvalidArgument)
				if qp.State() != from {
					t.Errorf("refused Modify %v -> %v left the QP in %v", from, to, qp.State())
				}
			case verbs.ValidTransition(from, to):
				if err != nil {
					t.Errorf("Modify %v -> %v (legal): %v", from, to, err)
				} else if qp.State() != to || qp.Query().State != to {
					t.Errorf("after Modify %v -> %v: State() = %v, Query().State = %v", from, to, qp.State(), qp.Query().State)
				}
			default:
				if !errIsAny(err, verbs.ErrInvalidState) {
					t.Errorf("Modify %v -> %v (illegal) = %v, want ErrInvalidState", from, to, err)
				}
				if qp.State() != from {
					t.Errorf("refused Modify %v -> %v left the QP in %v", from, to, qp.State())
				}
			}
			expectNoErr(t, "Destroy", qp.Destroy())
		}
	}
	// Drain the flush of nothing and the SQ_DRAINED events of the SQD QPs:
	// none of this may have produced a completion, as no QP had work.
	NoWC(t, k.cq)
}

func testQPPostByState(t *testing.T, e *env) {
	k := newQPKit(t, e.a)
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{k.buf.SGE(0, 8)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{k.buf.SGE(0, 8)}}}
	for _, s := range []verbs.QPState{verbs.QPStateReset, verbs.QPStateInit, verbs.QPStateRTR} {
		qp := k.qp(t, smallCaps)
		driveTo(t, qp, s)
		n, err := qp.PostSend(send)
		if n != 0 || !errIsAny(err, verbs.ErrInvalidState) {
			t.Errorf("PostSend in %v = %d, %v; want 0, ErrInvalidState", s, n, err)
		}
		n, err = qp.PostRecv(recv)
		if s == verbs.QPStateReset {
			if n != 0 || !errIsAny(err, verbs.ErrInvalidState) {
				t.Errorf("PostRecv in RESET = %d, %v; want 0, ErrInvalidState", n, err)
			}
		} else if n != 1 || err != nil {
			t.Errorf("PostRecv in %v = %d, %v; want 1, nil", s, n, err)
		}
		expectNoErr(t, "Destroy", qp.Destroy())
		if s != verbs.QPStateReset {
			// Destroy flushes what is outstanding.
			ExpectWC(t, PollOne(t, k.cq, e.timeout), 2, verbs.WCWRFlushErr, verbs.WCRecv)
		}
		NoWC(t, k.cq)
	}

	qp := k.qp(t, smallCaps)
	driveTo(t, qp, verbs.QPStateRTS)
	n, err := qp.PostSend(send)
	if n != 0 || !errIsAny(err, verbs.ErrNotConnected) {
		t.Errorf("PostSend on an unconnected QP in RTS = %d, %v; want 0, ErrNotConnected", n, err)
	}

	// In ERROR both queues accept requests and flush them at once, even
	// an unsignaled send: failed and flushed requests always complete.
	expectNoErr(t, "Modify(ERROR)", qp.Modify(verbs.QPStateError))
	MustPostRecv(t, qp, recv...)
	ExpectWC(t, PollOne(t, k.cq, e.timeout), 2, verbs.WCWRFlushErr, verbs.WCRecv)
	MustPostSend(t, qp, send...)
	wc := PollOne(t, k.cq, e.timeout)
	ExpectWC(t, wc, 1, verbs.WCWRFlushErr, verbs.WCSend)
	if wc.QPN != qp.QPN() {
		t.Errorf("flushed send completion has QPN %d, want %d", wc.QPN, qp.QPN())
	}
	NoWC(t, k.cq)
}

func testQPSendQueueFull(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{Caps: verbs.QPCaps{MaxSendWR: 8}})
	depth := sb.QP.Query().Caps.MaxSendWR
	if depth < 8 || depth > 4096 {
		t.Fatalf("QP created with MaxSendWR 8 reports %d", depth)
	}
	// SQD holds new sends until the return to RTS, so they stay
	// outstanding as long as the test wants.
	expectNoErr(t, "Modify(SQD)", sb.QP.Modify(verbs.QPStateSQD))
	WaitAsyncEvent(t, e.b, e.timeout, func(ev verbs.AsyncEvent) bool {
		return ev.Type == verbs.EventSQDrained && ev.QP == sb.QP
	})
	wrs := make([]verbs.SendWR, depth+2)
	for i := range wrs {
		Fill(sb.Buf.B[i*16:(i+1)*16], uint64(i))
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sb.Buf.SGE(i*16, 16)}, RemoteAddr: sa.Buf.Addr(i * 16), RKey: sa.Buf.RKey()}
	}
	n, err := sb.QP.PostSend(wrs)
	if n != depth || !errIsAny(err, verbs.ErrQueueFull) {
		t.Fatalf("posting %d sends to a queue of %d = %d, %v; want %d, ErrQueueFull", len(wrs), depth, n, err, depth)
	}
	n, err = sb.QP.PostSend(wrs[depth:])
	if n != 0 || !errIsAny(err, verbs.ErrQueueFull) {
		t.Fatalf("posting to a full send queue = %d, %v; want 0, ErrQueueFull", n, err)
	}
	expectNoErr(t, "Modify(RTS) from SQD", sb.QP.Modify(verbs.QPStateRTS))
	for i, wc := range PollN(t, sb.CQ, depth, e.timeout) {
		ExpectWC(t, wc, uint64(i), verbs.WCSuccess, verbs.WCRDMAWrite)
	}
	// A Send behind the Writes proves they were placed.
	RoundTrip(t, sb, sa, 0, 1, e.timeout)
	expectBytes(t, "memory written by the held RDMA Writes", sa.Buf.B[:depth*16], sb.Buf.B[:depth*16])
	NoWC(t, sb.CQ)
}

func testQPRecvQueueFull(t *testing.T, e *env) {
	k := newQPKit(t, e.a)
	qp := k.qp(t, verbs.QPCaps{MaxSendWR: 1, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1})
	depth := qp.Query().Caps.MaxRecvWR
	driveTo(t, qp, verbs.QPStateInit)
	wrs := make([]verbs.RecvWR, depth+1)
	for i := range wrs {
		wrs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{k.buf.SGE(0, 8)}}
	}
	n, err := qp.PostRecv(wrs)
	if n != depth || !errIsAny(err, verbs.ErrQueueFull) {
		t.Fatalf("posting %d receives to a queue of %d = %d, %v; want %d, ErrQueueFull", len(wrs), depth, n, err, depth)
	}
	n, err = qp.PostRecv(wrs[:1])
	if n != 0 || !errIsAny(err, verbs.ErrQueueFull) {
		t.Fatalf("posting to a full receive queue = %d, %v; want 0, ErrQueueFull", n, err)
	}
	// Exactly depth receives were queued: ERROR flushes them in order.
	expectNoErr(t, "Modify(ERROR)", qp.Modify(verbs.QPStateError))
	for i, wc := range PollN(t, k.cq, depth, e.timeout) {
		ExpectWC(t, wc, uint64(i), verbs.WCWRFlushErr, verbs.WCRecv)
	}
	NoWC(t, k.cq)
}

func testQPTooManySGE(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	caps := sb.QP.Query().Caps
	sgl := func(n int) []verbs.SGE {
		s := make([]verbs.SGE, n)
		for i := range s {
			s[i] = sb.Buf.SGE(i*8, 8)
		}
		return s
	}
	good := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGL: sgl(1), RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
	bad := good
	bad.ID, bad.SGL = 2, sgl(caps.MaxSendSGE+1)
	n, err := sb.QP.PostSend([]verbs.SendWR{good, bad, good})
	if n != 1 || !errIsAny(err, verbs.ErrTooManySGE) {
		t.Fatalf("PostSend with %d SGEs on a QP of MaxSendSGE %d = %d, %v; want 1, ErrTooManySGE", len(bad.SGL), caps.MaxSendSGE, n, err)
	}
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRDMAWrite)

	if maxRead := e.b.Query().MaxSGERead; maxRead < caps.MaxSendSGE {
		read := verbs.SendWR{ID: 3, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SGL: sgl(maxRead + 1), RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
		n, err = sb.QP.PostSend([]verbs.SendWR{read})
		if n != 0 || !errIsAny(err, verbs.ErrTooManySGE, verbs.ErrInvalidArgument) {
			t.Fatalf("RDMA Read with %d local SGEs (MaxSGERead %d) = %d, %v; want 0, ErrTooManySGE", maxRead+1, maxRead, n, err)
		}
	}

	rcaps := sa.QP.Query().Caps
	rs := make([]verbs.SGE, rcaps.MaxRecvSGE+1)
	for i := range rs {
		rs[i] = sa.Buf.SGE(i*8, 8)
	}
	n, err = sa.QP.PostRecv([]verbs.RecvWR{{ID: 1, SGL: rs[:1]}, {ID: 2, SGL: rs}})
	if n != 1 || !errIsAny(err, verbs.ErrTooManySGE) {
		t.Fatalf("PostRecv with %d SGEs on a QP of MaxRecvSGE %d = %d, %v; want 1, ErrTooManySGE", len(rs), rcaps.MaxRecvSGE, n, err)
	}
	// The queues are intact: the one receive posted takes a message.
	Fill(sb.Buf.B[:8], 5)
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 4, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sgl(1)})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 4, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRecv)
	expectBytes(t, "message received after a refused PostRecv", sa.Buf.B[:8], sb.Buf.B[:8])
}

func testQPInvalidOpcode(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	n, err := sb.QP.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.Opcode(200), Flags: verbs.SendSignaled}})
	if n != 0 || !errIsAny(err, verbs.ErrInvalidArgument) {
		t.Fatalf("PostSend with opcode 200 = %d, %v; want 0, ErrInvalidArgument", n, err)
	}
	RoundTrip(t, sb, sa, 8, 2, e.timeout)
}
