package rdsoverdat

import (
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/tcp"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// A connect worker whose connection fails the moment it is attached
// keeps dialling. The connection's writer asks for a reconnect while the
// worker still runs, which is then a no-op, so the worker itself must see
// that its connection is gone. It left the path with neither a connection
// nor a worker: the active side of a peer that had restarted never
// connected again, and its senders, blocked for SO_SNDBUF room, never
// queued the message that would have (TestRDSPeerRestart/tcp stalled on a
// loaded host). The peer here is a plain listener that holds what it
// accepts; the first connection is reset by the test right after the
// worker attached it, before the worker looks again. Before the fix no
// second connection ever came.
func TestTCPConnectWorkerSurvivesInstantFailure(t *testing.T) {
	leakCheck(t)
	as := testAddrs(2)
	lo, hi := as[0], as[1]
	if hi.Less(lo) {
		lo, hi = hi, lo
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort(hi.String(), strconv.Itoa(wire.TCPPort)))
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	})

	var done atomic.Bool
	t.Cleanup(func() { tcp.SetAttachHook(nil) }) // after the stack's Close, which stops the workers
	tcp.SetAttachHook(func(p xport.Path) {
		if p.Conn().RemoteAddr() != hi || done.Swap(true) {
			return
		}
		if c, ok := tcp.CurrentConn(p); ok {
			c.Abort() // returns once its writer has asked for a reconnect
		}
	})
	st := newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{})}})
	a := mustBind(t, st, ap(lo, 0))
	if _, err := a.SendTo([]byte("x"), ap(hi, 5), 0); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case c := <-accepted:
			t.Cleanup(func() { c.Close() })
		case <-time.After(10 * time.Second):
			t.Fatalf("connection %d never came", i+1)
		}
	}
}
