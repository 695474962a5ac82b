package verbstest

import (
	"errors"
	"slices"
	"testing"

	"github.com/godapl/godapl/verbs"
)

// The fault tests hold providers to the error behaviour of the Linux siw
// driver (docs/WIRE.md, I4): a remote access or
// protocol error terminates the stream with one Terminate whose layer,
// type and code say what went wrong, raises an async event on the side
// that found it, moves both QPs to ERROR and flushes what was outstanding.
// Sends and RDMA Writes complete when they are handed to the stream, so
// the one that caused the fault may complete successfully, or be flushed
// when the Terminate overtakes its local completion (siw's transmit path
// and its flush on connection drop race the same way); a provider that
// learns the outcome directly may report it instead. RDMA Reads complete
// only when answered, so a refused Read completes with WCRemAccessErr.
var faultTests = []testCase{
	{"WriteBadRKey", testFaultWriteBadRKey},
	{"WriteOutOfBounds", testFaultWriteOutOfBounds},
	{"WriteBeforeStart", testFaultWriteBeforeStart},
	{"WriteNoRemoteWrite", testFaultWriteNoRemoteWrite},
	{"WriteOtherPD", testFaultWriteOtherPD},
	{"WriteInvalidatedMR", testFaultWriteInvalidatedMR},
	{"WriteAfterSendWithInv", testFaultWriteAfterSendWithInv},
	{"WriteDeregisteredMR", testFaultWriteDeregisteredMR},
	{"WriteZeroBasedAtVA", testFaultWriteZeroBasedAtVA},
	{"ReadBadRKey", testFaultReadBadRKey},
	{"ReadOutOfBounds", testFaultReadOutOfBounds},
	{"ReadNoRemoteRead", testFaultReadNoRemoteRead},
	{"ReadOtherPD", testFaultReadOtherPD},
	{"SendNoReceive", testFaultSendNoReceive},
	{"SendTooLong", testFaultSendTooLong},
	{"SendInvalidateBadSTag", testFaultSendInvalidateBadSTag},
	{"LocalBadLKey", testFaultLocalBadLKey},
	{"LocalOutsideMR", testFaultLocalOutsideMR},
	{"ReadSinkNoLocalWrite", testFaultReadSinkNoLocalWrite},
}

// Terminate codes (RFC 5040 section 7, RFC 5041 section 7) the cases use.
const (
	etypeTagged        = 1 // DDP tagged buffer error
	etypeUntagged      = 2 // DDP untagged buffer error
	etypeRemoteProt    = 1 // RDMAP remote protection error
	etypeRemoteOp      = 2 // RDMAP remote operation error
	ddpInvalidSTag     = 0x00
	ddpBaseBounds      = 0x01
	ddpSTagNotAssoc    = 0x02
	ddpNoBuffer        = 0x02 // untagged: invalid MSN, no buffer available
	rdmapInvalidSTag   = 0x00
	rdmapBaseBounds    = 0x01
	rdmapAccessRights  = 0x02
	rdmapSTagNotAssoc  = 0x03
	rdmapCannotInvalid = 0x09
)

// termSpec is the Terminate a fault must produce.
type termSpec struct {
	layer  verbs.TermLayer
	etypes []uint8
	code   uint8
}

func (s termSpec) match(te *verbs.TerminateError) bool {
	return te.Layer == s.layer && slices.Contains(s.etypes, te.EType) && te.Code == s.code
}

// streamFault is one request that must terminate the stream.
type streamFault struct {
	initiator, target *Side
	// wr is posted on the initiator (signaled); its completion must have
	// one of the statuses in allowed.
	wr      verbs.SendWR
	allowed []verbs.WCStatus
	term    termSpec
	// protection: the fault is a refused remote memory access, counted in
	// the target's DeviceStats.ProtectionErrors.
	protection bool
	// noRecv: the target has no receive posted (otherwise it has one,
	// which must be flushed).
	noRecv bool
	// consumed, if set, is a receive the target posts first; the faulting
	// message consumes it and it completes with consumedStatus.
	consumed       *verbs.RecvWR
	consumedStatus verbs.WCStatus
}

const (
	witnessInitiator = 0xE1 // receive posted on the initiator, must be flushed
	witnessTarget    = 0xF1 // receive posted on the target, must be flushed
	afterFault       = 0xA1 // send posted after the fault, must be flushed
)

