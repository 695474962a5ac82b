package verbstest

import (
	"os"
	"testing"

	"github.com/godapl/godapl/verbs"
)

var pdTests = []testCase{
	{"DeallocInUse", testPDDeallocInUse},
}

var mrTests = []testCase{
	{"RegSlice", testMRRegSlice},
	{"RegAllocMem", testMRRegAllocMem},
	{"InvalidAccess", testMRInvalidAccess},
	{"KeysDistinct", testMRKeys},
	{"DeregThenPost", testMRDeregThenPost},
	{"InvalidateThenPost", testMRInvalidateThenPost},
	{"RegAt", testMRRegAt},
}

// smallCaps are queue sizes for QPs that only need to exist.
var smallCaps = verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}

func testPDDeallocInUse(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	mr, err := pd.RegMR(make([]byte, 4096), verbs.AccessLocalWrite)
	expectNoErr(t, "RegMR", err)
	expectErr(t, "Dealloc with a live MR", pd.Dealloc(), verbs.ErrInUse)
	expectNoErr(t, "Dereg", mr.Dereg())

	cq, err := e.a.CreateCQ(verbs.CQAttr{Depth: 8})
	expectNoErr(t, "CreateCQ", err)
	qp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Caps: smallCaps})
	expectNoErr(t, "CreateQP", err)
	expectErr(t, "Dealloc with a live QP", pd.Dealloc(), verbs.ErrInUse)
	expectNoErr(t, "QP.Destroy", qp.Destroy())

	srq, err := pd.CreateSRQ(verbs.SRQAttr{MaxWR: 4, MaxSGE: 1})
	expectNoErr(t, "CreateSRQ", err)
	expectErr(t, "Dealloc with a live SRQ", pd.Dealloc(), verbs.ErrInUse)
	expectNoErr(t, "SRQ.Destroy", srq.Destroy())

	if mw, err := pd.AllocMW(); err == nil {
		expectErr(t, "Dealloc with a live MW", pd.Dealloc(), verbs.ErrInUse)
		expectNoErr(t, "MW.Dealloc", mw.Dealloc())
	} else if e.a.Query().MaxMW > 0 {
		t.Fatalf("AllocMW: %v, but the device reports MaxMW = %d", err, e.a.Query().MaxMW)
	}

	expectNoErr(t, "Dealloc after freeing everything", pd.Dealloc())
	expectNoErr(t, "CQ.Destroy", cq.Destroy())
}

func testMRRegSlice(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	buf := make([]byte, 10000)
	for _, access := range []verbs.Access{
		0,
		verbs.AccessLocalWrite,
		verbs.AccessRemoteRead,
		verbs.AccessLocalWrite | verbs.AccessRemoteWrite,
		DefaultAccess,
	} {
		for _, b := range [][]byte{buf, buf[100:200], buf[9999:]} {
			mr, err := pd.RegMR(b, access)
			expectNoErr(t, "RegMR("+access.String()+")", err)
			if mr.LKey() == 0 || mr.RKey() == 0 {
				t.Errorf("RegMR(%v): lkey %#x rkey %#x, want non-zero", access, mr.LKey(), mr.RKey())
			}
			if mr.Addr() != verbs.AddrOf(b) {
				t.Errorf("Addr() = %#x, want AddrOf(buf) = %#x", mr.Addr(), verbs.AddrOf(b))
			}
			if got := mr.Bytes(); len(got) != len(b) || &got[0] != &b[0] {
				t.Errorf("Bytes() is not the registered memory")
			}
			if mr.Access() != access {
				t.Errorf("Access() = %v, want %v", mr.Access(), access)
			}
			if mr.PD() != pd {
				t.Error("PD() is not the PD that registered the MR")
			}
			expectNoErr(t, "Dereg", mr.Dereg())
			expectErr(t, "second Dereg", mr.Dereg(), verbs.ErrClosed)
		}
	}
	expectNoErr(t, "Dealloc", pd.Dealloc())
}

