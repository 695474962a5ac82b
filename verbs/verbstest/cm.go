package verbstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

var cmTests = []testCase{
	{"PrivateData", testCMPrivateData},
	{"PrivateDataTooLong", testCMPrivateDataTooLong},
	{"IRDORD", testCMIRDORD},
	{"IRDORDDefaults", testCMIRDORDDefaults},
	{"Reject", testCMReject},
	{"NoListener", testCMNoListener},
	{"ConnectDeadline", testCMConnectDeadline},
	{"ListenerClose", testCMListenerClose},
	{"Backlog", testCMBacklog},
	{"ConnectConnectedQP", testCMConnectConnectedQP},
	{"Disconnect", testCMDisconnect},
	{"DestroyConnectedQP", testCMDestroyConnectedQP},
	{"ModifyErrorTearsDown", testCMModifyError},
}

type connResult struct {
	conn verbs.Conn
	err  error
}

// connectAsync runs Connect in a goroutine, because it returns only when
// the passive side has accepted or rejected.
func connectAsync(ctx context.Context, dev verbs.Device, qp verbs.QP, addr string, p verbs.ConnParam) <-chan connResult {
	ch := make(chan connResult, 1)
	go func() {
		c, err := dev.Connect(ctx, qp, addr, p)
		ch <- connResult{c, err}
	}()
	return ch
}

func listen(t testing.TB, dev verbs.Device, addr string, backlog int) verbs.Listener {
	t.Helper()
	lis, err := dev.Listen(addr, backlog)
	expectNoErr(t, "Listen("+addr+")", err)
	t.Cleanup(func() { lis.Close() })
	return lis
}

func accept(t testing.TB, ctx context.Context, lis verbs.Listener) verbs.ConnRequest {
	t.Helper()
	req, err := lis.Accept(ctx)
	expectNoErr(t, "Accept", err)
	return req
}

func await(t testing.TB, ch <-chan connResult, timeout time.Duration) connResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(timeout):
		t.Fatalf("Connect did not return within %v", timeout)
		return connResult{}
	}
}

func testCMPrivateData(t *testing.T, e *env) {
	for _, n := range []int{0, 1, 100, verbs.MaxPrivateData} {
		ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
		sa, sb := NewSide(t, e.a, PairAttr{}), NewSide(t, e.b, PairAttr{})
		lis := listen(t, e.a, e.addr, 4)
		reqData, repData := Pattern(n, uint64(n)), Pattern(n, uint64(n)+1000)
		ch := connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{PrivateData: reqData})
		req := accept(t, ctx, lis)
		expectPrivData(t, e.b, "ConnRequest.PrivateData", req.PrivateData(), reqData)
		if req.LocalAddr() == nil || req.RemoteAddr() == nil {
			t.Fatal("ConnRequest has no addresses")
		}
		ca, err := req.Accept(sa.QP, verbs.ConnParam{PrivateData: repData})
		expectNoErr(t, "ConnRequest.Accept", err)
		r := await(t, ch, e.timeout)
		expectNoErr(t, "Connect", r.err)
		cb := r.conn
		expectPrivData(t, e.b, "passive Conn.PrivateData (the request's)", ca.PrivateData(), reqData)
		expectPrivData(t, e.a, "active Conn.PrivateData (the reply's)", cb.PrivateData(), repData)

		if ca.QP() != sa.QP || cb.QP() != sb.QP {
			t.Error("Conn.QP() is not the QP that was connected")
		}
		if sa.QP.State() != verbs.QPStateRTS || sb.QP.State() != verbs.QPStateRTS {
			t.Errorf("connected QPs in %v and %v, want RTS", sa.QP.State(), sb.QP.State())
		}
		if got, want := cb.RemoteAddr().String(), lis.Addr().String(); got != want {
			t.Errorf("active RemoteAddr %s, want the listener's %s", got, want)
		}
		if got, want := ca.RemoteAddr().String(), cb.LocalAddr().String(); got != want {
			t.Errorf("passive RemoteAddr %s, want the active LocalAddr %s", got, want)
		}
		if got, want := req.RemoteAddr().String(), cb.LocalAddr().String(); got != want {
			t.Errorf("ConnRequest.RemoteAddr %s, want the active LocalAddr %s", got, want)
		}
		if ca.Err() != nil || cb.Err() != nil {
			t.Errorf("Err of live connections: %v, %v", ca.Err(), cb.Err())
		}
		select {
		case <-ca.Done():
			t.Fatal("passive connection Done while up")
		case <-cb.Done():
			t.Fatal("active connection Done while up")
		default:
		}
		sa.Conn, sb.Conn = ca, cb
		RoundTrip(t, sb, sa, 64, uint64(n), e.timeout)
		expectNoErr(t, "Disconnect", cb.Disconnect())
		WaitDone(t, ca, e.timeout)
		cancel()
	}
}

