package perf

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// TestWorkloadsMem runs every workload briefly over the in-memory
// provider and the TCP baseline and checks that they moved data.
func TestWorkloadsMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := mem.New()
	sdev, _ := p.Open(mem.DeviceName)
	cdev, _ := p.Open(mem.DeviceName)
	defer sdev.Close()
	defer cdev.Close()
	srv, err := Serve(ctx, sdev, "perf:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tsrv, err := ServeTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tsrv.Close()
	for _, tc := range []Params{
		{Test: TestWrite, Size: 64 << 10, Depth: 8},
		{Test: TestSendRate, Size: 64, Depth: 128},
		{Test: TestPingPong, Size: 64, Depth: 1},
	} {
		tc.Duration = 100 * time.Millisecond
		r, err := Run(ctx, cdev, srv.Addr().String(), tc)
		if err != nil {
			t.Fatalf("%v: %v", tc.Test, err)
		}
		if r.Msgs == 0 || r.Bytes != r.Msgs*uint64(tc.Size) {
			t.Fatalf("%v: result %+v", tc.Test, r)
		}
		if tc.Test == TestPingPong && (len(r.RTTs) != int(r.Msgs) || r.Percentile(50) <= 0) {
			t.Fatalf("pingpong RTTs %d for %d msgs", len(r.RTTs), r.Msgs)
		}
		tr, err := RunTCP(ctx, tsrv.Addr().String(), tc)
		if err != nil {
			t.Fatalf("tcp %v: %v", tc.Test, err)
		}
		if tr.Msgs == 0 {
			t.Fatalf("tcp %v moved nothing", tc.Test)
		}
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Fatalf("server errors: %v", errs)
	}
}

// waitCountingCQ is a CQ that is empty until it has been waited on once.
type waitCountingCQ struct {
	verbs.CQ
	polls, waits int
}

func (c *waitCountingCQ) Poll(wcs []verbs.WC) int {
	c.polls++
	if c.waits == 0 {
		return 0
	}
	wcs[0] = verbs.WC{ID: 7}
	return 1
}

func (c *waitCountingCQ) Wait(ctx context.Context, solicitedOnly bool) error {
	c.waits++
	return nil
}

// TestPollWaitsAtOnce: poll sleeps in CQ.Wait as soon as the CQ is
// empty. A spin before it, on two cores (both ends of rdma-perf's
// loopback run in one process), takes the CPU the other end and the
// provider need, and multiplies the 64 B round trip.
func TestPollWaitsAtOnce(t *testing.T) {
	var e endpoint
	cq := &waitCountingCQ{}
	n, err := e.poll(context.Background(), cq)
	if err != nil || n != 1 || e.wcs[0].ID != 7 {
		t.Fatalf("poll = %d, %v, wc %+v", n, err, e.wcs[0])
	}
	if cq.polls != 2 || cq.waits != 1 {
		t.Fatalf("poll polled %d times around %d waits; want one poll before the wait, one after", cq.polls, cq.waits)
	}
}

// TestPingPongInlineSiw: the ping-pong loops of both ends wait in
// CQ.Wait on a CQ of their own, so that soft-iWARP's inline receive
// serves them (the waiter reads the socket itself, one wakeup per
// message as with TCP). A loop that only polled would never engage it.
func TestPingPongInlineSiw(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sdev, err := siw.New(siw.Options{}).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer sdev.Close()
	cdev, err := siw.New(siw.Options{}).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer cdev.Close()
	srv, err := Serve(ctx, sdev, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r, err := Run(ctx, cdev, srv.Addr().String(), Params{Test: TestPingPong, Size: 64, Depth: 1, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The receive goroutine serves the first messages, until a waiter
	// asks for the socket; from then on waiters read.
	ci, si := cdev.Stats().InlineFrames, sdev.Stats().InlineFrames
	t.Logf("%d round trips, p50 %v; frames received inline: client %d, server %d", r.Msgs, r.Percentile(50), ci, si)
	if r.Msgs < 20 {
		t.Skipf("only %d round trips: too loaded a machine to tell", r.Msgs)
	}
	if ci < r.Msgs/2 || si < r.Msgs/2 {
		t.Errorf("of %d echoes, the client received %d inline and the server %d; want most", r.Msgs, ci, si)
	}
	if errs := srv.Errors(); len(errs) > 0 {
		t.Fatalf("server errors: %v", errs)
	}
}

// TestRecvRepostAllocs: reposting a receive allocates nothing (a work
// request built on the stack and handed to the QP interface would escape,
// two allocations per message on the send-rate server).
func TestRecvRepostAllocs(t *testing.T) {
	dev, err := mem.New().Open(mem.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	e, err := newEndpoint(dev, 64*64, 4, 512)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	i := 0
	n := testing.AllocsPerRun(100, func() {
		if err := e.queueRecv(uint64(i), i%64*64, 64); err != nil {
			t.Fatal(err)
		}
		if err := e.postRecvSlot(i%64, 64); err != nil {
			t.Fatal(err)
		}
		if err := e.postRecvs(); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if n != 0 {
		t.Fatalf("%v allocations per repost; want 0", n)
	}
}

// With Iters and no Duration every workload, and its TCP baseline, sends
// exactly Iters messages, however the batches fall.
func TestItersMem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := mem.New()
	sdev, _ := p.Open(mem.DeviceName)
	cdev, _ := p.Open(mem.DeviceName)
	defer sdev.Close()
	defer cdev.Close()
	srv, err := Serve(ctx, sdev, "perf:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tsrv, err := ServeTCP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tsrv.Close()
	for _, tc := range []Params{
		{Test: TestWrite, Size: 4096, Depth: 8, Iters: 1001},
		{Test: TestSendRate, Size: 64, Depth: 128, Iters: 1001},
		{Test: TestPingPong, Size: 64, Depth: 1, Iters: 101},
	} {
		r, err := Run(ctx, cdev, srv.Addr().String(), tc)
		if err != nil {
			t.Fatalf("%v: %v", tc.Test, err)
		}
		if r.Msgs != tc.Iters || r.Bytes != tc.Iters*uint64(tc.Size) {
			t.Errorf("%v: %d messages, %d bytes, want %d", tc.Test, r.Msgs, r.Bytes, tc.Iters)
		}
		tr, err := RunTCP(ctx, tsrv.Addr().String(), tc)
		if err != nil || tr.Msgs != tc.Iters {
			t.Errorf("tcp %v: %v, %+v", tc.Test, err, tr)
		}
	}
}
