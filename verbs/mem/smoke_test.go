package mem

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

type side struct {
	dev  verbs.Device
	pd   verbs.PD
	cq   verbs.CQ
	qp   verbs.QP
	buf  []byte
	mr   verbs.MR
	conn verbs.Conn
}

func newSide(t *testing.T, dev verbs.Device) *side {
	t.Helper()
	s := &side{dev: dev}
	var err error
	if s.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if s.cq, err = dev.CreateCQ(verbs.CQAttr{Depth: 64}); err != nil {
		t.Fatal(err)
	}
	if s.qp, err = s.pd.CreateQP(verbs.QPInitAttr{SendCQ: s.cq, RecvCQ: s.cq, Caps: verbs.QPCaps{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 2, MaxRecvSGE: 2}, SignalAll: true}); err != nil {
		t.Fatal(err)
	}
	s.buf = make([]byte, 4096)
	if s.mr, err = s.pd.RegMR(s.buf, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite); err != nil {
		t.Fatal(err)
	}
	return s
}

func poll(t *testing.T, cq verbs.CQ) verbs.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wc [1]verbs.WC
	for {
		if cq.Poll(wc[:]) == 1 {
			return wc[0]
		}
		if err := cq.Wait(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSmoke(t *testing.T) {
	p := New()
	da, _ := p.Open(DeviceName)
	db, _ := p.Open(DeviceName)
	defer da.Close()
	defer db.Close()
	a, b := newSide(t, da), newSide(t, db)
	l, err := db.Listen("node-b:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		req, err := l.Accept(context.Background())
		if err != nil {
			done <- err
			return
		}
		if string(req.PrivateData()) != "hello" {
			t.Errorf("request private data %q", req.PrivateData())
		}
		b.conn, err = req.Accept(b.qp, verbs.ConnParam{PrivateData: []byte("welcome")})
		done <- err
	}()
	a.conn, err = da.Connect(context.Background(), a.qp, l.Addr().String(), verbs.ConnParam{PrivateData: []byte("hello")})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if string(a.conn.PrivateData()) != "welcome" {
		t.Fatalf("reply private data %q", a.conn.PrivateData())
	}
	// Send/Recv.
	if _, err := b.qp.PostRecv([]verbs.RecvWR{{ID: 7, SGL: []verbs.SGE{verbs.SGEOf(b.mr, 0, 10), verbs.SGEOf(b.mr, 100, 100)}}}); err != nil {
		t.Fatal(err)
	}
	copy(a.buf, "0123456789abcdef")
	if _, err := a.qp.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{verbs.SGEOf(a.mr, 0, 16)}}}); err != nil {
		t.Fatal(err)
	}
	if wc := poll(t, a.cq); wc.Status != verbs.WCSuccess || wc.ID != 1 {
		t.Fatalf("send wc %+v", wc)
	}
	if wc := poll(t, b.cq); wc.Status != verbs.WCSuccess || wc.ID != 7 || wc.ByteLen != 16 {
		t.Fatalf("recv wc %+v", wc)
	}
	if string(b.buf[:10]) != "0123456789" || string(b.buf[100:106]) != "abcdef" || b.buf[106] != 0 {
		t.Fatalf("scatter wrong: %q %q", b.buf[:10], b.buf[100:110])
	}
	// RDMA Write then Read back.
	copy(a.buf[200:], "written")
	if _, err := a.qp.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{verbs.SGEOf(a.mr, 200, 7)}, RemoteAddr: b.mr.Addr() + 1000, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	poll(t, a.cq)
	if !bytes.Equal(b.buf[1000:1007], []byte("written")) {
		t.Fatal("write not placed")
	}
	if _, err := a.qp.PostSend([]verbs.SendWR{{ID: 3, Opcode: verbs.OpRDMARead, SGL: []verbs.SGE{verbs.SGEOf(a.mr, 3000, 7)}, RemoteAddr: b.mr.Addr() + 1000, RKey: b.mr.RKey()}}); err != nil {
		t.Fatal(err)
	}
	if wc := poll(t, a.cq); wc.Status != verbs.WCSuccess || wc.ByteLen != 7 || wc.Opcode != verbs.WCRDMARead {
		t.Fatalf("read wc %+v", wc)
	}
	if string(a.buf[3000:3007]) != "written" {
		t.Fatal("read data wrong")
	}
	// Bad rkey terminates the stream.
	if _, err := a.qp.PostSend([]verbs.SendWR{{ID: 4, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{verbs.SGEOf(a.mr, 0, 7)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() ^ 1}}); err != nil {
		t.Fatal(err)
	}
	if wc := poll(t, a.cq); wc.Status != verbs.WCRemAccessErr {
		t.Fatalf("bad write wc %+v", wc)
	}
	<-a.conn.Done()
	<-b.conn.Done()
	var te *verbs.TerminateError
	if err := a.conn.Err(); err == nil || !asTerm(err, &te) || !te.Remote {
		t.Fatalf("writer conn err %v", a.conn.Err())
	}
	if a.qp.State() != verbs.QPStateError || b.qp.State() != verbs.QPStateError {
		t.Fatal("QPs not in ERROR")
	}
}

func asTerm(err error, te **verbs.TerminateError) bool {
	t, ok := err.(*verbs.TerminateError)
	*te = t
	return ok
}
