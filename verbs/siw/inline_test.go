package siw_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// Inline receive: a goroutine waiting on the CQ of a QP reads and places
// the QP's inbound FPDUs itself (qp_rxinline.go).

const inlineTimeout = 5 * time.Second

// inlinePair connects two sides whose QPs each own their CQ.
func inlinePair(t *testing.T, opts siw.Options) (sa, sb *verbstest.Side) {
	t.Helper()
	verbstest.CheckLeaks(t)
	da, db := openPair(t, opts)
	t.Cleanup(func() {
		da.Close()
		db.Close()
	})
	return verbstest.ConnectPair(t, da, db, "127.0.0.1:0", verbstest.PairAttr{BufSize: 64 << 10, Caps: verbs.QPCaps{MaxSendWR: 16, MaxRecvWR: 16}})
}

// pingPong runs n round trips of 64-byte Sends, each side blocking in
// CQ.Wait, and checks every message.
func pingPong(t *testing.T, sa, sb *verbstest.Side, n int) {
	t.Helper()
	echo := make(chan error, 1)
	go func() {
		for i := range n {
			wc, err := waitOne(sb.CQ, inlineTimeout)
			if err == nil && (wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv || sb.Buf.B[0] != byte(i)) {
				err = errors.New("echo side: bad receive " + wc.Status.String())
			}
			if err == nil {
				copy(sb.Buf.B[64:], sb.Buf.B[:64])
			}
			if err == nil && i < n-1 {
				_, err = sb.QP.PostRecv([]verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}})
			}
			if err == nil {
				_, err = sb.QP.PostSend([]verbs.SendWR{{ID: 4, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(64, 64)}}})
			}
			if err != nil {
				echo <- err
				return
			}
		}
		echo <- nil
	}()
	verbstest.MustPostRecv(t, sb.QP, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}})
	verbstest.MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	for i := range n {
		sa.Buf.B[64] = byte(i)
		verbstest.MustPostSend(t, sa.QP, verbs.SendWR{ID: 3, Opcode: verbs.OpSend, SGL: []verbs.SGE{sa.Buf.SGE(64, 64)}})
		wc := verbstest.PollOne(t, sa.CQ, inlineTimeout)
		verbstest.ExpectWC(t, wc, 1, verbs.WCSuccess, verbs.WCRecv)
		if sa.Buf.B[0] != byte(i) {
			t.Fatalf("round trip %d came back with %d", i, sa.Buf.B[0])
		}
		if i < n-1 {
			verbstest.MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
		}
	}
	if err := <-echo; err != nil {
		t.Fatal(err)
	}
	if got := sb.QP.Query().State; got != verbs.QPStateRTS {
		t.Fatalf("echo QP in %v", got)
	}
}

func waitOne(cq verbs.CQ, timeout time.Duration) (verbs.WC, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wcs [1]verbs.WC
	for cq.Poll(wcs[:]) == 0 {
		if err := cq.Wait(ctx, false); err != nil {
			return verbs.WC{}, err
		}
	}
	return wcs[0], nil
}

func inlineFrames(s *verbstest.Side) uint64 { return s.Dev.Stats().InlineFrames }

func TestInlineReceivePingPong(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   siw.Options
		inline bool
	}{
		{"inline", siw.Options{}, true},
		{"crc", siw.Options{CRC: true}, true},
		{"no-inline", siw.Options{NoInlineReceive: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sa, sb := inlinePair(t, c.opts)
			const n = 200
			pingPong(t, sa, sb, n)
			fa, fb := inlineFrames(sa), inlineFrames(sb)
			if !c.inline {
				if fa != 0 || fb != 0 {
					t.Fatalf("%d and %d frames received inline with NoInlineReceive", fa, fb)
				}
				return
			}
			// Each side falls back to its receive goroutine until the
			// goroutine has handed over; after that, waiters read.
			if fa < n/2 || fb < n/2 {
				t.Fatalf("only %d and %d of %d messages each way received inline", fa, fb, n)
			}
		})
	}
}

// engageInline runs round trips until sb's waiters receive inline, so
// that its receive goroutine has handed the socket over.
func engageInline(t *testing.T, sa, sb *verbstest.Side) {
	t.Helper()
	pingPong(t, sa, sb, 20)
	if inlineFrames(sb) == 0 {
		t.Fatal("no frame received inline")
	}
}