func testCMPrivateDataTooLong(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	sa, sb := NewSide(t, e.a, PairAttr{}), NewSide(t, e.b, PairAttr{})
	lis := listen(t, e.a, e.addr, 4)
	tooLong := make([]byte, verbs.MaxPrivateData+1)

	_, err := e.b.Connect(ctx, sb.QP, lis.Addr().String(), verbs.ConnParam{PrivateData: tooLong})
	expectErr(t, "Connect with 253 bytes of private data", err, verbs.ErrInvalidArgument)

	ch := connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{})
	req := accept(t, ctx, lis)
	_, err = req.Accept(sa.QP, verbs.ConnParam{PrivateData: tooLong})
	expectErr(t, "Accept with 253 bytes of private data", err, verbs.ErrInvalidArgument)
	expectErr(t, "Reject with 253 bytes of private data", req.Reject(tooLong), verbs.ErrInvalidArgument)
	// The refused calls left the request pending: it can still be accepted.
	ca, err := req.Accept(sa.QP, verbs.ConnParam{PrivateData: []byte("ok")})
	expectNoErr(t, "Accept after a refused Accept", err)
	r := await(t, ch, e.timeout)
	expectNoErr(t, "Connect", r.err)
	expectPrivData(t, e.a, "reply private data", r.conn.PrivateData(), []byte("ok"))
	sa.Conn, sb.Conn = ca, r.conn
	RoundTrip(t, sa, sb, 10, 3, e.timeout)
}

func testCMIRDORD(t *testing.T, e *env) {
	aa, ba := e.a.Query(), e.b.Query()
	// The active side asks for ird/ord; the passive side must be able to
	// mirror them (its IRD serves the active ORD and vice versa).
	ird := min(3, ba.MaxIRD, aa.MaxORD)
	ord := min(2, ba.MaxORD, aa.MaxIRD)
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	sa, sb := NewSide(t, e.a, PairAttr{}), NewSide(t, e.b, PairAttr{})
	expectNoErr(t, "Modify(INIT) before Connect", sb.QP.Modify(verbs.QPStateInit))
	lis := listen(t, e.a, e.addr, 4)
	ch := connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{ResponderResources: ird, InitiatorDepth: ord})
	req := accept(t, ctx, lis)
	if req.ResponderResources() != ord || req.InitiatorDepth() != ird {
		t.Errorf("ConnRequest IRD/ORD = %d/%d, want the peer's ORD/IRD %d/%d", req.ResponderResources(), req.InitiatorDepth(), ord, ird)
	}
	ca, err := req.Accept(sa.QP, verbs.ConnParam{}) // zero: take the request's
	expectNoErr(t, "Accept", err)
	r := await(t, ch, e.timeout)
	expectNoErr(t, "Connect", r.err)
	cb := r.conn
	check := func(who string, c verbs.Conn, qp verbs.QP, wantIRD, wantORD int) {
		t.Helper()
		if c.ResponderResources() != wantIRD || c.InitiatorDepth() != wantORD {
			t.Errorf("%s Conn IRD/ORD = %d/%d, want %d/%d", who, c.ResponderResources(), c.InitiatorDepth(), wantIRD, wantORD)
		}
		if q := qp.Query(); q.IRD != wantIRD || q.ORD != wantORD {
			t.Errorf("%s QP.Query IRD/ORD = %d/%d, want %d/%d", who, q.IRD, q.ORD, wantIRD, wantORD)
		}
	}
	check("passive", ca, sa.QP, ord, ird)
	check("active", cb, sb.QP, ird, ord)
}

