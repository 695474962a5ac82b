//go:build rdmacore

package rdmacore

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// hookCtx is a fastpath.EndHooker whose Done never closes: only its hook
// can end a wait on it.
type hookCtx struct {
	context.Context
	mu   sync.Mutex
	hook *func()
	err  error
}

var _ fastpath.EndHooker = (*hookCtx)(nil)

func (c *hookCtx) SetEndHook(f *func()) {
	c.mu.Lock()
	c.hook = f
	c.mu.Unlock()
}

func (c *hookCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *hookCtx) end() {
	c.mu.Lock()
	c.err = context.Canceled
	h := c.hook
	c.mu.Unlock()
	if h != nil {
		(*h)()
	}
}

// awaitWaiters yields until c has an owner parked and followers more
// waiters.
func awaitWaiters(t *testing.T, c verbs.CQ, followers int) {
	t.Helper()
	q := c.(*cq)
	deadline := time.Now().Add(30 * time.Second)
	for {
		q.mu.Lock()
		ok := q.w.owned && q.w.followers == followers
		q.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no owner and %d followers in Wait", followers)
		}
		runtime.Gosched()
	}
}

// waitResult fails the test if Wait has not returned in time.
func waitResult(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return")
		return nil
	}
}

// TestCQWaitEndHook: a waiter parked on the CQ's channel is woken by the
// end hook of its context alone, with no goroutine watching Done.
func TestCQWaitEndHook(t *testing.T) {
	sa, _ := pair(t, verbstest.PairAttr{})
	ctx := &hookCtx{Context: context.Background()}
	done := make(chan error, 1)
	go func() { done <- sa.CQ.Wait(ctx, false) }()
	awaitWaiters(t, sa.CQ, 0)
	ctx.end()
	if err := waitResult(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
}

// TestCQWaitFollowers: waiters beside the one parked on the channel return
// with it when a completion comes, and each context ends only its own
// wait.
func TestCQWaitFollowers(t *testing.T) {
	sa, sb := pair(t, verbstest.PairAttr{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 3)
	go func() { done <- sa.CQ.Wait(ctx, false) }()
	awaitWaiters(t, sa.CQ, 0)
	go func() { done <- sa.CQ.Wait(context.Background(), false) }()
	awaitWaiters(t, sa.CQ, 1)
	cctx, ccancel := context.WithCancel(context.Background())
	go func() { done <- sa.CQ.Wait(cctx, false) }()
	awaitWaiters(t, sa.CQ, 2)
	ccancel()
	if err := waitResult(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled follower: Wait = %v, want context.Canceled", err)
	}
	awaitWaiters(t, sa.CQ, 1)
	if _, err := sa.QP.PostRecv([]verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.QP.PostSend([]verbs.SendWR{{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := waitResult(t, done); err != nil {
			t.Fatalf("Wait = %v", err)
		}
	}
}

// TestCQWaitAllocs: a message with both sides waiting for its completions
// allocates nothing, the context's registration kept from wait to wait.
func TestCQWaitAllocs(t *testing.T) {
	sa, sb := pair(t, verbstest.PairAttr{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}
	wcs := make([]verbs.WC, 2)
	msg := func() {
		if _, err := sa.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.QP.PostSend(send); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			cq verbs.CQ
			wc []verbs.WC
		}{{sa.CQ, wcs[1:2]}, {sb.CQ, wcs[:1]}} {
			for c.cq.Poll(c.wc) == 0 {
				if err := c.cq.Wait(ctx, false); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	msg() // registers ctx
	if n := testing.AllocsPerRun(100, msg); n != 0 {
		t.Fatalf("a message with Wait allocates %.1f times, want 0", n)
	}
}

// TestCQWaitChannelFDs: a CQ's completion channel and its descriptor in the
// poller go with the CQ, a waiter parked on it or not.
func TestCQWaitChannelFDs(t *testing.T) {
	name, _ := testDevice(t)
	dev, err := New().OpenDevice(name)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	fds := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(es)
	}
	make1 := func(parked bool) {
		c, err := dev.CreateCQ(verbs.CQAttr{Depth: 16})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		if parked {
			go func() { done <- c.Wait(context.Background(), true) }()
			awaitWaiters(t, c, 0)
		}
		if err := c.Destroy(); err != nil {
			t.Fatal(err)
		}
		if parked {
			if err := waitResult(t, done); !errors.Is(err, verbs.ErrClosed) {
				t.Fatalf("Wait across Destroy = %v, want ErrClosed", err)
			}
		}
	}
	make1(true)
	before := fds()
	for i := range 20 {
		make1(i%2 == 0)
	}
	if after := fds(); after != before {
		t.Fatalf("%d descriptors open after 20 CQs, %d before", after, before)
	}
}
