package rdsoverdat

import (
	"runtime"
	"testing"
)

// A fresh socket's stream through the daemon allocates next to nothing:
// the core's message objects come from the reserve when a collection
// emptied the pool, and the sink's buffer, the connection's batch
// buffers and the client's held queue are made whole for the first
// message, a few allocations in all, instead of growing with the
// stream.
func TestDaemonStreamStartAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	opts := []Option{SendBuffer(4 << 20), RecvBuffer(8 << 20)}
	a := mustBind(t, st, ap(as[0], 0), opts...)
	b := mustBind(t, st, ap(as[1], 0), opts...)
	dst := b.BoundAddr()
	// The connection comes up outside what is counted.
	if _, err := a.SendTo(nil, dst, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecvMsg(&Msg{}, 0); err != nil {
		t.Fatal(err)
	}
	const n = 10000
	msg := make([]byte, 64)
	m := Msg{Data: make([]byte, 64)}
	done := make(chan error, 1)
	// The pool starts empty, as after any two collections.
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		for range n {
			if _, err := b.RecvMsg(&m, 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for range n {
		if _, err := a.SendTo(msg, dst, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if per := float64(after.Mallocs-before.Mallocs) / n; per > 0.05 {
		t.Errorf("%.3f allocs a message in a fresh socket's first %d", per, n)
	}
}