func testCMIRDORDDefaults(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	sa, sb := NewSide(t, e.a, PairAttr{}), NewSide(t, e.b, PairAttr{})
	lis := listen(t, e.a, e.addr, 4)
	ch := connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{})
	req := accept(t, ctx, lis)
	if req.ResponderResources() < 1 || req.InitiatorDepth() < 1 {
		t.Errorf("ConnRequest for a default Connect reports IRD/ORD %d/%d, want >= 1", req.ResponderResources(), req.InitiatorDepth())
	}
	ca, err := req.Accept(sa.QP, verbs.ConnParam{})
	expectNoErr(t, "Accept", err)
	r := await(t, ch, e.timeout)
	expectNoErr(t, "Connect", r.err)
	cb := r.conn
	for _, c := range []verbs.Conn{ca, cb} {
		if c.ResponderResources() < 1 || c.InitiatorDepth() < 1 {
			t.Errorf("default IRD/ORD = %d/%d, want >= 1 so that RDMA Reads work", c.ResponderResources(), c.InitiatorDepth())
		}
	}
	if cb.InitiatorDepth() > ca.ResponderResources() || ca.InitiatorDepth() > cb.ResponderResources() {
		t.Errorf("an ORD exceeds the peer's IRD: active %d/%d, passive %d/%d",
			cb.ResponderResources(), cb.InitiatorDepth(), ca.ResponderResources(), ca.InitiatorDepth())
	}
	// Default resources are enough for an RDMA Read each way.
	sa.Conn, sb.Conn = ca, cb
	for _, p := range [][2]*Side{{sa, sb}, {sb, sa}} {
		reader, target := p[0], p[1]
		Fill(target.Buf.B[:512], 9)
		MustPostSend(t, reader.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{reader.Buf.SGE(0, 512)}, RemoteAddr: target.Buf.Addr(0), RKey: target.Buf.RKey()})
		ExpectWC(t, PollOne(t, reader.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRDMARead)
		expectBytes(t, "data read with default IRD/ORD", reader.Buf.B[:512], target.Buf.B[:512])
	}
}

func testCMReject(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	sb := NewSide(t, e.b, PairAttr{})
	lis := listen(t, e.a, e.addr, 4)
	before := e.a.Stats().ConnsRejected + e.b.Stats().ConnsRejected
	ch := connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{PrivateData: []byte("hello")})
	req := accept(t, ctx, lis)
	why := Pattern(verbs.MaxPrivateData, 42)
	expectNoErr(t, "Reject", req.Reject(why))
	r := await(t, ch, e.timeout)
	if r.conn != nil || r.err == nil {
		t.Fatalf("Connect to a rejecting peer = %v, %v; want an error", r.conn, r.err)
	}
	var rej *verbs.RejectError
	if !errors.As(r.err, &rej) || !errors.Is(r.err, verbs.ErrRejected) {
		t.Fatalf("Connect error %v (%T) is not a *RejectError matching ErrRejected", r.err, r.err)
	}
	expectPrivData(t, e.a, "reject private data", rej.PrivateData, why)
	if ev := verbs.ConnEventOf(r.err); ev != verbs.ConnEventRejected {
		t.Errorf("ConnEventOf(reject) = %v, want REJECTED", ev)
	}
	if s := sb.QP.State(); s == verbs.QPStateRTS || s == verbs.QPStateRTR {
		t.Errorf("rejected QP is in %v", s)
	}
	if after := e.a.Stats().ConnsRejected + e.b.Stats().ConnsRejected; after <= before {
		t.Errorf("Stats().ConnsRejected did not count the reject (%d -> %d)", before, after)
	}
	// The listener still serves the next request.
	sa2, sb2 := NewSide(t, e.a, PairAttr{}), NewSide(t, e.b, PairAttr{})
	ch = connectAsync(ctx, e.b, sb2.QP, lis.Addr().String(), verbs.ConnParam{})
	ca, err := accept(t, ctx, lis).Accept(sa2.QP, verbs.ConnParam{})
	expectNoErr(t, "Accept after a Reject", err)
	r = await(t, ch, e.timeout)
	expectNoErr(t, "Connect after a Reject", r.err)
	sa2.Conn, sb2.Conn = ca, r.conn
	RoundTrip(t, sb2, sa2, 32, 4, e.timeout)
}

