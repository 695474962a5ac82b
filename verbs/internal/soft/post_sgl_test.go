package soft_test

import (
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestPostSGLFaults pins the error of each local SGE fault the engine
// finds at post time: the kinds of ErrProtection apart, ErrInvalidKey for
// a key that names no MR, nothing taken, no allocation on the way out.
// The layer above relies on them (fastpath.SGLChecker) instead of checking
// the same memory itself.
func TestPostSGLFaults(t *testing.T) {
	verbstest.CheckLeaks(t)
	prov := mem.New()
	a, err := prov.Open(mem.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := prov.Open(mem.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	sa, sb := verbstest.ConnectPair(t, a, b, "node-a:0", verbstest.PairAttr{BufSize: 4096, SignalAll: true,
		Connect: verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1}, Accept: verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1}})
	if c, ok := sb.QP.(fastpath.SGLChecker); !ok || !c.ChecksSGL() {
		t.Fatal("the soft QP does not say it checks SGLs")
	}
	ro := verbstest.NewBuf(t, sb.PD, 4096, verbs.AccessRemoteRead) // no local write
	otherPD, err := b.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	foreign := verbstest.NewBuf(t, otherPD, 4096, verbstest.DefaultAccess)
	good := sb.Buf.SGE(0, 64)
	wrap := good
	wrap.Addr, wrap.Length = ^uint64(0)-8, 64

	remote := func(op verbs.Opcode, sge verbs.SGE) verbs.SendWR {
		return verbs.SendWR{ID: 1, Opcode: op, SGL: []verbs.SGE{sge}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
	}
	sends := []struct {
		what string
		wr   verbs.SendWR
		want error
	}{
		{"unknown key", remote(verbs.OpSend, verbs.SGE{Addr: good.Addr, Length: 64, LKey: good.LKey + 1}), verbs.ErrInvalidKey},
		{"MR of another PD", remote(verbs.OpRDMAWrite, foreign.SGE(0, 64)), verbs.ErrWrongPD},
		{"read into a read-only MR", remote(verbs.OpRDMARead, ro.SGE(0, 64)), verbs.ErrAccess},
		{"past the end", remote(verbs.OpSend, sb.Buf.SGE(4090, 14)), verbs.ErrBounds},
		{"before the start", remote(verbs.OpRDMAWrite, verbs.SGE{Addr: good.Addr - 1, Length: 8, LKey: good.LKey}), verbs.ErrBounds},
		{"address wraps", remote(verbs.OpSend, wrap), verbs.ErrBounds},
		// The first faulty SGE decides.
		{"second of two", verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{good, foreign.SGE(0, 8)}}, verbs.ErrWrongPD},
	}
	for _, c := range sends {
		wrs := []verbs.SendWR{c.wr}
		n, err := sb.QP.PostSend(wrs)
		if n != 0 || err != c.want {
			t.Errorf("PostSend %s = %d, %v; want 0, %v", c.what, n, err, c.want)
		}
		if c.want != verbs.ErrInvalidKey && !errors.Is(err, verbs.ErrProtection) {
			t.Errorf("PostSend %s: %v does not match ErrProtection", c.what, err)
		}
		if allocs := testing.AllocsPerRun(20, func() { sb.QP.PostSend(wrs) }); allocs != 0 {
			t.Errorf("PostSend %s: %v allocations", c.what, allocs)
		}
	}
	recvs := []struct {
		what string
		sge  verbs.SGE
		want error
	}{
		{"unknown key", verbs.SGE{Addr: good.Addr, Length: 64, LKey: 0x7fffff00}, verbs.ErrInvalidKey},
		{"MR of another PD", foreign.SGE(0, 64), verbs.ErrWrongPD},
		{"read-only MR", ro.SGE(0, 64), verbs.ErrAccess},
		{"past the end", sb.Buf.SGE(4000, 97), verbs.ErrBounds},
	}
	for _, c := range recvs {
		wrs := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{c.sge}}}
		if n, err := sb.QP.PostRecv(wrs); n != 0 || err != c.want {
			t.Errorf("PostRecv %s = %d, %v; want 0, %v", c.what, n, err, c.want)
		}
	}
	// An SRQ's PostRecv makes the same checks.
	srq, err := sb.PD.CreateSRQ(verbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer srq.Destroy()
	if c, ok := srq.(fastpath.SGLChecker); !ok || !c.ChecksSGL() {
		t.Fatal("the soft SRQ does not say it checks SGLs")
	}
	for _, c := range recvs {
		wrs := []verbs.RecvWR{{ID: 3, SGL: []verbs.SGE{c.sge}}}
		if n, err := srq.PostRecv(wrs); n != 0 || err != c.want {
			t.Errorf("SRQ PostRecv %s = %d, %v; want 0, %v", c.what, n, err, c.want)
		}
	}
	if n := srq.Posted(); n != 0 {
		t.Errorf("the SRQ took %d refused receives", n)
	}
	// Nothing was taken: the queues still work, and nothing completed.
	verbstest.NoWC(t, sb.CQ)
	verbstest.RoundTrip(t, sb, sa, 64, 7, 10*time.Second)
}
