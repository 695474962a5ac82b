package rdsoverdat

import (
	"testing"
	"time"
)

// TestTCPSendDirect: in a request-response exchange the sender writes
// its request itself, the connection's writer being idle, instead of
// waking the writer for every message; a one-way stream, which hears
// nothing back, leaves its messages to the writer, which batches them.
// (Two-way exchanges with a request out each way may go either way,
// depending on whether TCP acknowledged this side's request before it
// answers the peer's.)
func TestTCPSendDirect(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	if err := b.SetOption(RecvBuffer(4 << 20)); err != nil { // never congested: b sends no map
		t.Fatal(err)
	}
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
	exchange() // connect
	c := curReader(t, st.nodeAt(as[0]), as[1])
	before := c.DirectWrites()
	const n = 200
	for range n {
		exchange()
	}
	// A request finds the writer busy only when its ack poll timer fired
	// at that moment.
	if d := c.DirectWrites() - before; d < n/2 {
		t.Errorf("%d of %d requests written by their sender, want most", d, n)
	}

	// One way: a hears nothing after its first message, so at most that
	// one is written by its sender.
	before = c.DirectWrites()
	const m = 2000
	done := make(chan error, 1)
	go func() {
		rb := make([]byte, 64)
		b.SetReadDeadline(time.Now().Add(30 * time.Second))
		for range m {
			if _, err := b.RecvMsg(&Msg{Data: rb}, 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range m {
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := c.DirectWrites() - before; d > 1 {
		t.Errorf("%d of %d one-way messages written by their sender, want at most 1", d, m)
	}
}