func testCMNoListener(t *testing.T, e *env) {
	lis, err := e.a.Listen(e.addr, 1)
	expectNoErr(t, "Listen", err)
	addr := lis.Addr().String()
	expectNoErr(t, "Listener.Close", lis.Close())
	sb := NewSide(t, e.b, PairAttr{})
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	start := time.Now()
	c, err := e.b.Connect(ctx, sb.QP, addr, verbs.ConnParam{})
	if err == nil || c != nil {
		t.Fatalf("Connect to %s where nobody listens = %v, %v; want an error", addr, c, err)
	}
	switch ev := verbs.ConnEventOf(err); ev {
	case verbs.ConnEventRejected, verbs.ConnEventUnreachable, verbs.ConnEventConnectError:
	default:
		t.Fatalf("ConnEventOf(%v) = %v", err, ev)
	}
	if el := time.Since(start); el > e.timeout/2 {
		t.Errorf("Connect to a closed port took %v: a refused connection must fail fast", el)
	}
	if s := sb.QP.State(); s == verbs.QPStateRTS {
		t.Error("QP in RTS after a failed Connect")
	}
}

func testCMConnectDeadline(t *testing.T, e *env) {
	lis := listen(t, e.a, e.addr, 4) // never accepts
	sb := NewSide(t, e.b, PairAttr{})
	const d = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	c, err := e.b.Connect(ctx, sb.QP, lis.Addr().String(), verbs.ConnParam{})
	el := time.Since(start)
	if err == nil || c != nil {
		t.Fatalf("Connect to a listener that never accepts = %v, %v; want an error", c, err)
	}
	if ev := verbs.ConnEventOf(err); ev != verbs.ConnEventUnreachable {
		t.Errorf("ConnEventOf(%v) = %v, want UNREACHABLE (the deadline expired)", err, ev)
	}
	if el < d*8/10 || el > d+3*time.Second {
		t.Errorf("Connect with a %v deadline returned after %v", d, el)
	}
}

