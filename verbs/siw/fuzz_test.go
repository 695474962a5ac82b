package siw_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// FuzzStream feeds arbitrary bytes to the receive path of an established
// stream, as a peer after the MPA handshake: whatever arrives, the stream
// must end cleanly (Terminate or disconnect), never panic or hang, and
// complete every posted receive.
//
//	go test ./verbs/siw -run '^$' -fuzz FuzzStream -fuzztime 60s
func FuzzStream(f *testing.F) {
	dev, err := siw.New(siw.Options{}).Open(siw.DeviceName)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { dev.Close() })
	lis, err := dev.Listen("127.0.0.1:0", 16)
	if err != nil {
		f.Fatal(err)
	}
	pd, err := dev.AllocPD()
	if err != nil {
		f.Fatal(err)
	}
	cq, err := dev.CreateCQ(verbs.CQAttr{Depth: 256})
	if err != nil {
		f.Fatal(err)
	}
	buf := verbstest.NewBuf(f, pd, 4096, verbstest.DefaultAccess)
	stag, addr := buf.RKey(), buf.Addr(0)

	f.Add(fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("hello")), false))
	f.Add(fpdu(taggedULPDU(0, true, stag, addr, payload64), false))
	f.Add(cat(fpdu(taggedULPDU(0, false, stag, addr, payload64[:32]), false), fpdu(taggedULPDU(0, true, stag, addr+32, payload64[:32]), false)))
	f.Add(fpdu(readReqULPDU(1, 7, 0, 64, stag, addr), false))
	f.Add(fpdu(sendULPDU(4, true, stag, 0, 1, 0, nil), false))
	f.Add(cat(fpdu(sendULPDU(3, false, 0, 0, 1, 0, payload64[:8]), false), fpdu(sendULPDU(3, true, 0, 0, 1, 8, payload64[:8]), false)))
	f.Add(terminateFPDU(0x0100, 0xE000, attached(0, readReqULPDU(1, 7, 0, 64, stag, addr)), false))
	f.Add(fpdu(taggedULPDU(2, true, 5, 0, payload64[:8]), false))

	f.Fuzz(func(t *testing.T, stream []byte) {
		qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 2}})
		if err != nil {
			t.Fatal(err)
		}
		defer qp.Destroy()
		c, err := net.Dial("tcp4", lis.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(siwRequest); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
		defer cancel()
		req, err := lis.Accept(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := req.Accept(qp, verbs.ConnParam{})
		if err != nil {
			t.Fatal(err)
		}
		recvs := func() []verbs.RecvWR {
			return []verbs.RecvWR{
				{ID: 1, SGL: []verbs.SGE{buf.SGE(0, 16), buf.SGE(100, 16)}},
				{ID: 2, SGL: []verbs.SGE{buf.SGE(200, 1000)}},
			}
		}
		if _, err := qp.PostRecv(recvs()); errors.Is(err, verbs.ErrInvalidKey) {
			// An earlier input invalidated the MR with a Send with
			// Invalidate: register the memory again.
			buf.MR.Dereg()
			buf = verbstest.NewBuf(t, pd, 4096, verbstest.DefaultAccess)
			verbstest.MustPostRecv(t, qp, recvs()...)
		} else if err != nil {
			t.Fatal(err)
		}
		c.Write(stream)
		c.(*net.TCPConn).CloseWrite()
		select {
		case <-conn.Done():
		case <-time.After(peerTimeout):
			t.Fatal("stream did not end after the peer closed")
		}
		// Both receives complete, one way or another.
		for got := 0; got < 2; {
			var wcs [4]verbs.WC
			got += cq.Poll(wcs[:])
			if got < 2 {
				if err := cq.Wait(ctx, false); err != nil {
					t.Fatalf("receives not completed: %v", err)
				}
			}
		}
	})
}
