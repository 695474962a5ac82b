package verbstest

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

var deviceTests = []testCase{
	{"QueryLimits", testDeviceQuery},
	{"Stats", testDeviceStats},
	{"AllocPD", testDeviceAllocPD},
	{"Close", testDeviceClose},
	{"ClosePeerSeesDisconnect", testDeviceClosePeer},
}

func testDeviceQuery(t *testing.T, e *env) {
	attr := e.a.Query()
	if attr.Name == "" || attr.Name != e.a.Name() {
		t.Errorf("Query().Name = %q, Name() = %q: want the same, non-empty", attr.Name, e.a.Name())
	}
	if attr.Provider == "" {
		t.Error("Query().Provider is empty")
	}
	switch attr.Transport {
	case verbs.TransportIWARP, verbs.TransportMemory, verbs.TransportRoCE, verbs.TransportIB:
	default:
		t.Errorf("Query().Transport = %v", attr.Transport)
	}
	positive := []struct {
		name string
		v    int
	}{
		{"MaxQP", attr.MaxQP}, {"MaxQPWR", attr.MaxQPWR}, {"MaxSGE", attr.MaxSGE},
		{"MaxSGERead", attr.MaxSGERead}, {"MaxCQ", attr.MaxCQ}, {"MaxCQE", attr.MaxCQE},
		{"MaxMR", attr.MaxMR}, {"MaxPD", attr.MaxPD}, {"MaxSRQ", attr.MaxSRQ},
		{"MaxSRQWR", attr.MaxSRQWR}, {"MaxSRQSGE", attr.MaxSRQSGE},
		{"MaxIRD", attr.MaxIRD}, {"MaxORD", attr.MaxORD},
	}
	for _, p := range positive {
		if p.v <= 0 {
			t.Errorf("Query().%s = %d, want > 0", p.name, p.v)
		}
	}
	if attr.MaxMRSize == 0 {
		t.Error("Query().MaxMRSize = 0")
	}
	if attr.MaxMW < 0 || attr.MaxInline < 0 {
		t.Errorf("Query().MaxMW = %d, MaxInline = %d: negative", attr.MaxMW, attr.MaxInline)
	}
	if attr.MaxSGE > verbs.MaxSGE || attr.MaxSRQSGE > verbs.MaxSGE || attr.MaxSGERead > attr.MaxSGE {
		t.Errorf("SGE limits %d/%d/%d exceed verbs.MaxSGE = %d or MaxSGE", attr.MaxSGE, attr.MaxSRQSGE, attr.MaxSGERead, verbs.MaxSGE)
	}
	if attr.MaxPrivData < verbs.MaxPrivateData {
		t.Errorf("Query().MaxPrivData = %d, want >= %d", attr.MaxPrivData, verbs.MaxPrivateData)
	}
	if again := e.a.Query(); again != attr {
		t.Errorf("Query() changed between calls: %+v, then %+v", attr, again)
	}
}

func testDeviceStats(t *testing.T, e *env) {
	a0, b0 := e.a.Stats(), e.b.Stats()
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	const n = 5000
	RoundTrip(t, sb, sa, n, 1, e.timeout)
	a1, b1 := e.a.Stats(), e.b.Stats()
	if a1.QPsCreated < a0.QPsCreated+1 || b1.QPsCreated < b0.QPsCreated+1 {
		t.Errorf("QPsCreated %d -> %d and %d -> %d after creating a QP on each device", a0.QPsCreated, a1.QPsCreated, b0.QPsCreated, b1.QPsCreated)
	}
	if a1.ConnsEstablished < a0.ConnsEstablished+1 || b1.ConnsEstablished < b0.ConnsEstablished+1 {
		t.Errorf("ConnsEstablished %d -> %d and %d -> %d after a connection", a0.ConnsEstablished, a1.ConnsEstablished, b0.ConnsEstablished, b1.ConnsEstablished)
	}
	if b1.BytesSent < b0.BytesSent+n || a1.BytesReceived < a0.BytesReceived+n {
		t.Errorf("BytesSent %d -> %d, BytesReceived %d -> %d after a %d-byte message", b0.BytesSent, b1.BytesSent, a0.BytesReceived, a1.BytesReceived, n)
	}
	if a1.ProtectionErrors != a0.ProtectionErrors || a1.CQOverflows != a0.CQOverflows || a1.CRCErrors != a0.CRCErrors {
		t.Errorf("error counters moved during a clean transfer: %+v -> %+v", a0, a1)
	}
}