// run posts the faulting request and checks everything that must follow.
func (f *streamFault) run(t *testing.T, e *env) {
	t.Helper()
	ini, tgt := f.initiator, f.target
	if f.consumed != nil {
		MustPostRecv(t, tgt.QP, *f.consumed)
	}
	if !f.noRecv {
		MustPostRecv(t, tgt.QP, verbs.RecvWR{ID: witnessTarget, SGL: []verbs.SGE{tgt.Buf.SGE(0, 64)}})
	}
	MustPostRecv(t, ini.QP, verbs.RecvWR{ID: witnessInitiator, SGL: []verbs.SGE{ini.Buf.SGE(0, 64)}})
	protBefore := tgt.Dev.Stats().ProtectionErrors

	f.wr.Flags |= verbs.SendSignaled
	MustPostSend(t, ini.QP, f.wr)

	WaitDone(t, tgt.Conn, e.timeout)
	WaitDone(t, ini.Conn, e.timeout)

	// Both sides report the same Terminate; only the initiator got it
	// from the wire.
	for _, s := range []struct {
		who    string
		conn   verbs.Conn
		remote bool
	}{{"target", tgt.Conn, false}, {"initiator", ini.Conn, true}} {
		var te *verbs.TerminateError
		if err := s.conn.Err(); !errors.As(err, &te) {
			t.Errorf("%s Conn.Err() = %v, want a *verbs.TerminateError %+v", s.who, err, f.term)
		} else if !f.term.match(te) || te.Remote != s.remote {
			t.Errorf("%s Conn.Err() = %v (remote %v), want layer %v etype %v code %#02x, remote %v",
				s.who, te, te.Remote, f.term.layer, f.term.etypes, f.term.code, s.remote)
		}
	}

	ev := WaitAsyncEvent(t, tgt.Dev, e.timeout, func(ev verbs.AsyncEvent) bool {
		return ev.QP == tgt.QP && (ev.Type == verbs.EventQPFatal || ev.Type == verbs.EventQPAccessErr || ev.Type == verbs.EventQPReqErr)
	})
	if f.protection && ev.Type == verbs.EventQPReqErr {
		t.Errorf("protection fault raised %v, want QP_ACCESS_ERR or QP_FATAL", ev)
	}

	// The initiator: the request's own completion and the flushed receive.
	for _, wc := range PollN(t, ini.CQ, 2, e.timeout) {
		switch wc.ID {
		case f.wr.ID:
			if !slices.Contains(f.allowed, wc.Status) {
				t.Errorf("faulting %v completed with %v, want one of %v", f.wr.Opcode, wc.Status, f.allowed)
			}
		case witnessInitiator:
			ExpectWC(t, wc, witnessInitiator, verbs.WCWRFlushErr, verbs.WCRecv)
		default:
			t.Errorf("unexpected initiator completion %+v", wc)
		}
	}
	// The target: the consumed receive fails, the other is flushed.
	if f.consumed != nil {
		ExpectWC(t, PollOne(t, tgt.CQ, e.timeout), f.consumed.ID, f.consumedStatus, verbs.WCRecv)
	}
	if !f.noRecv {
		ExpectWC(t, PollOne(t, tgt.CQ, e.timeout), witnessTarget, verbs.WCWRFlushErr, verbs.WCRecv)
	}
	for _, s := range []*Side{ini, tgt} {
		if st := s.QP.State(); st != verbs.QPStateError {
			t.Errorf("QP %d after the fault in %v, want ERROR", s.QP.QPN(), st)
		}
		// Later requests are flushed.
		MustPostSend(t, s.QP, verbs.SendWR{ID: afterFault, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.Buf.SGE(0, 8)}})
		ExpectWC(t, PollOne(t, s.CQ, e.timeout), afterFault, verbs.WCWRFlushErr, verbs.WCSend)
		NoWC(t, s.CQ)
	}
	if f.protection {
		if after := tgt.Dev.Stats().ProtectionErrors; after <= protBefore {
			t.Errorf("target ProtectionErrors %d -> %d: the refused access was not counted", protBefore, after)
		}
	}
	proveAlive(t, e)
}

// writeFault is an RDMA Write of n bytes to addr/rkey at the target.
func writeFault(ini, tgt *Side, addr uint64, rkey uint32, n int, code uint8) *streamFault {
	return &streamFault{
		initiator: ini, target: tgt,
		wr:         verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{ini.Buf.SGE(0, n)}, RemoteAddr: addr, RKey: rkey},
		allowed:    []verbs.WCStatus{verbs.WCSuccess, verbs.WCRemAccessErr, verbs.WCWRFlushErr},
		term:       termSpec{verbs.TermLayerDDP, []uint8{etypeTagged}, code},
		protection: true,
	}
}

