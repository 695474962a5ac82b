package rdsoverdat

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Calls of one daemon socket read the ring in turn: while a receive
// waits (holding the reading token), other calls get their replies from
// it; a wait canceled meanwhile returns; then the receive gets its
// message. With rings no goroutine reads for the socket.
func TestDaemonCallsShareReading(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	if a.b.(*daemonSocket).lead == nil {
		t.Fatal("the socket does not use rings")
	}
	got := make(chan error, 1)
	go func() {
		m := Msg{Data: make([]byte, 16)}
		n, err := b.RecvMsg(&m, 0)
		if err == nil && string(m.Data[:n]) != "late" {
			err = errors.New("received " + string(m.Data[:n]))
		}
		got <- err
	}()
	eventually(t, 5*time.Second, "the receive to wait", func() bool { return st.daemonPending(b) == 1 })
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				var rb RecvBuffer
				if err := b.Option(&rb); err != nil || rb <= 0 {
					t.Errorf("Option: %v %v", rb, err)
					return
				}
				if ev := b.Poll(); ev&PollIn != 0 {
					t.Errorf("Poll: %v before any message", ev)
					return
				}
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := b.Wait(ctx, PollIn)
		waited <- err
	}()
	wg.Wait()
	eventually(t, 5*time.Second, "the wait to reach the daemon", func() bool { return st.daemonPending(b) == 2 })
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v", err)
	}
	if _, err := a.SendTo([]byte("late"), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
