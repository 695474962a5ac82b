//go:build rdmacore

package rdmacore

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/rdmacore/internal/cloop"
	"github.com/godapl/godapl/verbs/verbstest"
)

// pair connects two contexts of the test device for the hot-path tests.
func pair(tb testing.TB, attr verbstest.PairAttr, opts ...Option) (sa, sb *verbstest.Side) {
	tb.Helper()
	name, addr := testDevice(tb)
	a, b := openPair(tb, name, opts...)
	tb.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return verbstest.ConnectPair(tb, a, b, addr+":0", attr)
}

// wait polls cq until it has filled wcs, blocking in Wait between polls.
func wait(tb testing.TB, cq verbs.CQ, wcs []verbs.WC) {
	got := 0
	for got < len(wcs) {
		got += cq.Poll(wcs[got:])
		if got == len(wcs) {
			return
		}
		if err := cq.Wait(context.Background(), false); err != nil {
			tb.Fatal(err)
		}
	}
}

// sendRecv moves one 64-byte message from sb to sa and polls both
// completions: the hot path of a message-rate test.
func sendRecv(tb testing.TB, sa, sb *verbstest.Side, send []verbs.SendWR, recv []verbs.RecvWR, wcs []verbs.WC) {
	if _, err := sa.QP.PostRecv(recv); err != nil {
		tb.Fatal(err)
	}
	if _, err := sb.QP.PostSend(send); err != nil {
		tb.Fatal(err)
	}
	wait(tb, sb.CQ, wcs[:1])
	wait(tb, sa.CQ, wcs[1:2])
	if wcs[0].Status != verbs.WCSuccess || wcs[1].Status != verbs.WCSuccess {
		tb.Fatalf("completions %+v", wcs)
	}
}

// TestHotPathAllocs: posting and polling allocate nothing.
func TestHotPathAllocs(t *testing.T) {
	sa, sb := pair(t, verbstest.PairAttr{})
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}
	wcs := make([]verbs.WC, 2)
	sendRecv(t, sa, sb, send, recv, wcs) // warm up
	// Wait's channel may be replaced while the test waits; count only
	// the posts and a poll that finds the completions there.
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := sa.QP.PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if _, err := sb.QP.PostSend(send); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for n := 0; n < 1; {
			n += sb.CQ.Poll(wcs[:1])
			if time.Now().After(deadline) {
				t.Fatal("no send completion")
			}
		}
		for n := 0; n < 1; {
			n += sa.CQ.Poll(wcs[1:2])
			if time.Now().After(deadline) {
				t.Fatal("no receive completion")
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("PostRecv+PostSend+Poll allocate %.1f times per message, want 0", allocs)
	}
}

// BenchmarkSend64 is the 64-byte message rate, one message in flight.
func BenchmarkSend64(b *testing.B) {
	sa, sb := pair(b, verbstest.PairAttr{})
	send := []verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}}}
	recv := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}}}
	wcs := make([]verbs.WC, 2)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		sendRecv(b, sa, sb, send, recv, wcs)
	}
}

// The method of perftest's bandwidth tests on rxe as ib_write_bw and
// ib_send_bw report it in their headers (perftest 4.5, defaults): 128
// requests in flight, no inline data, busy polling, one request per
// post; ib_write_bw signals every Write (CQ moderation 1), ib_send_bw one
// Send in 100, and ib_send_bw's receiver is a process of its own that
// keeps 512 receives posted, polling and reposting while the sender
// sends.
const (
	perfTxDepth      = 128
	perfWriteCQMod   = 1
	perfSendCQMod    = 100
	perfRxDepth      = 512
	perfPollBatch    = 16
	perfWriteMsgSize = 64 << 10
	perfSendMsgSize  = 64
)

// BenchmarkWrite64K streams 64 KiB RDMA Writes as ib_write_bw does.
func BenchmarkWrite64K(b *testing.B) { write64K(b, false) }

// BenchmarkWrite64KLocked is BenchmarkWrite64K with the goroutine locked
// to its thread.
func BenchmarkWrite64KLocked(b *testing.B) { write64K(b, true) }

