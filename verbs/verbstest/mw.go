package verbstest

import (
	"errors"
	"testing"

	"github.com/godapl/godapl/verbs"
)

var mwTests = []testCase{
	{"BindRead", testMWBindRead},
	{"ReadOutsideWindow", testMWReadOutside},
	{"WriteNotGranted", testMWWriteNotGranted},
	{"Rebind", testMWRebind},
	{"LocalInvalidate", testMWLocalInvalidate},
	{"SendWithInvalidate", testMWSendWithInvalidate},
	{"BindBeyondMRRights", testMWBindBeyondMRRights},
}

// Windows in these tests cover mwLen bytes at mwOff of an MR of mwMRLen.
const (
	mwMRLen = 16 << 10
	mwOff   = 4096
	mwLen   = 4096
)

// mwScene is a connected pair whose first side has an MR that allows
// window binds and an unbound window in the same PD.
type mwScene struct {
	sa, sb *Side
	mr     *Buf
	mw     verbs.MW
}

func newMWScene(t *testing.T, e *env) *mwScene {
	t.Helper()
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	mw, err := sa.PD.AllocMW()
	if errors.Is(err, verbs.ErrNotSupported) && e.a.Query().MaxMW == 0 {
		t.Skip("the device has no memory windows (MaxMW 0)")
	}
	expectNoErr(t, "AllocMW", err)
	if mw.RKey() != 0 {
		t.Fatalf("unbound window has rkey %#x, want 0", mw.RKey())
	}
	if mw.PD() != sa.PD {
		t.Error("MW.PD() is not the PD that allocated it")
	}
	s := &mwScene{sa: sa, sb: sb, mw: mw,
		mr: NewBuf(t, sa.PD, mwMRLen, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite|verbs.AccessMWBind)}
	Fill(s.mr.B, 60)
	return s
}

// bind binds the window to [mwOff, mwOff+mwLen) with access and returns
// the new rkey.
func (s *mwScene) bind(t *testing.T, e *env, id uint64, access verbs.Access) uint32 {
	t.Helper()
	old := s.mw.RKey()
	MustPostSend(t, s.sa.QP, verbs.SendWR{ID: id, Opcode: verbs.OpBindMW, Flags: verbs.SendSignaled,
		Bind: verbs.MWBind{MW: s.mw, MR: s.mr.MR, Addr: s.mr.Addr(mwOff), Length: mwLen, Access: access}})
	ExpectWC(t, PollOne(t, s.sa.CQ, e.timeout), id, verbs.WCSuccess, verbs.WCBindMW)
	k := s.mw.RKey()
	if k == 0 || k == old || k == s.mr.RKey() {
		t.Fatalf("rkey after bind %#x (before %#x, MR's %#x): want a fresh key", k, old, s.mr.RKey())
	}
	return k
}

// read has the peer read n bytes at offset off of the MR through rkey and
// checks the data.
func (s *mwScene) read(t *testing.T, e *env, id uint64, rkey uint32, off, n int) {
	t.Helper()
	clear(s.sb.Buf.B[:n])
	MustPostSend(t, s.sb.QP, verbs.SendWR{ID: id, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{s.sb.Buf.SGE(0, n)}, RemoteAddr: s.mr.Addr(off), RKey: rkey})
	ExpectWC(t, PollOne(t, s.sb.CQ, e.timeout), id, verbs.WCSuccess, verbs.WCRDMARead)
	expectBytes(t, "data read through the window", s.sb.Buf.B[:n], s.mr.B[off:off+n])
}

func testMWBindRead(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k := s.bind(t, e, 1, verbs.AccessRemoteRead)
	s.read(t, e, 2, k, mwOff, mwLen)
	s.read(t, e, 3, k, mwOff+100, 1000)
	expectErr(t, "Dereg of an MR with a bound window", s.mr.MR.Dereg(), verbs.ErrInUse)
	expectErr(t, "PD.Dealloc with a window", s.sa.PD.Dealloc(), verbs.ErrInUse)
	expectNoErr(t, "MW.Dealloc", s.mw.Dealloc())
	expectErr(t, "second MW.Dealloc", s.mw.Dealloc(), verbs.ErrClosed)
	expectNoErr(t, "Dereg once the window is gone", s.mr.MR.Dereg())
}

