//go:build rdmacore

package rdmacore

import (
	"slices"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestFaults checks what a device reports of a faulty request, where the
// conformance suite's Faults group wants iWARP Terminate contents: the
// initiator's completion fails with a status the verbs contract allows,
// both connections end, a request posted after the fault is flushed, and
// the devices keep serving new connections.
func TestFaults(t *testing.T) {
	// An iWARP initiator may complete an RDMA Write once it is sent,
	// before the peer's Terminate arrives (as the conformance suite
	// allows); IB reports the NAK in the completion.
	writeStatuses := []verbs.WCStatus{verbs.WCSuccess, verbs.WCRemAccessErr, verbs.WCWRFlushErr}
	// The kernel's siw flushes the RDMA Read whose response the peer's
	// Terminate replaced; IB reports the NAK.
	readStatuses := []verbs.WCStatus{verbs.WCRemAccessErr, verbs.WCWRFlushErr}
	name, addr := testDevice(t)
	const timeout = 10 * time.Second
	for _, tc := range []struct {
		name    string
		wr      func(sa, sb *verbstest.Side) verbs.SendWR
		allowed []verbs.WCStatus
	}{
		{"WriteBadRKey", func(sa, sb *verbstest.Side) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey() ^ 0x5a}
		}, writeStatuses},
		{"WriteOutOfBounds", func(sa, sb *verbstest.Side) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, 16)}, RemoteAddr: sa.Buf.Addr(len(sa.Buf.B) - 8), RKey: sa.Buf.RKey()}
		}, writeStatuses},
		{"ReadBadRKey", func(sa, sb *verbstest.Side) verbs.SendWR {
			return verbs.SendWR{Opcode: verbs.OpRDMARead, SGL: []verbs.SGE{sb.Buf.SGE(0, 64)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey() ^ 0x5a}
		}, readStatuses},
		{"LocalBadLKey", func(sa, sb *verbstest.Side) verbs.SendWR {
			sge := sb.Buf.SGE(0, 64)
			sge.LKey ^= 0x5a
			return verbs.SendWR{Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sge}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
		}, []verbs.WCStatus{verbs.WCLocProtErr, verbs.WCLocAccessErr, verbs.WCLocQPOpErr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verbstest.CheckLeaks(t)
			a, b := openPair(t, name)
			t.Cleanup(func() {
				a.Close()
				b.Close()
			})
			sa, sb := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
			verbstest.MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 0xF1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
			wr := tc.wr(sa, sb)
			wr.ID, wr.Flags = 1, verbs.SendSignaled
			verbstest.MustPostSend(t, sb.QP, wr)
			wc := verbstest.PollOne(t, sb.CQ, timeout)
			if wc.ID != 1 || !slices.Contains(tc.allowed, wc.Status) {
				t.Fatalf("faulty request completed %+v, want one of %v", wc, tc.allowed)
			}
			verbstest.WaitDone(t, sb.Conn, timeout)
			verbstest.WaitDone(t, sa.Conn, timeout)
			if sb.Conn.Err() == nil || sa.Conn.Err() == nil {
				t.Errorf("Conn.Err after the fault: initiator %v, target %v; want both set", sb.Conn.Err(), sa.Conn.Err())
			}
			// The target's receive is flushed, and a send posted now too.
			if wc := verbstest.PollOne(t, sa.CQ, timeout); wc.ID != 0xF1 || wc.Status != verbs.WCWRFlushErr {
				t.Errorf("target's receive completed %+v, want flushed", wc)
			}
			verbstest.MustPostSend(t, sb.QP, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}})
			if wc := verbstest.PollOne(t, sb.CQ, timeout); wc.ID != 2 || wc.Status != verbs.WCWRFlushErr {
				t.Errorf("send after the fault completed %+v, want flushed", wc)
			}
			// The devices still connect.
			sa2, sb2 := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
			verbstest.RoundTrip(t, sb2, sa2, 1000, 3, timeout)
		})
	}
}
