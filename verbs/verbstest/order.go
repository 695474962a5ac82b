package verbstest

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// testSendQueueOrder: a QP's send completions come in posting order. A
// large RDMA Read is followed by small Writes, some unsignalled; the
// Writes finish on the wire long before the Read's response has arrived,
// yet their completions follow the Read's. An unsignalled Write produces
// nothing, and a signalled one after it proves it retired.
func testSendQueueOrder(t *testing.T, e *env) {
	const big, rounds = 1 << 20, 4
	sa, sb := ConnectPair(t, e.a, e.b, e.addr, PairAttr{BufSize: 2 * big})
	for round := 0; round < rounds; round++ {
		wrs := []verbs.SendWR{{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sb.Buf.SGE(0, big)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}}
		for i := 2; i < 8; i++ {
			wr := verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite,
				SGL: []verbs.SGE{sb.Buf.SGE(big+64*i, 64)}, RemoteAddr: sa.Buf.Addr(big + 64*i), RKey: sa.Buf.RKey()}
			if i%2 == 0 {
				wr.Flags = verbs.SendSignaled
			}
			wrs = append(wrs, wr)
		}
		MustPostSend(t, sb.QP, wrs...)
		wcs := PollN(t, sb.CQ, 4, e.timeout)
		ExpectWC(t, wcs[0], 1, verbs.WCSuccess, verbs.WCRDMARead)
		for k, id := range []uint64{2, 4, 6} {
			ExpectWC(t, wcs[k+1], id, verbs.WCSuccess, verbs.WCRDMAWrite)
		}
		NoWC(t, sb.CQ)
	}
}