func testCMListenerClose(t *testing.T, e *env) {
	lis, err := e.a.Listen(e.addr, 4)
	expectNoErr(t, "Listen", err)
	if _, err := e.a.Listen(lis.Addr().String(), 4); err == nil {
		t.Fatalf("second Listen on %v succeeded", lis.Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = lis.Accept(ctx)
	cancel()
	expectErr(t, "Accept with an expiring context", err, context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		_, err := lis.Accept(context.Background())
		done <- err
	}()
	expectNoErr(t, "Close", lis.Close())
	select {
	case err := <-done:
		expectErr(t, "Accept blocked across Close", err, verbs.ErrClosed)
	case <-time.After(e.timeout):
		t.Fatal("Close did not unblock Accept")
	}
	_, err = lis.Accept(context.Background())
	expectErr(t, "Accept after Close", err, verbs.ErrClosed)
	// The port is free again.
	lis2, err := e.a.Listen(lis.Addr().String(), 4)
	expectNoErr(t, "Listen on the port of a closed listener", err)
	lis2.Close()
}

func testCMBacklog(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	lis, err := e.a.Listen(e.addr, 1)
	expectNoErr(t, "Listen", err)
	const n = 3
	results := make(chan connResult, n)
	for range n {
		sb := NewSide(t, e.b, PairAttr{})
		go func() {
			c, err := e.b.Connect(ctx, sb.QP, lis.Addr().String(), verbs.ConnParam{})
			results <- connResult{c, err}
		}()
	}
	// Nobody accepts: one request fits the backlog, the others are refused.
	for i := range n - 1 {
		select {
		case r := <-results:
			if r.err == nil || errIsAny(r.err, context.DeadlineExceeded) {
				t.Fatalf("request %d beyond a backlog of 1: %v, %v; want a refusal", i, r.conn, r.err)
			}
		case <-time.After(e.timeout / 2):
			t.Fatalf("only %d of %d requests beyond a backlog of 1 were refused", i, n-1)
		}
	}
	// Closing the listener rejects the pending one.
	expectNoErr(t, "Close", lis.Close())
	select {
	case r := <-results:
		if r.err == nil || errIsAny(r.err, context.DeadlineExceeded) {
			t.Fatalf("pending request after the listener closed: %v, %v; want a refusal", r.conn, r.err)
		}
	case <-time.After(e.timeout / 2):
		t.Fatal("pending request not refused when the listener closed")
	}

	// A backlog of 2 holds two requests, which can then both be accepted.
	lis = listen(t, e.a, e.addr, 2)
	var chs []<-chan connResult
	for range 2 {
		sb := NewSide(t, e.b, PairAttr{})
		chs = append(chs, connectAsync(ctx, e.b, sb.QP, lis.Addr().String(), verbs.ConnParam{}))
	}
	for range 2 {
		sa := NewSide(t, e.a, PairAttr{})
		_, err := accept(t, ctx, lis).Accept(sa.QP, verbs.ConnParam{})
		expectNoErr(t, "Accept", err)
	}
	for _, ch := range chs {
		expectNoErr(t, "Connect within the backlog", await(t, ch, e.timeout).err)
	}
}

func testCMConnectConnectedQP(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	lis := listen(t, e.a, e.addr, 4)
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	_, err := e.b.Connect(ctx, sb.QP, lis.Addr().String(), verbs.ConnParam{})
	expectErr(t, "Connect of a QP in RTS", err, verbs.ErrInvalidState)

	other := NewSide(t, e.b, PairAttr{})
	ch := connectAsync(ctx, e.b, other.QP, lis.Addr().String(), verbs.ConnParam{})
	req := accept(t, ctx, lis)
	_, err = req.Accept(sa.QP, verbs.ConnParam{})
	expectErr(t, "Accept onto a QP in RTS", err, verbs.ErrInvalidState)
	expectNoErr(t, "Reject", req.Reject(nil))
	expectErr(t, "Connect rejected", await(t, ch, e.timeout).err, verbs.ErrRejected)
	// The original connection is unharmed.
	RoundTrip(t, sb, sa, 100, 5, e.timeout)
}

func testCMDisconnect(t *testing.T, e *env) {
	for _, activeCloses := range []bool{true, false} {
		sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
		closer, peer := sb, sa
		if !activeCloses {
			closer, peer = sa, sb
		}
		for _, s := range []*Side{closer, peer} {
			MustPostRecv(t, s.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{s.Buf.SGE(0, 64)}}, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{s.Buf.SGE(64, 64)}})
		}
		expectNoErr(t, "Disconnect", closer.Conn.Disconnect())
		WaitDone(t, closer.Conn, e.timeout)
		WaitDone(t, peer.Conn, e.timeout)
		if err := closer.Conn.Err(); err != nil {
			t.Errorf("Err after a local Disconnect = %v, want nil", err)
		}
		err := peer.Conn.Err()
		var term *verbs.TerminateError
		if !errors.Is(err, verbs.ErrDisconnected) || errors.As(err, &term) {
			t.Errorf("peer's Err after a graceful Disconnect = %v, want ErrDisconnected without a Terminate", err)
		}
		for _, s := range []*Side{closer, peer} {
			for i, wc := range PollN(t, s.CQ, 2, e.timeout) {
				ExpectWC(t, wc, uint64(i+1), verbs.WCWRFlushErr, verbs.WCRecv)
			}
			if st := s.QP.State(); st != verbs.QPStateError {
				t.Errorf("QP after disconnect in %v, want ERROR", st)
			}
			// Sends posted now are flushed.
			MustPostSend(t, s.QP, verbs.SendWR{ID: 3, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.Buf.SGE(0, 8)}})
			ExpectWC(t, PollOne(t, s.CQ, e.timeout), 3, verbs.WCWRFlushErr, verbs.WCSend)
			NoWC(t, s.CQ)
		}
		if err := closer.Conn.Disconnect(); err != nil {
			expectErr(t, "second Disconnect", err, verbs.ErrClosed)
		}
	}
}

func testCMDestroyConnectedQP(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	expectNoErr(t, "Destroy of a connected QP", sb.QP.Destroy())
	WaitDone(t, sb.Conn, e.timeout)
	WaitDone(t, sa.Conn, e.timeout)
	expectErr(t, "peer's Err after the QP was destroyed", sa.Conn.Err(), verbs.ErrDisconnected)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 1, verbs.WCWRFlushErr, verbs.WCRecv)
	expectNoErr(t, "CQ.Destroy once its QP is gone", sb.CQ.Destroy())
}

func testCMModifyError(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	MustPostRecv(t, sb.QP, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}})
	expectNoErr(t, "Modify(ERROR) of a connected QP", sb.QP.Modify(verbs.QPStateError))
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 2, verbs.WCWRFlushErr, verbs.WCRecv)
	WaitDone(t, sb.Conn, e.timeout)
	WaitDone(t, sa.Conn, e.timeout)
	expectErr(t, "peer's Err after an abrupt teardown", sa.Conn.Err(), verbs.ErrDisconnected)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 1, verbs.WCWRFlushErr, verbs.WCRecv)
	if st := sa.QP.State(); st != verbs.QPStateError {
		t.Errorf("peer QP in %v, want ERROR", st)
	}
}
