//go:build rdmacore

package rdmacore

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// pair connects two contexts of the test device for the hot-path tests.
func pair(tb testing.TB, attr verbstest.PairAttr) (sa, sb *verbstest.Side) {
	tb.Helper()
	name, addr := testDevice(tb)
	a, b := openPair(tb, name)
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

// BenchmarkWrite64K streams 64 KiB RDMA Writes as ib_write_bw does by
// default: 128 in flight, one in 16 signalled, the CQ polled without
// sleeping.
func BenchmarkWrite64K(b *testing.B) {
	const size, depth, every = 64 << 10, 128, 16
	sa, sb := pair(b, verbstest.PairAttr{BufSize: size, Caps: verbs.QPCaps{MaxSendWR: depth}})
	wr := []verbs.SendWR{{Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, size)},
		RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}}
	wcs := make([]verbs.WC, 16)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	posted, retired := 0, 0
	reap := func() {
		for _, wc := range wcs[:sb.CQ.Poll(wcs)] {
			if wc.Status != verbs.WCSuccess {
				b.Fatalf("write %+v", wc)
			}
			retired = int(wc.ID) + 1
		}
	}
	for posted < b.N {
		for posted-retired >= depth-every {
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
}

// BenchmarkSendRate64 streams 64-byte Sends, 128 in flight with one in
// 16 signalled, against receives reposted in batches as they complete:
// the message rate ib_send_bw measures with its default depths and
// completion moderation, polling without sleeping as it does.
func BenchmarkSendRate64(b *testing.B) {
	const size, depth, every, rdepth = 64, 128, 16, 512
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
	repost := make([]verbs.RecvWR, 0, rdepth)
	wcs := make([]verbs.WC, 64)
	b.ReportAllocs()
	b.ResetTimer()
	posted, retired, received := 0, 0, 0
	reap := func() {
		n := sa.CQ.Poll(wcs)
		repost = repost[:0]
		for i := range n {
			if wcs[i].Status != verbs.WCSuccess {
				b.Fatalf("receive %+v", wcs[i])
			}
			repost = append(repost, recvs[wcs[i].ID])
		}
		if n > 0 {
			if _, err := sa.QP.PostRecv(repost); err != nil {
				b.Fatal(err)
			}
			received += n
		}
		m := sb.CQ.Poll(wcs)
		for i := range m {
			if wcs[i].Status != verbs.WCSuccess {
				b.Fatalf("send %+v", wcs[i])
			}
			retired = int(wcs[i].ID) + 1
		}
	}
	for posted < b.N {
		// Keep the receiver a queue ahead, so that no Send finds it
		// without a buffer.
		for posted-retired >= depth-every || posted-received >= rdepth-every {
			reap()
		}
		send[0].ID = uint64(posted)
		send[0].Flags = 0
		if posted%every == every-1 || posted == b.N-1 {
			send[0].Flags = verbs.SendSignaled
		}
		if _, err := sb.QP.PostSend(send); err != nil {
			b.Fatal(err)
		}
		posted++
	}
	for received < b.N || retired < b.N {
		reap()
	}
}
