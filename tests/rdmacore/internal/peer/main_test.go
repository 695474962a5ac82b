//go:build rdmacore

package main

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

// TestPassiveSeesConnectionEnd: a passive end whose receives are on an
// SRQ learns that the connection ended from the connection, not from
// its deadline. The receives of an SRQ stay posted when a QP fails, so no
// flushed completion tells the waiter; watching only the CQ, the passive
// end of a broken exchange waited out its whole timeout and reported no
// receive, hiding why the connection went.
func TestPassiveSeesConnectionEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addrs := make(chan net.Addr, 1)
	errc := make(chan error, 1)
	listen := net.JoinHostPort(testutil.LoopbackAddr().String(), "0")
	go func() {
		errc <- run(ctx, "siw", "", listen, "", true, func(a net.Addr) { addrs <- a })
	}()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-errc:
		t.Fatal(err)
	}

	// The active end connects and goes away without a word.
	dev, err := siw.New(siw.Options{}).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(verbs.CQAttr{Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.Modify(verbs.QPStateInit); err != nil {
		t.Fatal(err)
	}
	conn, err := dev.Connect(ctx, qp, addr.String(), verbs.ConnParam{PrivateData: []byte("godapl interop: active")})
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Disconnect(); err != nil {
		t.Fatal(err)
	}

	err = <-errc
	if !errors.Is(err, verbs.ErrDisconnected) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("passive end: %v, want the connection's end (%v)", err, verbs.ErrDisconnected)
	}
}