// TestInlineReceiveWaitEnds: a waiter that reads the socket itself still
// returns for its context (canceled or past its deadline) and for a
// completion another goroutine pushes.
func TestInlineReceiveWaitEnds(t *testing.T) {
	sa, sb := inlinePair(t, testOptions())
	engageInline(t, sa, sb)

	// Cancellation.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sb.CQ.Wait(ctx, false) }()
	awaitInlineWaiter(t, sa, sb)
	cancel()
	expectWaitEnd(t, "canceled Wait", done, context.Canceled)

	// Deadline.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	go func() { done <- sb.CQ.Wait(ctx, false) }()
	expectWaitEnd(t, "Wait past its deadline", done, context.DeadlineExceeded)

	// A completion pushed by the poster of a signaled RDMA Write.
	go func() { done <- sb.CQ.Wait(context.Background(), false) }()
	awaitInlineWaiter(t, sa, sb)
	verbstest.MustPostSend(t, sb.QP, verbs.SendWR{ID: 7, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}, RemoteAddr: sa.Buf.Addr(32 << 10), RKey: sa.Buf.RKey()}) // memory nothing else touches
	expectWaitEnd(t, "Wait for a Write completion", done, nil)
	verbstest.ExpectWC(t, verbstest.PollOne(t, sb.CQ, inlineTimeout), 7, verbs.WCSuccess, verbs.WCRDMAWrite)

	// The stream still works both ways.
	verbstest.RoundTrip(t, sa, sb, 100, 1, inlineTimeout)
	verbstest.RoundTrip(t, sb, sa, 100, 2, inlineTimeout)
}

// TestInlineReceiveDoneContext: CQ.Wait leaves its first look at the CQ
// to the inline receiver, which does not look when the context has
// already ended; Wait then looks itself, so that a completion already
// queued is still reported (nil) before the context's error.
func TestInlineReceiveDoneContext(t *testing.T) {
	sa, sb := inlinePair(t, testOptions())
	engageInline(t, sa, sb)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	verbstest.MustPostSend(t, sb.QP, verbs.SendWR{ID: 9, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}, RemoteAddr: sa.Buf.Addr(32 << 10), RKey: sa.Buf.RKey()}) // memory nothing else touches
	for deadline := time.Now().Add(inlineTimeout); sb.CQ.Len() == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the Write's completion never came")
		}
	}
	if err := sb.CQ.Wait(ctx, false); err != nil {
		t.Fatalf("Wait with an ended context on a CQ holding a completion = %v, want nil", err)
	}
	verbstest.ExpectWC(t, verbstest.PollOne(t, sb.CQ, inlineTimeout), 9, verbs.WCSuccess, verbs.WCRDMAWrite)
	if err := sb.CQ.Wait(ctx, false); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with an ended context on an empty CQ = %v, want context.Canceled", err)
	}
	verbstest.RoundTrip(t, sa, sb, 100, 1, inlineTimeout)
}

// awaitInlineWaiter waits until a goroutine waiting on s's CQ reads s's
// socket itself, so that what the test does next reaches a waiter in
// inline receive. A waiter that finds the receive goroutine reading the
// socket asks for it, and gets it once that goroutine has processed an
// FPDU; peer sends one for each ask, an RDMA Write into memory nothing
// else touches, which completes nothing on s.
func awaitInlineWaiter(t *testing.T, peer, s *verbstest.Side) {
	t.Helper()
	awaitInline(t, s.Conn, func() {
		verbstest.MustPostSend(t, peer.QP, verbs.SendWR{Opcode: verbs.OpRDMAWrite,
			SGL: []verbs.SGE{peer.Buf.SGE(0, 8)}, RemoteAddr: s.Buf.Addr(48 << 10), RKey: s.Buf.RKey()})
	})
}

// awaitInline waits until a waiter reads c's socket itself, calling nudge
// to have the peer send an FPDU each time a waiter asks the receive
// goroutine for the socket.
func awaitInline(t *testing.T, c verbs.Conn, nudge func()) {
	t.Helper()
	deadline := time.Now().Add(inlineTimeout)
	for ; !siw.InlineWaiting(c); runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("no waiter reads the socket inline")
		}
		if siw.RxWanted(c) {
			nudge()
			for siw.RxWanted(c) && !siw.InlineWaiting(c) && time.Now().Before(deadline) {
				runtime.Gosched()
			}
		}
	}
}

func expectWaitEnd(t *testing.T, what string, done <-chan error, want error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, want) {
			t.Fatalf("%s returned %v, want %v", what, err, want)
		}
	case <-time.After(inlineTimeout):
		t.Fatalf("%s did not return", what)
	}
}

// TestInlineReceiveNobodyWaiting: once waiters have taken over the
// socket, inbound work that no waiter is there for — an RDMA Read Request
// to answer — is still served, by the receive goroutine taking the
// socket back.
func TestInlineReceiveNobodyWaiting(t *testing.T) {
	sa, sb := inlinePair(t, testOptions())
	engageInline(t, sa, sb)
	want := verbstest.Pattern(4096, 3)
	copy(sb.Buf.B[8192:], want)
	verbstest.MustPostSend(t, sa.QP, verbs.SendWR{ID: 8, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sa.Buf.SGE(8192, 4096)}, RemoteAddr: sb.Buf.Addr(8192), RKey: sb.Buf.RKey()})
	verbstest.ExpectWC(t, verbstest.PollOne(t, sa.CQ, inlineTimeout), 8, verbs.WCSuccess, verbs.WCRDMARead)
	if string(sa.Buf.B[8192:8192+4096]) != string(want) {
		t.Fatal("RDMA Read brought other bytes")
	}
}