func testMRRegAllocMem(t *testing.T, e *env) {
	page := os.Getpagesize()
	size := 3*page + 5
	mem, err := verbs.AllocMem(size)
	expectNoErr(t, "AllocMem", err)
	defer mem.Free()
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	mr, err := sa.PD.RegMR(mem.Bytes(), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	expectNoErr(t, "RegMR(AllocMem)", err)
	if mr.Addr() != verbs.AddrOf(mem.Bytes()) || mr.Addr()%uint64(page) != 0 {
		t.Fatalf("Addr() = %#x, want the page-aligned %#x", mr.Addr(), verbs.AddrOf(mem.Bytes()))
	}
	// Receive into the mmap'd memory, then RDMA Write into it.
	want := Pattern(size, 3)
	copy(sb.Buf.B, want)
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{verbs.SGEOf(mr, 0, size)}})
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, size)}})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 2, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRecv)
	expectBytes(t, "message received into AllocMem memory", mem.Bytes(), want)

	Fill(sb.Buf.B[:page], 4)
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 5, SGL: []verbs.SGE{sa.Buf.SGE(0, 1)}})
	MustPostSend(t, sb.QP,
		verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, page)}, RemoteAddr: mr.Addr() + uint64(page), RKey: mr.RKey()},
		verbs.SendWR{ID: 4, Opcode: verbs.OpSend, Flags: verbs.SendSignaled})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 4, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 5, verbs.WCSuccess, verbs.WCRecv)
	copy(want[page:], sb.Buf.B[:page])
	expectBytes(t, "AllocMem memory after an RDMA Write", mem.Bytes(), want)
	expectNoErr(t, "Dereg", mr.Dereg())
}

func testMRInvalidAccess(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	buf := make([]byte, 4096)
	for _, access := range []verbs.Access{
		verbs.AccessRemoteWrite,
		verbs.AccessRemoteWrite | verbs.AccessRemoteRead,
		verbs.AccessRemoteWrite | verbs.AccessMWBind,
		1 << 7,
	} {
		mr, err := pd.RegMR(buf, access)
		if err == nil {
			mr.Dereg()
		}
		expectErr(t, "RegMR("+access.String()+")", err, verbs.ErrInvalidArgument)
	}
	expectNoErr(t, "Dealloc (no MR may be left behind by a refused RegMR)", pd.Dealloc())
}

func testMRKeys(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	buf := make([]byte, 1<<16)
	const n = 64
	lkeys := make(map[uint32]bool)
	rkeys := make(map[uint32]bool)
	lowBytes := make(map[uint8]bool)
	for i := range n {
		mr, err := pd.RegMR(buf[i*1024:(i+1)*1024], DefaultAccess)
		expectNoErr(t, "RegMR", err)
		if lkeys[mr.LKey()] || rkeys[mr.RKey()] {
			t.Fatalf("registration %d reuses a live key: lkey %#x rkey %#x", i, mr.LKey(), mr.RKey())
		}
		lkeys[mr.LKey()] = true
		rkeys[mr.RKey()] = true
		lowBytes[uint8(mr.RKey())] = true
	}
	// With a random 8-bit key, 64 registrations sharing one key byte has
	// probability 256^-63: a provider handing out sequential or constant
	// keys fails here.
	if len(lowBytes) < 2 {
		t.Errorf("all %d rkeys have the same low 8 bits %#02x: keys are guessable", n, func() uint8 {
			for b := range lowBytes {
				return b
			}
			return 0
		}())
	}
}

// testMRDeregThenPost sends from memory whose MR was deregistered.
func testMRDeregThenPost(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	stale := NewBuf(t, sb.PD, 4096, verbs.AccessLocalWrite)
	expectNoErr(t, "Dereg", stale.MR.Dereg())
	expectLocalFault(t, e, sb, sa, verbs.SendWR{ID: 9, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{stale.SGE(0, 100)}})
}

// testMRInvalidateThenPost sends from memory whose MR was invalidated.
func testMRInvalidateThenPost(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	inv := NewBuf(t, sb.PD, 4096, verbs.AccessLocalWrite)
	expectNoErr(t, "Invalidate", inv.MR.Invalidate())
	expectLocalFault(t, e, sb, sa, verbs.SendWR{ID: 9, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{inv.SGE(0, 100)}})
	expectNoErr(t, "Dereg of an invalidated MR", inv.MR.Dereg())
}
