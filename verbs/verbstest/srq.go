package verbstest

import (
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

var srqTests = []testCase{
	{"TwoQPs", testSRQTwoQPs},
	{"LimitEvent", testSRQLimitEvent},
	{"QueueLimits", testSRQQueueLimits},
	{"DestroyInUse", testSRQDestroyInUse},
	{"DisconnectKeepsReceives", testSRQDisconnectKeepsReceives},
	{"RecvInProgress", testSRQRecvInProgress},
}

// srqScene is two QPs on the first device sharing one SRQ and one CQ,
// each connected to its own Side on the second device.
type srqScene struct {
	pd    verbs.PD
	cq    verbs.CQ
	srq   verbs.SRQ
	buf   *Buf
	qps   [2]verbs.QP
	conns [2]verbs.Conn
	peers [2]*Side
}

func newSRQScene(t testing.TB, e *env, attr verbs.SRQAttr) *srqScene {
	t.Helper()
	s := &srqScene{}
	var err error
	s.pd, err = e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	s.cq, err = e.a.CreateCQ(verbs.CQAttr{Depth: 1024})
	expectNoErr(t, "CreateCQ", err)
	s.srq, err = s.pd.CreateSRQ(attr)
	expectNoErr(t, "CreateSRQ", err)
	s.buf = NewBuf(t, s.pd, 64<<10, DefaultAccess)
	for i := range s.qps {
		s.qps[i], err = s.pd.CreateQP(verbs.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq, SRQ: s.srq,
			Caps: verbs.QPCaps{MaxSendWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
		expectNoErr(t, "CreateQP on an SRQ", err)
		s.peers[i] = NewSide(t, e.b, PairAttr{})
		s.conns[i], s.peers[i].Conn = ConnectQPs(t, e.a, e.b, e.addr, s.qps[i], s.peers[i].QP, verbs.ConnParam{}, verbs.ConnParam{})
	}
	return s
}

// post posts receives with the given IDs, each into its own 64-byte slot.
func (s *srqScene) post(t testing.TB, ids ...uint64) {
	t.Helper()
	for _, id := range ids {
		if n, err := s.srq.PostRecv([]verbs.RecvWR{{ID: id, SGL: []verbs.SGE{s.buf.SGE(int(id%1000)*64, 64)}}}); n != 1 || err != nil {
			t.Fatalf("SRQ.PostRecv = %d, %v", n, err)
		}
	}
}

// send has peer i send a 64-byte message made from seed and waits for the
// SRQ receive it consumes, which must be wantID on QP i.
func (s *srqScene) send(t testing.TB, i int, seed, wantID uint64, timeout time.Duration) {
	t.Helper()
	p := s.peers[i]
	Fill(p.Buf.B[:64], seed)
	MustPostSend(t, p.QP, verbs.SendWR{ID: seed, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{p.Buf.SGE(0, 64)}})
	ExpectWC(t, PollOne(t, p.CQ, timeout), seed, verbs.WCSuccess, verbs.WCSend)
	wc := PollOne(t, s.cq, timeout)
	ExpectWC(t, wc, wantID, verbs.WCSuccess, verbs.WCRecv)
	if wc.QPN != s.qps[i].QPN() || wc.ByteLen != 64 {
		t.Fatalf("SRQ receive %+v, want 64 bytes on QPN %d", wc, s.qps[i].QPN())
	}
	slot := int(wantID%1000) * 64
	expectBytes(t, "message received through the SRQ", s.buf.B[slot:slot+64], p.Buf.B[:64])
}

func testSRQTwoQPs(t *testing.T, e *env) {
	s := newSRQScene(t, e, verbs.SRQAttr{MaxWR: 16, MaxSGE: 1})
	s.post(t, 0, 1, 2, 3)
	if s.srq.Posted() != 4 {
		t.Fatalf("Posted() = %d after posting 4", s.srq.Posted())
	}
	// Receives are consumed in posting order by whichever QP gets a
	// message first.
	for i, from := range []int{0, 1, 1, 0} {
		s.send(t, from, uint64(10+i), uint64(i), e.timeout)
		if got := s.srq.Posted(); got != 3-i {
			t.Fatalf("Posted() = %d after %d receives were consumed, want %d", got, i+1, 3-i)
		}
	}
	n, err := s.qps[0].PostRecv([]verbs.RecvWR{{ID: 9, SGL: []verbs.SGE{s.buf.SGE(0, 8)}}})
	if n != 0 || !errIsAny(err, verbs.ErrInvalidState) {
		t.Fatalf("PostRecv on a QP with an SRQ = %d, %v; want 0, ErrInvalidState", n, err)
	}
}

func testSRQLimitEvent(t *testing.T, e *env) {
	s := newSRQScene(t, e, verbs.SRQAttr{MaxWR: 16, MaxSGE: 1})
	fired := 0
	drain := func() {
		for {
			select {
			case ev := <-e.a.AsyncEvents():
				if ev.Type == verbs.EventSRQLimitReached {
					if ev.SRQ != s.srq {
						t.Fatalf("SRQ limit event names another SRQ: %v", ev)
					}
					fired++
				}
			default:
				return
			}
		}
	}
	waitFire := func(want int) {
		t.Helper()
		drain()
		if fired < want {
			WaitAsyncEvent(t, e.a, e.timeout, func(ev verbs.AsyncEvent) bool {
				return ev.Type == verbs.EventSRQLimitReached && ev.SRQ == s.srq
			})
			fired++
		}
		if fired != want {
			t.Fatalf("SRQ limit event fired %d times, want %d", fired, want)
		}
		if l := s.srq.Query().Limit; l != 0 {
			t.Fatalf("limit still armed (%d) after the event", l)
		}
	}
	arm := func(limit int) {
		t.Helper()
		expectNoErr(t, "Modify(SRQLimit)", s.srq.Modify(verbs.SRQAttr{Limit: limit}, verbs.SRQLimit))
		if got := s.srq.Query().Limit; got != limit {
			t.Fatalf("Query().Limit = %d after arming %d", got, limit)
		}
	}
	id := uint64(0)
	consume := func(k int) {
		t.Helper()
		for range k {
			s.send(t, int(id%2), 100+id, id, e.timeout)
			id++
		}
	}
	s.post(t, 0, 1, 2, 3, 4, 5, 6, 7)
	// 8 posted, limit 4: taking 4 leaves 4 (not below), the 5th leaves 3.
	arm(4)
	consume(4)
	drain()
	if fired != 0 {
		t.Fatalf("SRQ limit event fired with %d receives posted and limit 4", s.srq.Posted())
	}
	consume(1)
	waitFire(1)
	consume(1) // disarmed: no event
	drain()
	if fired != 1 {
		t.Fatal("SRQ limit event fired again without being re-armed")
	}
	// Back to 8 posted (IDs 6..13) and re-armed: it fires once more.
	s.post(t, 8, 9, 10, 11, 12, 13)
	arm(4)
	consume(4)
	drain()
	if fired != 1 {
		t.Fatal("re-armed SRQ limit event fired early")
	}
	consume(1)
	waitFire(2)
	drain()
	if fired != 2 {
		t.Fatalf("SRQ limit event fired %d times, want 2", fired)
	}
}

func testSRQQueueLimits(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	attr := e.a.Query()
	for _, bad := range []verbs.SRQAttr{{MaxWR: 0, MaxSGE: 1}, {MaxWR: attr.MaxSRQWR + 1, MaxSGE: 1}, {MaxWR: 4, MaxSGE: attr.MaxSRQSGE + 1}} {
		srq, err := pd.CreateSRQ(bad)
		if err == nil {
			srq.Destroy()
		}
		expectErr(t, "CreateSRQ(MaxWR "+itoa(bad.MaxWR)+", MaxSGE "+itoa(bad.MaxSGE)+")", err, verbs.ErrInvalidArgument, verbs.ErrNoResources)
	}
	srq, err := pd.CreateSRQ(verbs.SRQAttr{MaxWR: 8, MaxSGE: 1})
	expectNoErr(t, "CreateSRQ", err)
	q := srq.Query()
	if q.MaxWR < 8 || q.MaxSGE < 1 || q.Limit != 0 {
		t.Fatalf("Query() = %+v for an SRQ of 8 WRs, 1 SGE, no limit", q)
	}
	buf := NewBuf(t, pd, 4096, verbs.AccessLocalWrite)
	wrs := make([]verbs.RecvWR, q.MaxWR+1)
	for i := range wrs {
		wrs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{buf.SGE(0, 8)}}
	}
	n, err := srq.PostRecv(wrs)
	if n != q.MaxWR || !errIsAny(err, verbs.ErrQueueFull) || srq.Posted() != q.MaxWR {
		t.Fatalf("posting %d to an SRQ of %d = %d, %v (Posted %d); want %d, ErrQueueFull", len(wrs), q.MaxWR, n, err, srq.Posted(), q.MaxWR)
	}
	expectErr(t, "Modify(SRQMaxWR) below the posted receives", srq.Modify(verbs.SRQAttr{MaxWR: q.MaxWR - 1}, verbs.SRQMaxWR), verbs.ErrInvalidArgument)
	expectNoErr(t, "Modify(SRQMaxWR) growing the SRQ", srq.Modify(verbs.SRQAttr{MaxWR: 2 * q.MaxWR}, verbs.SRQMaxWR))
	if got := srq.Query().MaxWR; got < 2*q.MaxWR {
		t.Fatalf("MaxWR %d after growing to %d", got, 2*q.MaxWR)
	}
	n, err = srq.PostRecv(wrs[:1])
	if n != 1 || err != nil {
		t.Fatalf("PostRecv after growing = %d, %v", n, err)
	}
	sgl := make([]verbs.SGE, q.MaxSGE+1)
	for i := range sgl {
		sgl[i] = buf.SGE(i*8, 8)
	}
	n, err = srq.PostRecv([]verbs.RecvWR{{ID: 99, SGL: sgl}})
	if n != 0 || !errIsAny(err, verbs.ErrTooManySGE) {
		t.Fatalf("SRQ.PostRecv with %d SGEs (MaxSGE %d) = %d, %v; want 0, ErrTooManySGE", len(sgl), q.MaxSGE, n, err)
	}
	if srq.Posted() != q.MaxWR+1 {
		t.Fatalf("Posted() = %d, want %d", srq.Posted(), q.MaxWR+1)
	}
}

func testSRQDestroyInUse(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 8})
	expectNoErr(t, "CreateCQ", err)
	srq, err := pd.CreateSRQ(verbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	expectNoErr(t, "CreateSRQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq, Caps: verbs.QPCaps{MaxSendWR: 1, MaxSendSGE: 1}})
	expectNoErr(t, "CreateQP", err)
	expectErr(t, "SRQ.Destroy while a QP uses it", srq.Destroy(), verbs.ErrInUse)
	expectNoErr(t, "QP.Destroy", qp.Destroy())
	expectNoErr(t, "SRQ.Destroy", srq.Destroy())
	expectErr(t, "second SRQ.Destroy", srq.Destroy(), verbs.ErrClosed)
	_, err = srq.PostRecv([]verbs.RecvWR{{ID: 1}})
	expectErr(t, "PostRecv after Destroy", err, verbs.ErrClosed)
}

func testSRQDisconnectKeepsReceives(t *testing.T, e *env) {
	s := newSRQScene(t, e, verbs.SRQAttr{MaxWR: 16, MaxSGE: 1})
	s.post(t, 0, 1, 2, 3)
	expectNoErr(t, "Disconnect", s.peers[0].Conn.Disconnect())
	WaitDone(t, s.conns[0], e.timeout)
	// Receives not yet taken stay on the SRQ: nothing is flushed.
	if got := s.srq.Posted(); got != 4 {
		t.Fatalf("Posted() = %d after one of the SRQ's QPs disconnected, want 4", got)
	}
	NoWC(t, s.cq)
	s.send(t, 1, 5, 0, e.timeout)
	s.send(t, 1, 6, 1, e.timeout)
}