// readFault is an RDMA Read of n bytes from addr/rkey at the target.
func readFault(ini, tgt *Side, addr uint64, rkey uint32, n int, code uint8) *streamFault {
	return &streamFault{
		initiator: ini, target: tgt,
		wr:         verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, SGL: []verbs.SGE{ini.Buf.SGE(0, n)}, RemoteAddr: addr, RKey: rkey},
		allowed:    []verbs.WCStatus{verbs.WCRemAccessErr},
		term:       termSpec{verbs.TermLayerRDMAP, []uint8{etypeRemoteProt}, code},
		protection: true,
	}
}

// badKey returns an STag with the index of k and another key byte: the
// "guessed neighbour" a peer might try.
func badKey(k uint32) uint32 { return k ^ 0x5a }

func testFaultWriteBadRKey(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	writeFault(sb, sa, sa.Buf.Addr(0), badKey(sa.Buf.RKey()), 64, ddpInvalidSTag).run(t, e)
}

func testFaultWriteOutOfBounds(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	writeFault(sb, sa, sa.Buf.Addr(len(sa.Buf.B)-8), sa.Buf.RKey(), 16, ddpBaseBounds).run(t, e)
}

func testFaultWriteBeforeStart(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	writeFault(sb, sa, sa.Buf.Addr(0)-8, sa.Buf.RKey(), 16, ddpBaseBounds).run(t, e)
}

func testFaultWriteNoRemoteWrite(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	ro := NewBuf(t, sa.PD, 4096, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	// RFC 5041 has no access-rights code; siw reports an invalid STag.
	writeFault(sb, sa, ro.Addr(0), ro.RKey(), 64, ddpInvalidSTag).run(t, e)
}

func testFaultWriteOtherPD(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	pd2, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	other := NewBuf(t, pd2, 4096, DefaultAccess)
	writeFault(sb, sa, other.Addr(0), other.RKey(), 64, ddpSTagNotAssoc).run(t, e)
}

func testFaultWriteInvalidatedMR(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	x := NewBuf(t, sa.PD, 4096, DefaultAccess)
	expectNoErr(t, "Invalidate", x.MR.Invalidate())
	writeFault(sb, sa, x.Addr(0), x.RKey(), 64, ddpInvalidSTag).run(t, e)
}

func testFaultWriteAfterSendWithInv(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	x := NewBuf(t, sa.PD, 4096, DefaultAccess)
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 7, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 8, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}, InvalidateRKey: x.RKey()})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 8, verbs.WCSuccess, verbs.WCSend)
	wc := PollOne(t, sa.CQ, e.timeout)
	ExpectWC(t, wc, 7, verbs.WCSuccess, verbs.WCRecv)
	if wc.Flags&verbs.WCWithInv == 0 || wc.InvalidatedRKey != x.RKey() {
		t.Fatalf("receive of a Send with Invalidate: %+v", wc)
	}
	writeFault(sb, sa, x.Addr(0), x.RKey(), 64, ddpInvalidSTag).run(t, e)
}

func testFaultWriteDeregisteredMR(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	x := NewBuf(t, sa.PD, 4096, DefaultAccess)
	expectNoErr(t, "Dereg", x.MR.Dereg())
	writeFault(sb, sa, x.Addr(0), x.RKey(), 64, ddpInvalidSTag).run(t, e)
}

func testFaultReadBadRKey(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	readFault(sb, sa, sa.Buf.Addr(0), badKey(sa.Buf.RKey()), 64, rdmapInvalidSTag).run(t, e)
}

func testFaultReadOutOfBounds(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	readFault(sb, sa, sa.Buf.Addr(len(sa.Buf.B)-8), sa.Buf.RKey(), 16, rdmapBaseBounds).run(t, e)
}

