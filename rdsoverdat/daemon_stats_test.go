package rdsoverdat

import (
	"testing"
	"time"
)

// NodeStats on a daemon Stack and its sockets are the daemon's nodes'
// counters, the host's view that rds-info shows: they count the
// clients' traffic, agree with the daemon's own Stack, and report
// false where the daemon has no node or no daemon answers.
func TestDaemonNodeStats(t *testing.T) {
	leakCheck(t)
	st, d := daemonStack(t, tcpBenchCfg)
	as := testAddrs(3)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	const n = 20
	for range n {
		if _, err := a.SendTo(make([]byte, 100), b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		recvTimeout(t, b, make([]byte, 100), 5*time.Second)
	}
	// A Stack of its own: st, made by daemonStack, could look into the
	// daemon's Stack in this process.
	cl := NewStack(Config{Daemon: st.Daemon()})
	defer cl.Close()
	got, ok := cl.NodeStats(as[1])
	if !ok {
		t.Fatal("no NodeStats for the daemon's node")
	}
	want, ok := d.st.NodeStats(as[1])
	if !ok {
		t.Fatal("the daemon has no node")
	}
	if got.RecvDelivered < n || got.RecvDelivered != want.RecvDelivered || got.RecvBytes != want.RecvBytes {
		t.Fatalf("delivered %d (%d bytes), the daemon says %d (%d bytes), sent %d",
			got.RecvDelivered, got.RecvBytes, want.RecvDelivered, want.RecvBytes, n)
	}
	sent, ok := a.NodeStats()
	if !ok {
		t.Fatal("no NodeStats for a bound daemon socket")
	}
	want, _ = d.st.NodeStats(as[0])
	if sent.SendQueued < n || sent.SendQueued != want.SendQueued || sent.SendBytes != want.SendBytes {
		t.Fatalf("queued %d (%d bytes), the daemon says %d (%d bytes), sent %d",
			sent.SendQueued, sent.SendBytes, want.SendQueued, want.SendBytes, n)
	}
	if _, ok := cl.NodeStats(as[2]); ok {
		t.Error("NodeStats of an address with no daemon node")
	}
	u := st.Socket()
	defer u.Close()
	if _, ok := u.NodeStats(); ok {
		t.Error("NodeStats of an unbound socket")
	}
	gone := NewStack(Config{Daemon: t.TempDir() + "/none.sock"})
	defer gone.Close()
	if _, ok := gone.NodeStats(as[0]); ok {
		t.Error("NodeStats with no daemon")
	}
}
