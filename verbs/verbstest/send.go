package verbstest

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/godapl/godapl/verbs"
)

var sendTests = []testCase{
	{"Sizes", testSendSizes},
	{"Unsignaled", testSendUnsignaled},
	{"SignalAll", testSendSignalAll},
	{"Inline", testSendInline},
	{"InlineReuse", testSendInlineReuse},
	{"WithInvalidate", testSendWithInvalidate},
	{"Ordering", testSendOrdering},
}

// transferSizes are the message sizes of the data tests: empty, tiny,
// around a cache line and a page, and large enough to need many FPDUs.
var transferSizes = []int{0, 1, 63, 64, 4095, 4096, 65536, 1 << 20}

// segGap separates the segments of a scatter/gather list in memory, so
// that a provider that ignores segment boundaries writes into a gap.
const segGap = 13

// layout places k segments of the given lengths into a buffer starting
// at base, in reverse order (the first segment at the highest address) and
// with gaps, and returns their SGEs and offsets.
func layout(b *Buf, base int, lens []int) ([]verbs.SGE, []int) {
	sgl := make([]verbs.SGE, len(lens))
	offs := make([]int, len(lens))
	pos := base
	for i := len(lens) - 1; i >= 0; i-- {
		offs[i] = pos
		sgl[i] = b.SGE(pos, lens[i])
		pos += lens[i] + segGap
	}
	return sgl, offs
}

// gatherList writes msg into b as up to k segments and returns the SGL
// that gathers it back; an empty message has an empty list.
func gatherList(b *Buf, base int, msg []byte, k int) []verbs.SGE {
	k = min(k, len(msg))
	lens := make([]int, k)
	for i := range lens {
		lens[i] = len(msg) / k
		if i < len(msg)%k {
			lens[i]++
		}
	}
	sgl, offs := layout(b, base, lens)
	at := 0
	for i, off := range offs {
		copy(b.B[off:], msg[at:at+lens[i]])
		at += lens[i]
	}
	return sgl
}

// scatterList returns a list of k receive segments for an n-byte message
// such that the leading segments fill completely and the last one stays
// untouched, and the receive buffer contents expected after the message
// lands (the region's old contents with msg scattered over it).
func scatterList(b *Buf, base int, msg []byte, k int) (sgl []verbs.SGE, end int, want []byte) {
	n := len(msg)
	var lens []int
	if k == 1 {
		lens = []int{n + 16}
	} else {
		l := max(1, (n+k-2)/(k-1))
		lens = make([]int, k)
		for i := range lens {
			lens[i] = l
		}
	}
	sgl, offs := layout(b, base, lens)
	end = offs[0] + lens[0] + segGap
	want = append([]byte(nil), b.B[:end]...)
	at := 0
	for i, off := range offs {
		c := copy(want[off:off+lens[i]], msg[at:])
		at += c
	}
	return sgl, end, want
}

func testSendSizes(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: 2<<20 + 1<<16})
	ks := min(3, sb.QP.Query().Caps.MaxSendSGE)
	kr := min(3, sa.QP.Query().Caps.MaxRecvSGE)
	for i, n := range transferSizes {
		msg := Pattern(n, uint64(n)+7)
		Fill(sa.Buf.B, uint64(i)+500) // canary
		rsgl, end, want := scatterList(sa.Buf, 5, msg, kr)
		ssgl := gatherList(sb.Buf, 3, msg, ks)
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i), SGL: rsgl})
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(1000 + i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: ssgl})
		ExpectWC(t, PollOne(t, sb.CQ, e.timeout), uint64(1000+i), verbs.WCSuccess, verbs.WCSend)
		wc := PollOne(t, sa.CQ, e.timeout)
		ExpectWC(t, wc, uint64(i), verbs.WCSuccess, verbs.WCRecv)
		if wc.ByteLen != uint32(n) || wc.QPN != sa.QP.QPN() || wc.Flags != 0 || wc.InvalidatedRKey != 0 {
			t.Fatalf("%d-byte message: receive completion %+v, want ByteLen %d, QPN %d, no flags", n, wc, n, sa.QP.QPN())
		}
		expectBytes(t, "receive buffer after a "+itoa(n)+"-byte message in "+itoa(len(ssgl))+" gather / "+itoa(len(rsgl))+" scatter segments", sa.Buf.B[:end], want)
	}
}

func testSendUnsignaled(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	if sb.QP.Query().SignalAll {
		t.Fatal("QP created with SignalAll false reports SignalAll")
	}
	const n = 6
	for i := range n {
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(i*8, 8)}})
	}
	for i := range n {
		var flags verbs.SendFlags
		if i == n-1 {
			flags = verbs.SendSignaled
		}
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(100 + i), Opcode: verbs.OpSend, Flags: flags, SGL: []verbs.SGE{sb.Buf.SGE(i*8, 8)}})
	}
	// Completions of one send queue arrive in order, so once the last,
	// signaled send has completed, the unsignaled ones would have shown up.
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 100+n-1, verbs.WCSuccess, verbs.WCSend)
	NoWC(t, sb.CQ)
	for i, wc := range PollN(t, sa.CQ, n, e.timeout) {
		ExpectWC(t, wc, uint64(i), verbs.WCSuccess, verbs.WCRecv)
	}
}

func testSendSignalAll(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{SignalAll: true})
	if !sb.QP.Query().SignalAll {
		t.Fatal("QP created with SignalAll does not report it")
	}
	for i := range 3 {
		MustPostRecv(t, sa.QP, verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(0, 8)}})
		MustPostSend(t, sb.QP, verbs.SendWR{ID: uint64(10 + i), Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(0, 8)}})
	}
	for i, wc := range PollN(t, sb.CQ, 3, e.timeout) {
		ExpectWC(t, wc, uint64(10+i), verbs.WCSuccess, verbs.WCSend)
	}
	PollN(t, sa.CQ, 3, e.timeout)
}

