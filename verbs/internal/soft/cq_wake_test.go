package soft

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

// wakeCQ is a CQ of a device of its own, with no QP, so Wait takes the
// sleeping path only.
func wakeCQ(t *testing.T, depth int) *CQ {
	t.Helper()
	vcq, err := NewDevice(Limits()).CreateCQ(verbs.CQAttr{Depth: depth})
	if err != nil {
		t.Fatal(err)
	}
	return vcq.(*CQ)
}

// TestCQWaitPushAfterLastLook: a push made after a waiter's last look
// and before it sleeps wakes it. The hook runs in that window, on the
// waiter's goroutine, so the push lands there every time.
func TestCQWaitPushAfterLastLook(t *testing.T) {
	cq := wakeCQ(t, 4)
	pushes := 0
	lastLookHook = func(c *CQ) {
		if c == cq && pushes < 3 {
			pushes++
			c.Push(&verbs.WC{ID: uint64(pushes)})
		}
	}
	defer func() { lastLookHook = nil }()
	wc := make([]verbs.WC, 1)
	for i := range 3 {
		// Generous: a lost wake-up ends the Wait here, a kept one at once.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cq.Wait(ctx, false)
		cancel()
		if err != nil {
			t.Fatalf("wait %d: %v, want the push made after the last look", i, err)
		}
		if cq.Poll(wc) != 1 || wc[0].ID != uint64(i+1) {
			t.Fatalf("wait %d: no completion %d to poll", i, i+1)
		}
	}
	if n := cq.sleepers.Load(); n != 0 {
		t.Fatalf("%d sleepers counted after every Wait returned", n)
	}
}

// TestCQWaitPingPong: a waiter and a pusher take turns, the push landing
// anywhere in the waiter's next Wait (before its look, between its look
// and its sleep, during the sleep), since pushes skip the channel when
// no waiter is counted. A wake-up lost in that window leaves the waiter
// asleep until the deadline.
func TestCQWaitPingPong(t *testing.T) {
	cq := wakeCQ(t, 4)
	const rounds = 20000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ack := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		wc := make([]verbs.WC, 1)
		for i := range rounds {
			if err := cq.Wait(ctx, false); err != nil {
				errc <- err
				return
			}
			if cq.Poll(wc) != 1 || wc[0].ID != uint64(i) {
				errc <- verbs.ErrInvalidArgument
				return
			}
			ack <- struct{}{}
		}
		errc <- nil
	}()
	for i := range rounds {
		// Vary where the push lands in the waiter's Wait.
		for range i % 7 * 50 {
			_ = cq.sleepers.Load()
		}
		cq.Push(&verbs.WC{ID: uint64(i)})
		select {
		case <-ack:
		case err := <-errc:
			t.Fatalf("round %d: the waiter ended: %v", i, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if n := cq.sleepers.Load(); n != 0 {
		t.Fatalf("%d sleepers counted after every Wait returned", n)
	}
}

// TestCQWaitManyWaiters: several waiters share one CQ and each push
// satisfies one Wait; a waiter that wakes and finds work left passes the
// token on only when another is counted, and all of them must still
// see every completion. Cancelled waits leave no sleeper counted.
func TestCQWaitManyWaiters(t *testing.T) {
	cq := wakeCQ(t, 64)
	const waiters, perWaiter = 4, 2000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	got := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wc := make([]verbs.WC, 1)
			for {
				if err := cq.Wait(ctx, false); err != nil {
					return
				}
				if cq.Poll(wc) == 1 {
					mu.Lock()
					got++
					if got == waiters*perWaiter {
						close(done)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range waiters * perWaiter {
		for cq.Len() >= 32 { // stay below the depth: an overflow ends the test
			time.Sleep(50 * time.Microsecond)
		}
		cq.Push(&verbs.WC{ID: uint64(i)})
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("%d of %d completions taken before the deadline", got, waiters*perWaiter)
		mu.Unlock()
	}
	cancel()
	wg.Wait()
	if n := cq.sleepers.Load(); n != 0 {
		t.Fatalf("%d sleepers counted after every Wait returned", n)
	}
}
