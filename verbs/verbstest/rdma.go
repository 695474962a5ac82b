package verbstest

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

var rdmaTests = []testCase{
	{"WriteSizes", testRDMAWriteSizes},
	{"ReadSizes", testRDMAReadSizes},
	{"WriteThenSend", testRDMAWriteThenSend},
	{"ReadsUpToORD", testRDMAReadsUpToORD},
	{"SendQueueOrder", testSendQueueOrder},
	{"ZeroBased", testRDMAZeroBased},
}

// remoteOff is where RDMA tests aim inside the peer's MR: not aligned to
// anything, so that address arithmetic mistakes show.
const remoteOff = 4093

func testRDMAWriteSizes(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: 1<<20 + 1<<14})
	ks := min(3, sb.QP.Query().Caps.MaxSendSGE)
	for i, n := range transferSizes {
		msg := Pattern(n, uint64(n)+21)
		Fill(sa.Buf.B, uint64(i)+600) // canary
		want := append([]byte(nil), sa.Buf.B...)
		copy(want[remoteOff:], msg)
		sgl := gatherList(sb.Buf, 0, msg, ks)
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sgl, RemoteAddr: sa.Buf.Addr(remoteOff), RKey: sa.Buf.RKey()})
		ExpectWC(t, PollOne(t, sb.CQ, e.timeout), uint64(i), verbs.WCSuccess, verbs.WCRDMAWrite)
		// The Write completes at the writer when it is sent; a Send behind
		// it proves placement at the target.
		RoundTrip(t, sb, sa, 0, uint64(100+i), e.timeout)
		expectBytes(t, "target memory after a "+itoa(n)+"-byte RDMA Write from "+itoa(len(sgl))+" segments", sa.Buf.B, want)
	}
}

func testRDMAReadSizes(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: 1<<20 + 1<<14})
	const localOff = 123
	for i, n := range transferSizes {
		Fill(sa.Buf.B, uint64(n)+31)
		Fill(sb.Buf.B, uint64(i)+700) // canary
		want := append([]byte(nil), sb.Buf.B...)
		copy(want[localOff:], sa.Buf.B[remoteOff:remoteOff+n])
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sb.Buf.SGE(localOff, n)}, RemoteAddr: sa.Buf.Addr(remoteOff), RKey: sa.Buf.RKey()})
		wc := PollOne(t, sb.CQ, e.timeout)
		ExpectWC(t, wc, uint64(i), verbs.WCSuccess, verbs.WCRDMARead)
		if wc.ByteLen != uint32(n) || wc.QPN != sb.QP.QPN() {
			t.Fatalf("RDMA Read of %d bytes: completion %+v, want ByteLen %d on QPN %d", n, wc, n, sb.QP.QPN())
		}
		expectBytes(t, "reader memory after a "+itoa(n)+"-byte RDMA Read", sb.Buf.B, want)
		NoWC(t, sa.CQ) // the target takes no part
	}
}

func testRDMAWriteThenSend(t *testing.T, e *env) {
	const n = 1 << 20
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: n + 4096})
	for i := range 5 {
		Fill(sb.Buf.B[:n], uint64(i)+40)
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(n, 8)}})
		// Posted together: the Send must not be delivered before the
		// Write's data is placed.
		MustPostSend(t, sb.QP,
			verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{sb.Buf.SGE(0, n)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()},
			verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(n, 8)}})
		ExpectWC(t, PollOne(t, sa.CQ, e.timeout), uint64(i), verbs.WCSuccess, verbs.WCRecv)
		expectBytes(t, "data of an RDMA Write when the following Send is received", sa.Buf.B[:n], sb.Buf.B[:n])
		ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 2, verbs.WCSuccess, verbs.WCSend)
	}
}

func testRDMAReadsUpToORD(t *testing.T, e *env) {
	ord := min(8, e.b.Query().MaxORD, e.a.Query().MaxIRD)
	const chunk = 4096
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{
		Caps:    verbs.QPCaps{MaxSendWR: 4 * ord},
		BufSize: 4 * ord * chunk,
		Connect: verbs.ConnParam{InitiatorDepth: ord, ResponderResources: 1},
		Accept:  verbs.ConnParam{ResponderResources: ord, InitiatorDepth: 1},
	})
	if got := sb.Conn.InitiatorDepth(); got != ord {
		t.Fatalf("negotiated ORD %d, asked for %d", got, ord)
	}
	// Post four times ORD reads at once: the provider keeps ORD of them on
	// the wire and queues the rest; a provider that exceeds the peer's IRD
	// gets its stream terminated.
	count := 4 * ord
	Fill(sa.Buf.B, 50)
	clear(sb.Buf.B)
	wrs := make([]verbs.SendWR, count)
	for i := range wrs {
		// Read chunk i of the target into slot count-1-i, so that a
		// response placed at the wrong sink shows.
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sb.Buf.SGE((count-1-i)*chunk, chunk)}, RemoteAddr: sa.Buf.Addr(i * chunk), RKey: sa.Buf.RKey()}
	}
	MustPostSend(t, sb.QP, wrs...)
	for i, wc := range PollN(t, sb.CQ, count, e.timeout) {
		ExpectWC(t, wc, uint64(i), verbs.WCSuccess, verbs.WCRDMARead)
	}
	for i := range count {
		expectBytes(t, "chunk "+itoa(i)+" read", sb.Buf.B[(count-1-i)*chunk:(count-i)*chunk], sa.Buf.B[i*chunk:(i+1)*chunk])
	}
	if sb.Conn.Err() != nil || sa.Conn.Err() != nil {
		t.Fatalf("connection failed during reads: %v / %v", sb.Conn.Err(), sa.Conn.Err())
	}
}