// TestInlineReceiveTerminate: a waiter that reads a bad FPDU ends the
// stream as the receive goroutine would: the peer gets the Terminate,
// outstanding receives flush, and both goroutines of the stream exit
// (CheckLeaks).
func TestInlineReceiveTerminate(t *testing.T) {
	sa, sb := inlinePair(t, testOptions())
	engageInline(t, sa, sb)
	verbstest.MustPostRecv(t, sb.QP, verbs.RecvWR{ID: 5, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}})
	done := make(chan error, 1)
	go func() { done <- sb.CQ.Wait(context.Background(), false) }()
	awaitInlineWaiter(t, sa, sb)
	// An RDMA Write beyond sb's buffer: sb terminates (base/bounds).
	verbstest.MustPostSend(t, sa.QP, verbs.SendWR{ID: 9, Opcode: verbs.OpRDMAWrite,
		SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}, RemoteAddr: sb.Buf.Addr(len(sb.Buf.B) - 8), RKey: sb.Buf.RKey()})
	expectWaitEnd(t, "Wait on a stream that terminates", done, nil)
	verbstest.ExpectWC(t, verbstest.PollOne(t, sb.CQ, inlineTimeout), 5, verbs.WCWRFlushErr, verbs.WCRecv)
	select {
	case <-sb.Conn.Done():
	case <-time.After(inlineTimeout):
		t.Fatal("the terminated stream did not end")
	}
	expectTerminate(t, sb.Conn, verbs.TermLayerDDP, 1, 0x01, false)
	select {
	case <-sa.Conn.Done():
	case <-time.After(inlineTimeout):
		t.Fatal("the peer's stream did not end")
	}
	expectTerminate(t, sa.Conn, verbs.TermLayerDDP, 1, 0x01, true)
}

// TestInlineReceiveStreaming: a waiter whose read brings many FPDUs at
// once gives the receive side back to the receive goroutine, so that a
// streaming peer is placed in parallel with the application; most of a
// stream of batched Sends is then received by the goroutine.
//
// With one P the application's next Wait always runs before the receive
// goroutine wakes: that case fails every time when the waiter leaves the
// receive side to whoever comes first instead of handing it to the
// goroutine, which a loaded host does only now and then.
//
// How many FPDUs one read brings depends on scheduling: on a loaded host
// the waiter can wake for every few FPDUs of a burst, keep the receive
// side, and rightly so. So the stream is tried up to three times, and
// the test fails only if every try was received mostly inline, as it is
// every time when a waiter never gives the receive side back.
func TestInlineReceiveStreaming(t *testing.T) {
	for _, procs := range []int{0, 1} {
		t.Run(fmt.Sprintf("procs=%d", procs), func(t *testing.T) {
			if procs > 0 {
				old := runtime.GOMAXPROCS(procs)
				t.Cleanup(func() { runtime.GOMAXPROCS(old) })
			}
			streamSends(t)
		})
	}
}

// streamSends streams bursts of 16 Sends to a side whose waiters receive
// inline, and fails if most of every try were received inline.
func streamSends(t *testing.T) {
	sa, sb := inlinePair(t, testOptions())
	engageInline(t, sa, sb)
	const batch, bursts, tries = 16, 40, 3
	recvs := make([]verbs.RecvWR, batch)
	sends := make([]verbs.SendWR, batch)
	for i := range batch {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sb.Buf.SGE(i*64, 64)}}
		sends[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{sa.Buf.SGE(i*64, 64)}}
	}
	sends[batch-1].Flags = verbs.SendSignaled
	for try := 1; ; try++ {
		before := inlineFrames(sb)
		for range bursts {
			verbstest.MustPostRecv(t, sb.QP, recvs...)
			verbstest.MustPostSend(t, sa.QP, sends...)
			for _, wc := range verbstest.PollN(t, sb.CQ, batch, inlineTimeout) {
				if wc.Status != verbs.WCSuccess {
					t.Fatalf("receive completion %+v", wc)
				}
			}
			verbstest.ExpectWC(t, verbstest.PollOne(t, sa.CQ, inlineTimeout), batch-1, verbs.WCSuccess, verbs.WCSend)
		}
		inline := inlineFrames(sb) - before
		if inline <= batch*bursts/2 {
			return
		}
		if try == tries {
			t.Fatalf("%d of %d streamed Sends received inline (try %d of %d); the receive goroutine should take most", inline, batch*bursts, try, tries)
		}
		t.Logf("try %d: %d of %d streamed Sends received inline", try, inline, batch*bursts)
	}
}
