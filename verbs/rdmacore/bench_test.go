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

// BenchmarkWrite64K streams 64 KiB RDMA Writes, 16 in flight, as
// ib_write_bw does with its default tx depth.
func BenchmarkWrite64K(b *testing.B) {
	const size, depth = 64 << 10, 16
	sa, sb := pair(b, verbstest.PairAttr{BufSize: size, Caps: verbs.QPCaps{MaxSendWR: depth}})
	wr := []verbs.SendWR{{Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, size)},
		RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}}
	wcs := make([]verbs.WC, depth)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	inflight := 0
	for i := range b.N {
		for inflight >= depth {
			n := sb.CQ.Poll(wcs)
			if n == 0 {
				if err := sb.CQ.Wait(context.Background(), false); err != nil {
					b.Fatal(err)
				}
			}
			inflight -= n
		}
		wr[0].ID = uint64(i)
		if _, err := sb.QP.PostSend(wr); err != nil {
			b.Fatal(err)
		}
		inflight++
	}
	for inflight > 0 {
		n := sb.CQ.Poll(wcs)
		if n == 0 {
			sb.CQ.Wait(context.Background(), false)
		}
		inflight -= n
	}
}

// BenchmarkSendRate64 streams 64-byte Sends, 16 in flight, against
// receives posted ahead: the message rate ib_send_bw measures.
func BenchmarkSendRate64(b *testing.B) {
	const size, depth = 64, 16
	sa, sb := pair(b, verbstest.PairAttr{Caps: verbs.QPCaps{MaxSendWR: depth, MaxRecvWR: 2 * depth}, CQDepth: 4 * depth})
	send := []verbs.SendWR{{Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, size)}}}
	recvs := make([]verbs.RecvWR, 2*depth)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(i*size, size)}}
	}
	if _, err := sa.QP.PostRecv(recvs); err != nil {
		b.Fatal(err)
	}
	wcs := make([]verbs.WC, 2*depth)
	b.ReportAllocs()
	b.ResetTimer()
	inflight, received := 0, 0
	reap := func() {
		// Receives are reposted as they complete, so the sender never
		// finds the peer without a buffer (RNR).
		if n := sa.CQ.Poll(wcs); n > 0 {
			for i := range n {
				recvs[0].ID = wcs[i].ID
				recvs[0].SGL[0] = sa.Buf.SGE(int(wcs[i].ID)*size, size)
				if _, err := sa.QP.PostRecv(recvs[:1]); err != nil {
					b.Fatal(err)
				}
			}
			received += n
		}
		inflight -= sb.CQ.Poll(wcs)
	}
	for i := range b.N {
		for inflight >= depth || i-received >= depth {
			reap()
			if inflight >= depth {
				sb.CQ.Wait(context.Background(), false)
			} else if i-received >= depth {
				sa.CQ.Wait(context.Background(), false)
			}
		}
		send[0].ID = uint64(i)
		if _, err := sb.QP.PostSend(send); err != nil {
			b.Fatal(err)
		}
		inflight++
	}
	for inflight > 0 || received < b.N {
		reap()
		if inflight > 0 {
			sb.CQ.Wait(context.Background(), false)
		} else if received < b.N {
			sa.CQ.Wait(context.Background(), false)
		}
	}
}
