package soft

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/godapl/godapl/verbs"
)

// TestCompleteSendsBatch: CompleteSends retires a batch as CompleteSend
// does for each (in posting order, whatever the order of the batch; stale
// sequence numbers ignored) and wakes a waiter blocked on the send CQ,
// though it pushes under the QP's lock and signals after releasing it.
func TestCompleteSendsBatch(t *testing.T) {
	synctest.Test(t, testCompleteSendsBatch)
}

func testCompleteSendsBatch(t *testing.T) {
	d, pd, mr := newTestMR(t, verbs.AccessLocalWrite)
	vcq, err := d.CreateCQ(verbs.CQAttr{Depth: 16})
	if err != nil {
		t.Fatal(err)
	}
	cq := vcq.(*CQ)
	qp := newIdleQP(t, pd, cq, verbs.QPCaps{MaxSendWR: 8, MaxRecvWR: 1})

	sgl := []verbs.SGE{verbs.SGEOf(mr, 0, 8)}
	var seqs []uint64
	for id := range uint64(4) {
		if _, err := qp.PostSend([]verbs.SendWR{{ID: id, Opcode: verbs.OpRDMAWrite, SGL: sgl}}); err != nil {
			t.Fatal(err)
		}
		var w SendWQE
		if !qp.NextSend(&w) {
			t.Fatalf("NextSend found no request %d", id)
		}
		seqs = append(seqs, w.Seq)
	}

	waited := make(chan error, 1)
	go func() { waited <- cq.Wait(context.Background(), false) }()
	synctest.Wait() // the waiter sleeps on the CQ

	// The last two first: nothing can be queued before the first two.
	qp.CompleteSends(seqs[2:])
	if n := cq.Len(); n != 0 {
		t.Fatalf("%d completions queued ahead of the first request", n)
	}
	qp.CompleteSends([]uint64{seqs[1], seqs[0], seqs[0], 12345})
	if err := <-waited; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	var wcs [8]verbs.WC
	n := cq.Poll(wcs[:])
	if n != 4 {
		t.Fatalf("%d completions, want 4", n)
	}
	for i, wc := range wcs[:n] {
		if wc.ID != uint64(i) || wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRDMAWrite {
			t.Fatalf("completion %d: %+v, want ID %d, success, RDMA Write", i, wc, i)
		}
	}
	qp.CompleteSends(nil)
	if n := cq.Len(); n != 0 {
		t.Fatalf("an empty batch queued %d completions", n)
	}
}