func testMWReadOutside(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k := s.bind(t, e, 1, verbs.AccessRemoteRead)
	// Inside the MR, partly outside the window: the window's bounds rule.
	readFault(s.sb, s.sa, s.mr.Addr(mwOff+mwLen-100), k, 200, rdmapBaseBounds).run(t, e)
}

func testMWWriteNotGranted(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k := s.bind(t, e, 1, verbs.AccessRemoteRead)
	writeFault(s.sb, s.sa, s.mr.Addr(mwOff), k, 64, ddpInvalidSTag).run(t, e)
}

func testMWRebind(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k1 := s.bind(t, e, 1, verbs.AccessRemoteRead)
	s.read(t, e, 2, k1, mwOff, 64)
	k2 := s.bind(t, e, 3, verbs.AccessRemoteRead)
	s.read(t, e, 4, k2, mwOff, 64)
	readFault(s.sb, s.sa, s.mr.Addr(mwOff), k1, 64, rdmapInvalidSTag).run(t, e)
}

func testMWLocalInvalidate(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k := s.bind(t, e, 1, verbs.AccessRemoteRead)
	MustPostSend(t, s.sa.QP, verbs.SendWR{ID: 2, Opcode: verbs.OpLocalInv, Flags: verbs.SendSignaled, InvalidateRKey: k})
	ExpectWC(t, PollOne(t, s.sa.CQ, e.timeout), 2, verbs.WCSuccess, verbs.WCLocalInv)
	readFault(s.sb, s.sa, s.mr.Addr(mwOff), k, 64, rdmapInvalidSTag).run(t, e)
}

func testMWSendWithInvalidate(t *testing.T, e *env) {
	s := newMWScene(t, e)
	k := s.bind(t, e, 1, verbs.AccessRemoteRead)
	MustPostRecv(t, s.sa.QP, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{s.sa.Buf.SGE(0, 64)}})
	MustPostSend(t, s.sb.QP, verbs.SendWR{ID: 3, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled, SGL: []verbs.SGE{s.sb.Buf.SGE(0, 8)}, InvalidateRKey: k})
	ExpectWC(t, PollOne(t, s.sb.CQ, e.timeout), 3, verbs.WCSuccess, verbs.WCSend)
	wc := PollOne(t, s.sa.CQ, e.timeout)
	ExpectWC(t, wc, 2, verbs.WCSuccess, verbs.WCRecv)
	if wc.Flags&verbs.WCWithInv == 0 || wc.InvalidatedRKey != k {
		t.Fatalf("receive of a Send invalidating a window: %+v, want WCWithInv and key %#x", wc, k)
	}
	readFault(s.sb, s.sa, s.mr.Addr(mwOff), k, 64, rdmapInvalidSTag).run(t, e)
}

func testMWBindBeyondMRRights(t *testing.T, e *env) {
	s := newMWScene(t, e)
	ro := NewBuf(t, s.sa.PD, 8192, verbs.AccessRemoteRead|verbs.AccessMWBind)
	noBind := NewBuf(t, s.sa.PD, 8192, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	for _, c := range []struct {
		what   string
		mr     *Buf
		access verbs.Access
	}{
		{"remote write through a window on a read-only MR", ro, verbs.AccessRemoteWrite | verbs.AccessLocalWrite},
		{"a window on an MR without MW_BIND", noBind, verbs.AccessRemoteRead},
	} {
		n, err := s.sa.QP.PostSend([]verbs.SendWR{{ID: 9, Opcode: verbs.OpBindMW, Flags: verbs.SendSignaled,
			Bind: verbs.MWBind{MW: s.mw, MR: c.mr.MR, Addr: c.mr.Addr(0), Length: 4096, Access: c.access}}})
		if err != nil {
			if n != 0 || !errIsAny(err, verbs.ErrProtection, verbs.ErrInvalidArgument) {
				t.Fatalf("bind of %s = %d, %v; want ErrProtection", c.what, n, err)
			}
			continue
		}
		wc := PollOne(t, s.sa.CQ, e.timeout)
		if wc.ID != 9 || wc.Status == verbs.WCSuccess {
			t.Fatalf("bind of %s completed %+v, want an error", c.what, wc)
		}
		if s.mw.RKey() != 0 {
			t.Fatalf("failed bind left rkey %#x", s.mw.RKey())
		}
		return // an error completion ends the QP; the first case suffices
	}
}
