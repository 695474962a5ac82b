package siw_test

import (
	"context"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// Allocation guards: in steady state the whole data path — posting, the
// direct and goroutine transmit paths, FPDU framing and parsing, placement,
// completion and polling, on both sides — allocates nothing.

// waitWC blocks until cq yields one completion and fails t unless it is
// a success.
func waitWC(t testing.TB, cq verbs.CQ, wcs []verbs.WC) {
	for {
		if cq.Poll(wcs[:1]) == 1 {
			if wcs[0].Status != verbs.WCSuccess {
				t.Fatalf("completion %+v", wcs[0])
			}
			return
		}
		if err := cq.Wait(context.Background(), false); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllocsSendRecv(t *testing.T) {
	sa, sb := benchPairT(t)
	recv := []verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 256)}}}
	// A burst of Sends: the first goes out directly, the rest through the
	// tx goroutine.
	sends := make([]verbs.SendWR, 8)
	for i := range sends {
		sends[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(i*64, 64)}}
	}
	sends[len(sends)-1].Flags = verbs.SendSignaled
	wcs := make([]verbs.WC, 1)
	round := func() {
		for range sends {
			if _, err := sa.QP.PostRecv(recv); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := sb.QP.PostSend(sends); err != nil {
			t.Fatal(err)
		}
		waitWC(t, sb.CQ, wcs)
		for range sends {
			waitWC(t, sa.CQ, wcs)
		}
	}
	for range 10 {
		round()
	}
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("%v allocations per round of 8 Sends", n)
	}
}

func TestAllocsRDMA(t *testing.T) {
	sa, sb := benchPairT(t)
	const n = 48 << 10 // large enough to be written from registered memory
	wrs := []verbs.SendWR{
		{ID: 1, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, n)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()},
		{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(n, n)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()},
	}
	wcs := make([]verbs.WC, 1)
	round := func() {
		if _, err := sb.QP.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		waitWC(t, sb.CQ, wcs)
	}
	for range 10 {
		round()
	}
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("%v allocations per RDMA Write + Read", n)
	}
}

func benchPairT(t *testing.T) (sa, sb *verbstest.Side) {
	t.Helper()
	verbstest.CheckLeaks(t)
	da, db := openPair(t, testOptions())
	t.Cleanup(func() {
		da.Close()
		db.Close()
	})
	return verbstest.ConnectPair(t, da, db, "127.0.0.1:0", verbstest.PairAttr{BufSize: 128 << 10, Caps: verbs.QPCaps{MaxSendWR: 64, MaxRecvWR: 64}})
}
