package rdsoverdat

import (
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/tcp"
)

// TestTCPAckPollLone: in a request-response exchange each side has one
// unacknowledged message at a time, freed by the next send's write; the
// writer must not wake on its ack poll timer for each of them (a
// thread wake-up per round trip), yet the last one is
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
	c := curReader(t, st.nodeAt(as[0]), as[1])
	time.Sleep(tcp.AckTrust + 50*time.Millisecond)
	exchange()
	time.Sleep(30 * time.Millisecond)
	before := c.AckPolls()
	start := time.Now()
	const n = 20
	for range n {
		time.Sleep(2 * time.Millisecond) // well past the fastest ack poll, the think time of a request
		exchange()
	}
	// A lone message's ack is polled for once per lone poll, so a slow
	// machine that stretches the exchanges earns more of those polls: what
	// must not happen is a poll per round trip.
	polls := c.AckPolls() - before
	if allowed := int64(n/4) + int64(time.Since(start)/tcp.LonePoll()); int64(polls) > allowed {
		t.Errorf("%d ack poll wake-ups in %d round trips over %v (at most %d)", polls, n, time.Since(start), allowed)
	}
	eventually(t, 5*time.Second, "the last message acked", func() bool { s, _ := a.Buffered(); return s == 0 })
}

// TestTCPAckPollLoneWakesForBlockedSender: a message that fills its
// socket's SO_SNDBUF alone is also a lone unacknowledged message, whose
// ack the writer polls for slowly; the next SendMsg waits for the room
// that ack frees, so it must have the writer poll at its fastest again
// (blockForRoom, WakeForRoom). With the slow poll stretched to an hour,
// a sender that did not wake the writer would wait out its send timeout.
func TestTCPAckPollLoneWakesForBlockedSender(t *testing.T) {
	leakCheck(t)
	d := tcp.LonePoll()
	t.Cleanup(func() { tcp.SetLonePoll(d) }) // after the stack's, which stops its writers
	tcp.SetLonePoll(time.Hour)
	st := tcpStack(t)
	as := testAddrs(2)
	const size = 16 << 10
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(size), SendTimeout(5*time.Second))
	b := mustBind(t, st, ap(as[1], 0))
	buf := make([]byte, size)
	msg := make([]byte, size)
	exchange := func() {
		t.Helper()
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, b, buf, 5*time.Second)
	}
	exchange() // connect
	time.Sleep(tcp.AckTrust + 50*time.Millisecond)
	for range 5 { // each send blocks until the one before it is acked
		exchange()
	}
}
