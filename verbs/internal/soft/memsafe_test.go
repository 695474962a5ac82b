package soft_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestDeregFreeDuringPlacement deregisters and unmaps a buffer while a
// peer's RDMA Write or Send is being placed into it, on both providers
// built on this engine. Dereg must wait for the copy under way, so the
// Free after it never pulls memory from under the provider: before the
// engine counted accesses, this test died with SIGSEGV. Each round uses
// fresh devices, because a placement that loses the race terminates the
// connection, and varies the moment of the Dereg so that some rounds hit
// the middle of the copy. siw runs with CRCs, which it computes in Go over
// the placed payload, so that a missing wait shows as a fault there too
// (without them the kernel's read into unmapped memory fails cleanly).
func TestDeregFreeDuringPlacement(t *testing.T) {
	providers := []struct {
		name   string
		open   func() verbs.Provider
		dev    string
		addr   string
		rounds int
	}{
		{"mem", func() verbs.Provider { return mem.New() }, mem.DeviceName, "node-a:0", 24},
		{"siw", func() verbs.Provider { return siw.New(siw.Options{CRC: true}) }, siw.DeviceName, "127.0.0.1:0", 40},
	}
	for _, p := range providers {
		for _, op := range []verbs.Opcode{verbs.OpRDMAWrite, verbs.OpSend} {
			t.Run(p.name+"/"+op.String(), func(t *testing.T) {
				verbstest.CheckLeaks(t)
				rounds := p.rounds
				if testing.Short() {
					rounds = max(rounds/4, 2)
				}
				for i := range rounds {
					deregFreeRound(t, p.open(), p.dev, p.addr, op, i)
				}
			})
		}
	}
}

// msgSize makes one copy long enough (several FPDUs on siw, a long
// memmove on mem) for a Dereg to land inside it.
const msgSize = 2 << 20

func deregFreeRound(t *testing.T, prov verbs.Provider, name, addr string, op verbs.Opcode, round int) {
	a, err := prov.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := prov.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, sb := verbstest.ConnectPair(t, a, b, addr, verbstest.PairAttr{BufSize: msgSize, SignalAll: true})
	m, err := verbs.AllocMem(msgSize)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := sa.PD.RegMR(m.Bytes(), verbstest.DefaultAccess)
	if err != nil {
		t.Fatal(err)
	}
	if op == verbs.OpSend {
		verbstest.MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{verbs.SGEOf(mr, 0, msgSize)}})
	}
	wr := verbs.SendWR{ID: 2, Opcode: op, SGL: []verbs.SGE{sb.Buf.SGE(0, msgSize)}, RemoteAddr: mr.Addr(), RKey: mr.RKey()}
	posted := make(chan error, 1)
	go func() { // on mem, the copy runs in the poster's goroutine
		_, err := sb.QP.PostSend([]verbs.SendWR{wr})
		posted <- err
	}()
	// Land the Dereg at a different moment of the transfer each round.
	deadline := time.Now().Add(time.Duration(round%6) * 300 * time.Microsecond)
	for time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if err := mr.Dereg(); err != nil {
		t.Fatalf("Dereg: %v", err)
	}
	if err := m.Free(); err != nil {
		t.Fatalf("Free: %v", err)
	}
	if err := <-posted; err != nil {
		t.Fatalf("PostSend: %v", err)
	}
	// The Write or Send either completed before the Dereg or failed the
	// connection; both are right. It must complete one way or the other.
	wc := verbstest.PollOne(t, sb.CQ, verbstest.DefaultTimeout)
	if wc.ID != 2 {
		t.Fatalf("completion %+v, want the request's", wc)
	}
}
