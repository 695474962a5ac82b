package verbstest

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

// DefaultAccess is the access of the buffers ConnectPair registers: the
// peer may read and write them.
const DefaultAccess = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite

// PairAttr configures ConnectPair. Zero fields take the defaults noted.
type PairAttr struct {
	// Caps are the QPs' queue sizes; zero fields default to 64 work
	// requests per queue and 4 SGEs (at most the device's MaxSGE).
	Caps verbs.QPCaps
	// CQDepth is the depth of each side's CQ (default 1024).
	CQDepth int
	// BufSize is the size of each side's registered buffer (default 64 KiB).
	BufSize int
	// Access of the buffers (default DefaultAccess).
	Access    verbs.Access
	SignalAll bool
	// Connect is what the active side (the second device) sends;
	// Accept what the passive side (the first device) answers.
	Connect, Accept verbs.ConnParam
}

// Side is one end of a connection made by ConnectPair: a QP with its own
// PD, one CQ for both its queues, a registered buffer and the connection.
type Side struct {
	Dev  verbs.Device
	PD   verbs.PD
	CQ   verbs.CQ
	QP   verbs.QP
	Conn verbs.Conn
	Buf  *Buf
}

func (attr *PairAttr) defaults(dev verbs.Device) {
	maxSGE := dev.Query().MaxSGE
	c := &attr.Caps
	if c.MaxSendWR == 0 {
		c.MaxSendWR = 64
	}
	if c.MaxRecvWR == 0 {
		c.MaxRecvWR = 64
	}
	if c.MaxSendSGE == 0 {
		c.MaxSendSGE = min(4, maxSGE)
	}
	if c.MaxRecvSGE == 0 {
		c.MaxRecvSGE = min(4, maxSGE)
	}
	if attr.CQDepth == 0 {
		attr.CQDepth = 1024
	}
	if attr.BufSize == 0 {
		attr.BufSize = 64 << 10
	}
	if attr.Access == 0 {
		attr.Access = DefaultAccess
	}
}

// NewSide creates the unconnected objects of a Side on dev.
func NewSide(t testing.TB, dev verbs.Device, attr PairAttr) *Side {
	t.Helper()
	attr.defaults(dev)
	pd, err := dev.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := dev.CreateCQ(verbs.CQAttr{Depth: attr.CQDepth})
	expectNoErr(t, "CreateCQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: attr.Caps, SignalAll: attr.SignalAll})
	expectNoErr(t, "CreateQP", err)
	return &Side{Dev: dev, PD: pd, CQ: cq, QP: qp, Buf: NewBuf(t, pd, attr.BufSize, attr.Access)}
}

// ConnectPair connects a QP on b to a QP on a: a listens on addr and
// accepts, b connects. It returns the two sides in argument order.
func ConnectPair(t testing.TB, a, b verbs.Device, addr string, attr PairAttr) (sa, sb *Side) {
	t.Helper()
	sa, sb = NewSide(t, a, attr), NewSide(t, b, attr)
	sa.Conn, sb.Conn = ConnectQPs(t, a, b, addr, sa.QP, sb.QP, attr.Accept, attr.Connect)
	return sa, sb
}

// ConnectQPs connects conQP on conDev to lisQP on lisDev through a
// listener on addr that lives only for this call, and returns both
// connections.
func ConnectQPs(t testing.TB, lisDev, conDev verbs.Device, addr string, lisQP, conQP verbs.QP, accept, connect verbs.ConnParam) (lisConn, conConn verbs.Conn) {
	t.Helper()
	lis, err := lisDev.Listen(addr, 4)
	expectNoErr(t, "Listen("+addr+")", err)
	defer lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	type result struct {
		conn verbs.Conn
		err  error
	}
	accepted := make(chan result, 1)
	go func() {
		req, err := lis.Accept(ctx)
		if err != nil {
			accepted <- result{err: err}
			return
		}
		c, err := req.Accept(lisQP, accept)
		accepted <- result{c, err}
	}()
	conConn, err = conDev.Connect(ctx, conQP, lis.Addr().String(), connect)
	if err != nil {
		lis.Close()
		r := <-accepted
		t.Fatalf("Connect(%v): %v (passive side: %v)", lis.Addr(), err, r.err)
	}
	r := <-accepted
	if r.err != nil {
		t.Fatalf("accepting a connection: %v", r.err)
	}
	return r.conn, conConn
}

// RoundTrip sends n bytes (a pattern made from seed) from src to dst and
// checks that they arrive intact, with both completions: it proves a
// connection works. Both CQs must hold no other completions.
func RoundTrip(t testing.TB, src, dst *Side, n int, seed uint64, timeout time.Duration) {
	t.Helper()
	want := Pattern(n, seed)
	copy(src.Buf.B, want)
	clear(dst.Buf.B[:n])
	MustPostRecv(t, dst.QP, verbs.RecvWR{ID: seed, SGL: []verbs.SGE{dst.Buf.SGE(0, n)}})
	MustPostSend(t, src.QP, verbs.SendWR{ID: seed, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{src.Buf.SGE(0, n)}})
	ExpectWC(t, PollOne(t, src.CQ, timeout), seed, verbs.WCSuccess, verbs.WCSend)
	wc := PollOne(t, dst.CQ, timeout)
	ExpectWC(t, wc, seed, verbs.WCSuccess, verbs.WCRecv)
	if wc.ByteLen != uint32(n) || wc.QPN != dst.QP.QPN() {
		t.Fatalf("receive completion %+v, want %d bytes on QPN %d", wc, n, dst.QP.QPN())
	}
	expectBytes(t, "received message", dst.Buf.B[:n], want)
}

// proveAlive opens a new connection between the devices of e and moves
// data both ways over it: after a fault on one connection, the devices
// must keep serving others.
func proveAlive(t testing.TB, e *env) {
	t.Helper()
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	RoundTrip(t, sb, sa, 1000, 77, e.timeout)
	RoundTrip(t, sa, sb, 1000, 78, e.timeout)
	expectNoErr(t, "Disconnect", sb.Conn.Disconnect())
	WaitDone(t, sa.Conn, e.timeout)
}