func testDeviceAllocPD(t *testing.T, e *env) {
	pds := make([]verbs.PD, 8)
	for i := range pds {
		pd, err := e.a.AllocPD()
		expectNoErr(t, "AllocPD", err)
		pds[i] = pd
	}
	for _, pd := range pds {
		expectNoErr(t, "Dealloc", pd.Dealloc())
		expectErr(t, "second Dealloc", pd.Dealloc(), verbs.ErrClosed)
	}
}

func testDeviceClose(t *testing.T, e *env) {
	dev := e.a
	pd, err := dev.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := dev.CreateCQ(verbs.CQAttr{Depth: 16})
	expectNoErr(t, "CreateCQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	expectNoErr(t, "CreateQP", err)
	expectNoErr(t, "Modify(INIT)", qp.Modify(verbs.QPStateInit))
	buf := NewBuf(t, pd, 4096, DefaultAccess)
	lis, err := dev.Listen(e.addr, 4)
	expectNoErr(t, "Listen", err)

	// Calls blocked on the device's objects must return ErrClosed.
	waitErr := make(chan error, 1)
	acceptErr := make(chan error, 1)
	go func() { waitErr <- cq.Wait(context.Background(), false) }()
	go func() {
		_, err := lis.Accept(context.Background())
		acceptErr <- err
	}()

	expectNoErr(t, "Close", dev.Close())
	for what, ch := range map[string]chan error{"CQ.Wait": waitErr, "Listener.Accept": acceptErr} {
		select {
		case err := <-ch:
			expectErr(t, "blocked "+what+" after Close", err, verbs.ErrClosed)
		case <-time.After(e.timeout):
			t.Fatalf("blocked %s did not return after Close", what)
		}
	}
	if err := dev.Close(); err != nil {
		expectErr(t, "second Close", err, verbs.ErrClosed)
	}

	_, err = dev.AllocPD()
	expectErr(t, "AllocPD after Close", err, verbs.ErrClosed)
	_, err = dev.CreateCQ(verbs.CQAttr{Depth: 4})
	expectErr(t, "CreateCQ after Close", err, verbs.ErrClosed)
	_, err = dev.Listen(e.addr, 1)
	expectErr(t, "Listen after Close", err, verbs.ErrClosed)
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	_, err = dev.Connect(ctx, qp, lis.Addr().String(), verbs.ConnParam{})
	expectErr(t, "Connect after Close", err, verbs.ErrClosed)
	_, err = pd.RegMR(make([]byte, 64), verbs.AccessLocalWrite)
	expectErr(t, "RegMR after Close", err, verbs.ErrClosed)
	_, err = pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
	expectErr(t, "CreateQP after Close", err, verbs.ErrClosed)
	_, err = qp.PostRecv([]verbs.RecvWR{{SGL: []verbs.SGE{buf.SGE(0, 64)}}})
	expectErr(t, "PostRecv after Close", err, verbs.ErrClosed)
	expectErr(t, "Modify after Close", qp.Modify(verbs.QPStateReset), verbs.ErrClosed)
	expectErr(t, "CQ.Wait after Close", cq.Wait(context.Background(), false), verbs.ErrClosed)
	_, err = lis.Accept(context.Background())
	expectErr(t, "Accept after Close", err, verbs.ErrClosed)

	// The async event channel is closed by Close.
	timer := time.NewTimer(e.timeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-dev.AsyncEvents():
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatal("AsyncEvents channel not closed after Close")
		}
	}
}

func testDeviceClosePeer(t *testing.T, e *env) {
	if e.sameDevice() {
		t.Skip("the harness returned one device twice; closing it closes both sides")
	}
	sa, _ := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 7, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	expectNoErr(t, "Close of the active device", e.b.Close())
	WaitDone(t, sa.Conn, e.timeout)
	expectErr(t, "Err of the connection whose peer device closed", sa.Conn.Err(), verbs.ErrDisconnected)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 7, verbs.WCWRFlushErr, verbs.WCRecv)
	if s := sa.QP.State(); s != verbs.QPStateError {
		t.Errorf("QP state after the peer device closed = %v, want ERROR", s)
	}
	// The surviving device still serves new connections.
	if _, err := e.a.Listen(e.addr, 1); err != nil {
		t.Fatalf("Listen on the surviving device: %v", err)
	}
}
