package siw_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestBulkStream streams large RDMA Writes with Sends between them, so
// that the receiver reads many FPDUs per syscall and places most of them
// out of its grown frame buffer: every Write lands exactly in its target,
// the guard bytes between targets stay untouched, and every Send arrives
// whole and in order. Odd sizes exercise the pads; a small MaxULPDU puts
// many FPDUs, tagged and untagged, into one read.
func TestBulkStream(t *testing.T) {
	eachFraming(t, testBulkStream)
}

func testBulkStream(t *testing.T, opts siw.Options) {
	verbstest.CheckLeaks(t)
	const (
		writes = 12
		guard  = 64
		sendSz = 3001
	)
	sizes := []int{1 << 20, 300001, 65516, 65517, 131073, 7}
	region := 0
	for _, n := range sizes {
		region = max(region, n)
	}
	region += sendSz + guard // the source of a Write's Send follows it
	da, db := openPair(t, opts)
	t.Cleanup(func() {
		da.Close()
		db.Close()
	})
	sa, sb := verbstest.ConnectPair(t, da, db, "127.0.0.1:0", verbstest.PairAttr{
		BufSize: writes * region, CQDepth: 4 * writes,
		Caps: verbs.QPCaps{MaxSendWR: 2 * writes, MaxRecvWR: writes},
	})
	src := verbstest.NewBuf(t, sb.PD, writes*region, verbstest.DefaultAccess)
	verbstest.Fill(src.B, 1)
	verbstest.Fill(sa.Buf.B, 2) // what lies past each target must keep this
	before := bytes.Clone(sa.Buf.B)
	// b writes to a and sends to a: the Sends share the Writes' stream.
	recvsA := make([]verbs.RecvWR, writes)
	recvBuf := verbstest.NewBuf(t, sa.PD, writes*sendSz, verbstest.DefaultAccess)
	for i := range recvsA {
		recvsA[i] = verbs.RecvWR{ID: uint64(100 + i), SGL: []verbs.SGE{recvBuf.SGE(i*sendSz, sendSz)}}
	}
	verbstest.MustPostRecv(t, sa.QP, recvsA...)
	wrs := make([]verbs.SendWR, 0, 2*writes)
	for i := 0; i < writes; i++ {
		n := sizes[i%len(sizes)]
		wrs = append(wrs,
			verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, SGL: []verbs.SGE{src.SGE(i*region, n)},
				RemoteAddr: sa.Buf.Addr(i * region), RKey: sa.Buf.RKey()},
			verbs.SendWR{ID: uint64(1000 + i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
				SGL: []verbs.SGE{src.SGE(i*region+n, sendSz)}})
	}
	verbstest.MustPostSend(t, sb.QP, wrs...)
	for _, wc := range verbstest.PollN(t, sb.CQ, writes, 20*time.Second) {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("send completion %+v", wc)
		}
	}
	wcs := verbstest.PollN(t, sa.CQ, writes, 20*time.Second)
	for i, wc := range wcs {
		if wc.Status != verbs.WCSuccess || wc.ID != uint64(100+i) || wc.ByteLen != sendSz {
			t.Fatalf("receive %d: completion %+v", i, wc)
		}
	}
	for i := 0; i < writes; i++ {
		n := sizes[i%len(sizes)]
		off := i * region
		if !bytes.Equal(sa.Buf.B[off:off+n], src.B[off:off+n]) {
			t.Fatalf("write %d (%d bytes): target differs from the source", i, n)
		}
		if !bytes.Equal(sa.Buf.B[off+n:off+region], before[off+n:off+region]) {
			t.Fatalf("write %d (%d bytes): bytes past its target changed", i, n)
		}
		got := recvBuf.B[i*sendSz : (i+1)*sendSz]
		if !bytes.Equal(got, src.B[off+n:off+n+sendSz]) {
			t.Fatalf("send %d: payload differs", i)
		}
	}
}
