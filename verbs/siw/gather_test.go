package siw_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestSmallSGEThenLarge sends Sends and RDMA Writes whose SGL starts with
// small pieces (an application header) followed by large ones, which the
// transmitter frames together (the small piece gathered behind the FPDU
// header, the large one referenced): the receiver must see exactly the
// concatenation, with every FPDU size, with and without CRC.
func TestSmallSGEThenLarge(t *testing.T) {
	eachFraming(t, testSmallSGEThenLarge)
}

func testSmallSGEThenLarge(t *testing.T, opts siw.Options) {
	verbstest.CheckLeaks(t)
	// Each SGL: pieces taken in turn from hdrs (small) and data (large).
	shapes := [][]int{
		{48, 16384},
		{48, 4096},
		{1, 70000},
		{1024, 65000},
		{1025, 9000},
		{48, 100, 20000},
		{48, 16384, 48, 16384},
		{200, 0, 5000},
		{48, 65535 - 18 - 48},
	}
	const slot = 1 << 17
	da, db := openPair(t, opts)
	t.Cleanup(func() {
		da.Close()
		db.Close()
	})
	n := len(shapes)
	sa, sb := verbstest.ConnectPair(t, da, db, "127.0.0.1:0", verbstest.PairAttr{
		BufSize: n * slot, CQDepth: 4 * n,
		Caps: verbs.QPCaps{MaxSendWR: 2 * n, MaxRecvWR: n, MaxSendSGE: 4},
	})
	src := verbstest.NewBuf(t, sb.PD, n*slot, verbstest.DefaultAccess)
	verbstest.Fill(src.B, 3)
	recvBuf := verbstest.NewBuf(t, sa.PD, n*slot, verbstest.DefaultAccess)
	recvs := make([]verbs.RecvWR, n)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{recvBuf.SGE(i*slot, slot)}}
	}
	verbstest.MustPostRecv(t, sa.QP, recvs...)
	var wrs []verbs.SendWR
	want := make([][]byte, n)
	for i, shape := range shapes {
		// Pieces at scattered offsets of the slot, never adjacent.
		var sgl []verbs.SGE
		off := i * slot
		for _, l := range shape {
			sgl = append(sgl, src.SGE(off, l))
			want[i] = append(want[i], src.B[off:off+l]...)
			off += l + 64
		}
		wrs = append(wrs,
			verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, SGL: sgl,
				RemoteAddr: sa.Buf.Addr(i * slot), RKey: sa.Buf.RKey()},
			verbs.SendWR{ID: uint64(100 + i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sgl})
	}
	verbstest.MustPostSend(t, sb.QP, wrs...)
	for _, wc := range verbstest.PollN(t, sb.CQ, n, 20*time.Second) {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("send completion %+v", wc)
		}
	}
	for i, wc := range verbstest.PollN(t, sa.CQ, n, 20*time.Second) {
		if wc.Status != verbs.WCSuccess || wc.ID != uint64(i) || int(wc.ByteLen) != len(want[i]) {
			t.Fatalf("receive %d: completion %+v, want %d bytes", i, wc, len(want[i]))
		}
		if got := recvBuf.B[i*slot : i*slot+len(want[i])]; !bytes.Equal(got, want[i]) {
			t.Fatalf("send %d %v: payload differs", i, shapes[i])
		}
		if got := sa.Buf.B[i*slot : i*slot+len(want[i])]; !bytes.Equal(got, want[i]) {
			t.Fatalf("write %d %v: target differs", i, shapes[i])
		}
	}
}