func write64K(b *testing.B, locked bool) {
	const size, depth, every = perfWriteMsgSize, perfTxDepth, perfWriteCQMod
	sa, sb := pair(b, verbstest.PairAttr{BufSize: size, Caps: verbs.QPCaps{MaxSendWR: depth}, CQDepth: 2 * depth})
	wr := []verbs.SendWR{{Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, size)},
		RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}}
	wcs := make([]verbs.WC, perfPollBatch)
	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	posted, retired := 0, 0
	// The longest wait between two polls that found completions: a
	// retransmission timeout shows as one of its length.
	last, longest := time.Now(), time.Duration(0)
	reap := func() {
		k := sb.CQ.Poll(wcs)
		if k == 0 {
			return
		}
		now := time.Now()
		longest = max(longest, now.Sub(last))
		last = now
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				b.Fatalf("write %+v", wc)
			}
			retired = int(wc.ID) + 1
		}
	}
	for posted < b.N {
		for posted-retired >= depth {
			reap()
		}
		wr[0].ID = uint64(posted)
		wr[0].Flags = 0
		if posted%every == every-1 || posted == b.N-1 {
			wr[0].Flags = verbs.SendSignaled
		}
		if _, err := sb.QP.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		posted++
	}
	for retired < b.N {
		reap()
	}
	b.ReportMetric(float64(longest)/float64(time.Millisecond), "max-gap-ms")
	b.ReportMetric(float64(yields(sb.CQ)), "yields")
}

// spareP makes sure a P stays idle beside n goroutines that spin on the
// device, and returns what undoes it. Go's sysmon takes the P of a
// goroutine that has been inside a C call for more than one of its ticks
// (20 us or more) when no P is idle, and hands it to a thread it wakes
// for nothing; rxe runs its whole send path inside ibv_post_send, so
// with as many Ps as spinning goroutines (two, on the lab VM's two vCPUs)
// nearly every post paid for a thread wake-up and kept sysmon polling
// the clock every 20 us. An idle P makes sysmon leave the C call alone.
// A GOMAXPROCS set in the environment is left as it is, so that the
// choice can be measured.
func spareP(n int) func() {
	old := runtime.GOMAXPROCS(0)
	if old > n || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	runtime.GOMAXPROCS(n + 1)
	return func() { runtime.GOMAXPROCS(old) }
}

// BenchmarkSendRate64 streams 64-byte Sends as ib_send_bw does: the
// receiving end runs on a goroutine of its own, polling its CQ and
// reposting what completed, while this one posts and polls the sends.
// Both spin, as ib_send_bw's two processes do, with a P to spare
// (spareP).
func BenchmarkSendRate64(b *testing.B) { sendRate(b, false, goLoops) }

// BenchmarkSendRate64Event is BenchmarkSendRate64 with both ends asleep
// on the completion channel (CQ.Wait) whenever their CQ is empty, as
// ib_send_bw --events does.
func BenchmarkSendRate64Event(b *testing.B) { sendRate(b, true, goLoops) }

// BenchmarkSendRate64C is BenchmarkSendRate64 with both loops in C
// (internal/cloop), on the same QPs, CQs and buffers: the provider's Go
// half is out of the stream once it is set up.
func BenchmarkSendRate64C(b *testing.B) { sendRate(b, false, cLoops) }

// BenchmarkSendRate64CSend has the sender in C and the receiver in Go,
// BenchmarkSendRate64CRecv the reverse.
func BenchmarkSendRate64CSend(b *testing.B) { sendRate(b, false, cSender) }
func BenchmarkSendRate64CRecv(b *testing.B) { sendRate(b, false, cReceiver) }

// BenchmarkSendRate64Raw has both loops in Go, each step (a post, a
// poll) one cgo call into internal/cloop as the provider's would be,
// but none of the provider's Go code around it.
func BenchmarkSendRate64Raw(b *testing.B) { sendRate(b, false, rawLoops) }

// BenchmarkSendRate64Locked is BenchmarkSendRate64 with each loop's
// goroutine locked to its thread, as the C loops' are.
func BenchmarkSendRate64Locked(b *testing.B) { sendRate(b, false, lockedLoops) }

