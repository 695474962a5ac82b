package verbstest

import (
	"math"
	"os"
	"testing"

	"github.com/godapl/godapl/verbs"
)

// MRs registered at an address of the caller's choosing (PD.RegMRAt):
// the MR's address space, not the memory's, names its bytes, locally
// and for the peer, and only the registered range is reachable.

func testMRRegAt(t *testing.T, e *env) {
	pd, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	page := uint64(os.Getpagesize())
	buf := make([]byte, 10000)
	for _, b := range [][]byte{buf, buf[100:200], buf[9999:]} {
		zb := verbs.ZeroBased(b)
		if zb >= page || zb != verbs.AddrOf(b)%page {
			t.Fatalf("ZeroBased = %#x for memory at %#x", zb, verbs.AddrOf(b))
		}
		for _, iova := range []uint64{zb, zb + 5*page} {
			mr, err := pd.RegMRAt(b, iova, DefaultAccess)
			expectNoErr(t, "RegMRAt", err)
			if mr.Addr() != iova {
				t.Errorf("RegMRAt(%#x): Addr() = %#x", iova, mr.Addr())
			}
			if got := mr.Bytes(); len(got) != len(b) || &got[0] != &b[0] {
				t.Errorf("Bytes() is not the registered memory")
			}
			if mr.LKey() == 0 || mr.RKey() == 0 || mr.Access() != DefaultAccess {
				t.Errorf("RegMRAt: lkey %#x rkey %#x access %v", mr.LKey(), mr.RKey(), mr.Access())
			}
			expectNoErr(t, "Dereg", mr.Dereg())
		}
		_, err = pd.RegMRAt(b, zb+1, DefaultAccess)
		expectErr(t, "RegMRAt at another page offset", err, verbs.ErrInvalidArgument)
	}
	_, err = pd.RegMRAt(buf, math.MaxUint64&^(page-1)+verbs.ZeroBased(buf), DefaultAccess)
	expectErr(t, "RegMRAt of a range that wraps", err, verbs.ErrInvalidArgument)
	if verbs.IOVAValid(buf, verbs.ZeroBased(buf)+page/2) {
		t.Error("IOVAValid accepts an iova at another page offset")
	}
	expectNoErr(t, "Dealloc", pd.Dealloc())
	_, err = pd.RegMRAt(buf, verbs.ZeroBased(buf), DefaultAccess)
	expectErr(t, "RegMRAt on a deallocated PD", err, verbs.ErrClosed, verbs.ErrInvalidArgument)
}

// zeroBasedBuf registers size bytes in s's PD zero-based at the start of
// their first page, starting at an odd place inside that page.
func zeroBasedBuf(t *testing.T, s *Side, size int) *Buf {
	t.Helper()
	b := make([]byte, size+4096)[1234 : 1234+size]
	mr, err := s.PD.RegMRAt(b, verbs.ZeroBased(b), DefaultAccess)
	if err != nil {
		t.Fatalf("RegMRAt(%d bytes, %#x): %v", size, verbs.ZeroBased(b), err)
	}
	t.Cleanup(func() { mr.Dereg() })
	return &Buf{B: b, MR: mr}
}

func testRDMAZeroBased(t *testing.T, e *env) {
	const n, off = 5000, remoteOff
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: 1 << 16})
	zb := zeroBasedBuf(t, sa, 1<<14)
	if zb.Addr(0) >= uint64(os.Getpagesize()) {
		t.Fatalf("zero-based MR at %#x", zb.Addr(0))
	}

	// The peer writes and reads by the MR's addresses.
	Fill(zb.B, 1)
	want := append([]byte(nil), zb.B...)
	msg := Pattern(n, 2)
	copy(sb.Buf.B, msg)
	copy(want[off:], msg)
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, n)}, RemoteAddr: zb.Addr(off), RKey: zb.RKey()})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRDMAWrite)
	RoundTrip(t, sb, sa, 0, 3, e.timeout)
	expectBytes(t, "zero-based MR after an RDMA Write", zb.B, want)

	Fill(zb.B, 4)
	clear(sb.Buf.B)
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 5, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, n)}, RemoteAddr: zb.Addr(off), RKey: zb.RKey()})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 5, verbs.WCSuccess, verbs.WCRDMARead)
	expectBytes(t, "an RDMA Read from a zero-based MR", sb.Buf.B[:n], zb.B[off:off+n])

	// Its own side names it the same way: a Send gathered from it, a
	// receive scattered into it.
	Fill(zb.B, 6)
	MustPostRecv(t, sb.QP, verbs.RecvWR{ID: 7, SGL: []verbs.SGE{sb.Buf.SGE(0, n)}})
	MustPostSend(t, sa.QP, verbs.SendWR{ID: 7, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{zb.SGE(off, n)}})
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 7, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 7, verbs.WCSuccess, verbs.WCRecv)
	expectBytes(t, "a Send from a zero-based MR", sb.Buf.B[:n], zb.B[off:off+n])

	copy(sb.Buf.B, Pattern(n, 8))
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 9, SGL: []verbs.SGE{zb.SGE(off, n)}})
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 9, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, n)}})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 9, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 9, verbs.WCSuccess, verbs.WCRecv)
	expectBytes(t, "a receive into a zero-based MR", zb.B[off:off+n], sb.Buf.B[:n])
}

// The memory's own address is outside a zero-based MR.
func testFaultWriteZeroBasedAtVA(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	zb := zeroBasedBuf(t, sa, 4096)
	writeFault(sb, sa, verbs.AddrOf(zb.B), zb.RKey(), 64, ddpBaseBounds).run(t, e)
}