func testFaultReadNoRemoteRead(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	wo := NewBuf(t, sa.PD, 4096, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	readFault(sb, sa, wo.Addr(0), wo.RKey(), 64, rdmapAccessRights).run(t, e)
}

func testFaultReadOtherPD(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	pd2, err := e.a.AllocPD()
	expectNoErr(t, "AllocPD", err)
	other := NewBuf(t, pd2, 4096, DefaultAccess)
	readFault(sb, sa, other.Addr(0), other.RKey(), 64, rdmapSTagNotAssoc).run(t, e)
}

func testFaultSendNoReceive(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	// iWARP has no RNR retry: a Send that finds no receive ends the stream.
	(&streamFault{
		initiator: sb, target: sa,
		wr:      verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}},
		allowed: []verbs.WCStatus{verbs.WCSuccess, verbs.WCRemOpErr, verbs.WCWRFlushErr},
		term:    termSpec{verbs.TermLayerDDP, []uint8{etypeUntagged}, ddpNoBuffer},
		noRecv:  true,
	}).run(t, e)
}

func testFaultSendTooLong(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	// siw reports "no buffer" for a message longer than its receive too,
	// and completes the receive with a length error.
	(&streamFault{
		initiator: sb, target: sa,
		wr:             verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}},
		allowed:        []verbs.WCStatus{verbs.WCSuccess, verbs.WCRemOpErr, verbs.WCWRFlushErr},
		term:           termSpec{verbs.TermLayerDDP, []uint8{etypeUntagged}, ddpNoBuffer},
		consumed:       &verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(1024, 16)}},
		consumedStatus: verbs.WCLocLenErr,
	}).run(t, e)
}

func testFaultSendInvalidateBadSTag(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	(&streamFault{
		initiator: sb, target: sa,
		wr: verbs.SendWR{ID: 1, Opcode: verbs.OpSendWithInv, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)},
			InvalidateRKey: badKey(sa.Buf.RKey())},
		allowed: []verbs.WCStatus{verbs.WCSuccess, verbs.WCRemInvReqErr, verbs.WCWRFlushErr},
		// siw: remote protection when the STag is another PD's, remote
		// operation otherwise; code "STag cannot be invalidated" either way.
		term:           termSpec{verbs.TermLayerRDMAP, []uint8{etypeRemoteProt, etypeRemoteOp}, rdmapCannotInvalid},
		consumed:       &verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sa.Buf.SGE(1024, 64)}},
		consumedStatus: verbs.WCRemInvReqErr,
	}).run(t, e)
}

// expectLocalFault posts wr, whose local memory is invalid, on side. The
// provider may refuse it at post time (ErrInvalidKey or ErrProtection,
// nothing posted, the connection unharmed) or complete it with a local
// protection error, in which case the QP goes to ERROR and the stream is
// torn down as siw does.
func expectLocalFault(t *testing.T, e *env, side, peer *Side, wr verbs.SendWR) {
	t.Helper()
	wr.Flags |= verbs.SendSignaled
	n, err := side.QP.PostSend([]verbs.SendWR{wr})
	if err != nil {
		if n != 0 || !errIsAny(err, verbs.ErrInvalidKey, verbs.ErrProtection) {
			t.Fatalf("PostSend with invalid local memory = %d, %v; want 0 and ErrInvalidKey or ErrProtection", n, err)
		}
		if st := side.QP.State(); st != verbs.QPStateRTS {
			t.Fatalf("QP in %v after a refused post, want RTS", st)
		}
		RoundTrip(t, side, peer, 32, 99, e.timeout)
		return
	}
	wc := PollOne(t, side.CQ, e.timeout)
	if wc.ID != wr.ID || (wc.Status != verbs.WCLocProtErr && wc.Status != verbs.WCLocQPOpErr) {
		t.Fatalf("request with invalid local memory completed %+v (%v), want WCLocProtErr", wc, wc.Status)
	}
	WaitDone(t, side.Conn, e.timeout)
	WaitDone(t, peer.Conn, e.timeout)
	if st := side.QP.State(); st != verbs.QPStateError {
		t.Fatalf("QP in %v after a local protection error, want ERROR", st)
	}
	expectErr(t, "peer's Err after the stream was torn down", peer.Conn.Err(), verbs.ErrDisconnected)
	proveAlive(t, e)
}

func testFaultLocalBadLKey(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	sge := sb.Buf.SGE(0, 64)
	sge.LKey = badKey(sge.LKey)
	expectLocalFault(t, e, sb, sa, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{sge}})
}

func testFaultLocalOutsideMR(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	expectLocalFault(t, e, sb, sa, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(len(sb.Buf.B)-8, 16)}})
}

func testFaultReadSinkNoLocalWrite(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	ro := NewBuf(t, sb.PD, 4096, verbs.AccessRemoteRead)
	expectLocalFault(t, e, sb, sa, verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, SGL: []verbs.SGE{ro.SGE(0, 64)},
		RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()})
}