// loops says which ends of sendRate run in C.
type loops int

const (
	goLoops loops = iota
	cLoops
	cSender
	cReceiver
	rawLoops
	lockedLoops
)

func (l loops) cSend() bool { return l == cLoops || l == cSender }
func (l loops) cRecv() bool { return l == cLoops || l == cReceiver }

func sendRate(b *testing.B, event bool, mode loops) {
	if !event {
		defer spareP(2)()
	}
	const size, depth, every, rdepth = perfSendMsgSize, perfTxDepth, perfSendCQMod, perfRxDepth
	sa, sb := pair(b, verbstest.PairAttr{Caps: verbs.QPCaps{MaxSendWR: depth, MaxRecvWR: rdepth}, CQDepth: 2 * rdepth, BufSize: rdepth * size})
	send := []verbs.SendWR{{Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, size)}}}
	recvs := make([]verbs.RecvWR, rdepth)
	sgls := make([]verbs.SGE, rdepth)
	for i := range recvs {
		sgls[i] = sa.Buf.SGE(i*size, size)
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: sgls[i : i+1]}
	}
	if _, err := sa.QP.PostRecv(recvs); err != nil {
		b.Fatal(err)
	}
	// The receiver's progress: in C memory when either end runs there.
	received := new(atomic.Int64)
	var run *cloop.Run
	if mode != goLoops {
		run = cloop.New(cloop.Attr{
			SendQP: rawQP(sb.QP), SendCQ: rawCQ(sb.CQ), SendAddr: send[0].SGL[0].Addr, SendLKey: send[0].SGL[0].LKey,
			RecvQP: rawQP(sa.QP), RecvCQ: rawCQ(sa.CQ), RecvAddr: sgls[0].Addr, RecvLKey: sgls[0].LKey,
			Size: size, N: b.N, Depth: depth, Every: every, RecvDepth: rdepth, Gap: perfPollBatch,
		})
		defer run.Free()
		received = run.Received()
	}
	var failed atomic.Pointer[error]
	// Crossings into C, counted where they happen: every Poll here asks
	// for perfPollBatch completions with the CQ's ring empty, one
	// gd_poll_cq call, and every post is one call.
	var rxPolls, rxEmpty, rxPosts, rxWaits, txPolls, txFull, txWaits int
	// fail keeps the first error and stops a loop in C; err is moved to
	// the heap only here.
	fail := func(err error) {
		failed.CompareAndSwap(nil, &err)
		if run != nil {
			run.Stop()
		}
	}
	// await sleeps on cq's completion channel in the event variant.
	ctx := context.Background()
	await := func(cq verbs.CQ, waits *int) {
		if !event {
			return
		}
		*waits++
		if err := cq.Wait(ctx, false); err != nil {
			fail(err)
		}
	}
	done := make(chan struct{})
	progress := make(chan struct{}, 1) // the receiver reposted (event variant)
	acct := startAcct()
	b.ReportAllocs()
	b.ResetTimer()
	switch {
	case mode.cRecv():
		go func() {
			defer close(done)
			run.Recv()
			if err := run.Err(); err != nil {
				fail(err)
			}
		}()
	case mode == rawLoops:
		go func() {
			defer close(done)
			for n := 0; n < b.N && failed.Load() == nil; {
				k := run.RecvOne()
				if k < 0 {
					fail(run.Err())
					return
				}
				n += k
				received.Store(int64(n))
			}
		}()
	default:
		go func() {
			defer close(done)
			if mode == lockedLoops {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			repost := make([]verbs.RecvWR, 0, perfPollBatch)
			wcs := make([]verbs.WC, perfPollBatch)
			for n := 0; n < b.N && failed.Load() == nil; {
				k := sa.CQ.Poll(wcs)
				rxPolls++
				if k == 0 {
					rxEmpty++
					await(sa.CQ, &rxWaits)
					continue
				}
				repost = repost[:0]
				for i := range k {
					if wcs[i].Status != verbs.WCSuccess {
						fail(fmt.Errorf("receive %+v", wcs[i]))
						return
					}
					repost = append(repost, recvs[wcs[i].ID])
				}
				rxPosts++
				if _, err := sa.QP.PostRecv(repost); err != nil {
					fail(err)
					return
				}
				n += k
				received.Store(int64(n))
				if event {
					select {
					case progress <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	wcs := make([]verbs.WC, perfPollBatch)
	posted, retired := 0, 0
	reap := func() {
		txPolls++
		if mode == rawLoops {
			if r := run.ReapOne(retired); r >= 0 {
				retired = r
			} else {
				fail(run.Err())
			}
			return
		}
		k := sb.CQ.Poll(wcs)
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess {
				fail(fmt.Errorf("send %+v", wc))
				return
			}
			retired = int(wc.ID) + 1
		}
		if k == 0 {
			await(sb.CQ, &txWaits)
		}
	}
	if mode == lockedLoops {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	if mode.cSend() {
		run.Send()
		if err := run.Err(); err != nil {
			fail(err)
		}
		posted = b.N
	}
	for posted < b.N && failed.Load() == nil {
		// A Send that finds no receive is refused and retried after
		// the RNR timer: the receiver's reposting keeps up in
		// perftest, and the gate keeps it so here.
		for stopped := false; failed.Load() == nil; stopped = true {
			full := posted-retired >= depth
			if !full && posted-int(received.Load()) < rdepth-perfPollBatch {
				break
			}
			if !stopped {
				txFull++
			}
			if event && !full {
				// Only the receiver's progress lifts this stop: no
				// signalled Send may be outstanding to wake the send
				// CQ.
				select {
				case <-progress:
				case <-done:
				}
				continue
			}
			reap()
		}
		send[0].ID = uint64(posted)
		send[0].Flags = 0
		if posted%every == every-1 || posted == b.N-1 {
			send[0].Flags = verbs.SendSignaled
		}
		if mode == rawLoops {
			if err := run.PostOne(send[0].ID, send[0].Flags != 0); err != nil {
				fail(err)
				break
			}
		} else if _, err := sb.QP.PostSend(send); err != nil {
			fail(err)
			break
		}
		posted++
	}
	for !mode.cSend() && retired < posted && failed.Load() == nil {
		reap()
	}
	<-done
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	if run != nil {
		c := run.Counts()
		if mode.cSend() {
			txPolls = c.TxPolls
		}
		if mode.cRecv() || mode == rawLoops {
			rxPolls, rxEmpty, rxPosts = c.RxPolls, c.RxEmpty, c.RxPosts
		}
	}
	per := func(n int) float64 { return float64(n) / float64(b.N) }
	b.ReportMetric(per(posted+txPolls), "tx-cgo/op")
	b.ReportMetric(per(txPolls), "tx-polls/op")
	// How the sender posts and polls: the runs of posts between two
	// stops for room, and the polls per stop (counted in Go only).
	if !mode.cSend() {
		b.ReportMetric(float64(posted)/float64(max(txFull, 1)), "tx-posts/stop")
		b.ReportMetric(float64(txPolls)/float64(max(txFull, 1)), "tx-polls/stop")
	}
	b.ReportMetric(per(rxPolls+rxPosts), "rx-cgo/op")
	b.ReportMetric(per(rxEmpty), "rx-empty/op")
	b.ReportMetric(float64(b.N)/float64(max(rxPosts, 1)), "rx-wc/poll")
	if event {
		b.ReportMetric(per(txWaits+rxWaits), "waits/op")
	}
	b.ReportMetric(float64(yields(sb.CQ)), "tx-yields")
	b.ReportMetric(float64(yields(sa.CQ)), "rx-yields")
	acct.report(b)
}

// yields is how many times the pollers of c yielded (yield.go).
func yields(c verbs.CQ) int {
	q := c.(*cq)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.spin.count
}

// rawQP and rawCQ are the libibverbs objects behind the provider's QP
// and CQ, for the loops of internal/cloop.
func rawQP(q verbs.QP) unsafe.Pointer { return unsafe.Pointer(q.(*qp).q) }
func rawCQ(c verbs.CQ) unsafe.Pointer { return unsafe.Pointer(c.(*cq).c) }