// inlinePair connects a pair whose sender may send inline, or skips.
func inlinePair(t *testing.T, e *env) (sa, sb *Side, n int) {
	t.Helper()
	maxInline := e.b.Query().MaxInline
	if maxInline == 0 {
		t.Skip("the device reports MaxInline 0")
	}
	n = min(64, maxInline)
	sa, sb = ConnectPair(t, e.a, e.b, e.addr, PairAttr{Caps: verbs.QPCaps{MaxInlineData: n}})
	if got := sb.QP.Query().Caps.MaxInlineData; got < n {
		t.Fatalf("QP created with MaxInlineData %d reports %d", n, got)
	}
	return sa, sb, n
}

// sendInline sends the n bytes at sge inline, clobbers src right after
// the post, and checks that the receiver got want.
func sendInline(t *testing.T, e *env, sa, sb *Side, sge verbs.SGE, src []byte) {
	t.Helper()
	n := len(src)
	want := append([]byte(nil), src...)
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, n)}})
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: []verbs.SGE{sge}})
	clear(src) // the data was copied at post time
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 2, verbs.WCSuccess, verbs.WCSend)
	ExpectWC(t, PollOne(t, sa.CQ, e.timeout), 1, verbs.WCSuccess, verbs.WCRecv)
	expectBytes(t, "inline message", sa.Buf.B[:n], want)
}

// testSendInline checks that inline data must still be registered
// (verbs.SendInline: Go offers no safe way to read an address that names
// no registration): an unregistered SGE is refused at post time and the
// connection keeps working.
func testSendInline(t *testing.T, e *env) {
	sa, sb, n := inlinePair(t, e)
	plain := Pattern(n, 11)
	wr := verbs.SendWR{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline,
		SGL: []verbs.SGE{{Addr: verbs.AddrOf(plain), Length: uint32(n)}}}
	got, err := sb.QP.PostSend([]verbs.SendWR{wr})
	if got != 0 || !errors.Is(err, verbs.ErrInvalidKey) {
		t.Fatalf("inline send of unregistered memory: PostSend = %d, %v; want 0, ErrInvalidKey", got, err)
	}
	Fill(sb.Buf.B[:n], 11)
	sendInline(t, e, sa, sb, sb.Buf.SGE(0, n), sb.Buf.B[:n])
}

// testSendInlineReuse sends registered memory inline and overwrites it as
// soon as the post returns.
func testSendInlineReuse(t *testing.T, e *env) {
	sa, sb, n := inlinePair(t, e)
	Fill(sb.Buf.B[:n], 12)
	sendInline(t, e, sa, sb, sb.Buf.SGE(0, n), sb.Buf.B[:n])
}

func testSendWithInvalidate(t *testing.T, e *env) {
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{})
	x := NewBuf(t, sa.PD, 4096, DefaultAccess)
	MustPostRecv(t, sa.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, 64)}})
	MustPostSend(t, sb.QP, verbs.SendWR{ID: 2, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled | verbs.SendSolicited,
		SGL: []verbs.SGE{sb.Buf.SGE(0, 16)}, InvalidateRKey: x.RKey()})
	ExpectWC(t, PollOne(t, sb.CQ, e.timeout), 2, verbs.WCSuccess, verbs.WCSend)
	wc := PollOne(t, sa.CQ, e.timeout)
	ExpectWC(t, wc, 1, verbs.WCSuccess, verbs.WCRecv)
	if wc.Flags&verbs.WCWithInv == 0 || wc.InvalidatedRKey != x.RKey() || wc.ByteLen != 16 {
		t.Fatalf("receive of a Send with Invalidate: %+v, want WCWithInv and InvalidatedRKey %#x", wc, x.RKey())
	}
	if wc.Flags&verbs.WCSolicited == 0 {
		t.Errorf("receive of a solicited Send with Invalidate lacks WCSolicited: %+v", wc)
	}
	// The invalidated MR is dead for local use too.
	expectLocalFault(t, e, sa, sb, verbs.SendWR{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{x.SGE(0, 8)}})
}

func testSendOrdering(t *testing.T, e *env) {
	const total, window = 1000, 50
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{Caps: verbs.QPCaps{MaxSendWR: window, MaxRecvWR: window}})
	sends := make([]verbs.SendWR, window)
	recvs := make([]verbs.RecvWR, window)
	for base := 0; base < total; base += window {
		for i := range window {
			seq := base + i
			binary.BigEndian.PutUint32(sb.Buf.B[i*4:], uint32(seq))
			recvs[i] = verbs.RecvWR{ID: uint64(seq), SGL: []verbs.SGE{sa.Buf.SGE(i*4, 4)}}
			sends[i] = verbs.SendWR{ID: uint64(seq), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sb.Buf.SGE(i*4, 4)}}
		}
		MustPostRecv(t, sa.QP, recvs...)
		MustPostSend(t, sb.QP, sends...)
		for i, wc := range PollN(t, sb.CQ, window, e.timeout) {
			ExpectWC(t, wc, uint64(base+i), verbs.WCSuccess, verbs.WCSend)
		}
		for i, wc := range PollN(t, sa.CQ, window, e.timeout) {
			ExpectWC(t, wc, uint64(base+i), verbs.WCSuccess, verbs.WCRecv)
			if got := binary.BigEndian.Uint32(sa.Buf.B[i*4:]); got != uint32(base+i) {
				t.Fatalf("receive %d holds message %d", base+i, got)
			}
		}
	}
}
