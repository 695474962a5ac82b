package rdsoverdat

import (
	"testing"
	"time"
)

// TestTCPAckPollLone: in a request-response exchange each side has one
// unacknowledged message at a time, freed by the next send's write; the
// writer must not wake on its ack poll timer for each of them (one
// thread wake-up per round trip in the lab VM), yet the last one is
// still freed.
func TestTCPAckPollLone(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	buf := make([]byte, 64)
	msg := make([]byte, 64)
	exchange := func() {
		t.Helper()
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, b, buf, 5*time.Second)
		if _, err := b.SendTo(msg, a.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, a, buf, 5*time.Second)
	}
	exchange() // connect, trust the acks
	c := curReader(t, st.Node(as[0]), as[1]).c
	time.Sleep(tcpAckTrust + 50*time.Millisecond)
	exchange()
	time.Sleep(30 * time.Millisecond)
	before := c.ackPolls.Load()
	const n = 20
	for range n {
		time.Sleep(2 * time.Millisecond) // well past ackPollMin, the think time of a request
		exchange()
	}
	if polls := c.ackPolls.Load() - before; polls > n/4 {
		t.Errorf("%d ack poll wake-ups in %d round trips", polls, n)
	}
	eventually(t, 5*time.Second, "the last message acked", func() bool { s, _ := a.Buffered(); return s == 0 })
}
