package soft

import (
	"errors"
	"testing"

	"github.com/godapl/godapl/verbs"
)

// idleLink is a Link that runs nothing: the test plays the provider with
// NextSend and CompleteSend.
type idleLink struct{}

func (idleLink) Kick()  {}
func (idleLink) Close() {}

// newIdleQP creates a signal-all QP on pd with both queues on cq and puts
// it in RTS on an idleLink, so that the test plays the provider.
func newIdleQP(t *testing.T, pd *PD, cq verbs.CQ, caps verbs.QPCaps) *QP {
	t.Helper()
	vqp, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, SignalAll: true, Caps: caps})
	if err != nil {
		t.Fatal(err)
	}
	qp := vqp.(*QP)
	qp.mu.Lock()
	qp.state, qp.link = verbs.QPStateRTS, idleLink{}
	qp.mu.Unlock()
	return qp
}

// TestQueuesHoldTheirDepth: a send queue, a receive queue and an SRQ of
// depth 3 (arrays of 4) take exactly 3 requests, refuse the fourth with
// ErrQueueFull, and keep posting order while their sequence numbers wrap
// the arrays many times; an SRQ resized to 5 takes 5.
func TestQueuesHoldTheirDepth(t *testing.T) {
	d, pd, mr := newTestMR(t, verbs.AccessLocalWrite)
	cq, err := d.CreateCQ(verbs.CQAttr{Depth: 64})
	if err != nil {
		t.Fatal(err)
	}
	sgl := []verbs.SGE{verbs.SGEOf(mr, 0, 8)}
	qp := newIdleQP(t, pd, cq, verbs.QPCaps{MaxSendWR: 3, MaxRecvWR: 3})

	var wc [1]verbs.WC
	nextSend, nextRecv := uint64(0), uint64(0) // the oldest ID not yet completed
	var w SendWQE
	var r RecvWQE
	for round := range 10 {
		for k := range 3 {
			id := nextSend + uint64(k)
			if _, err := qp.PostSend([]verbs.SendWR{{ID: id, Opcode: verbs.OpSend, SGL: sgl}}); err != nil {
				t.Fatalf("round %d: send %d of 3: %v", round, k+1, err)
			}
			if _, err := qp.PostRecv([]verbs.RecvWR{{ID: nextRecv + uint64(k), SGL: sgl}}); err != nil {
				t.Fatalf("round %d: receive %d of 3: %v", round, k+1, err)
			}
		}
		if _, err := qp.PostSend([]verbs.SendWR{{ID: 99, Opcode: verbs.OpSend, SGL: sgl}}); !errors.Is(err, verbs.ErrQueueFull) {
			t.Fatalf("round %d: a fourth send on a queue of 3: %v, want ErrQueueFull", round, err)
		}
		if _, err := qp.PostRecv([]verbs.RecvWR{{ID: 99, SGL: sgl}}); !errors.Is(err, verbs.ErrQueueFull) {
			t.Fatalf("round %d: a fourth receive on a queue of 3: %v, want ErrQueueFull", round, err)
		}
		// Retire them in order: each round starts 3 further on, so the
		// requests sit at every offset of the 4-slot arrays in turn.
		for range 3 {
			if !qp.NextSend(&w) || w.ID != nextSend {
				t.Fatalf("round %d: NextSend gave %d, want %d", round, w.ID, nextSend)
			}
			qp.CompleteSend(w.Seq, verbs.WCSuccess, 0)
			if cq.Poll(wc[:]) != 1 || wc[0].ID != nextSend {
				t.Fatalf("round %d: send completion %+v, want ID %d", round, wc[0], nextSend)
			}
			nextSend++
			if !qp.TakeRecv(&r) || r.ID != nextRecv {
				t.Fatalf("round %d: TakeRecv gave %d, want %d", round, r.ID, nextRecv)
			}
			nextRecv++
		}
	}

	srq, err := pd.CreateSRQ(verbs.SRQAttr{MaxWR: 3})
	if err != nil {
		t.Fatal(err)
	}
	post := func(n int) error {
		for range n {
			if _, err := srq.PostRecv([]verbs.RecvWR{{SGL: sgl}}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := post(3); err != nil {
		t.Fatal(err)
	}
	if err := post(1); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("a fourth receive on an SRQ of 3: %v, want ErrQueueFull", err)
	}
	if err := srq.Modify(verbs.SRQAttr{MaxWR: 5}, verbs.SRQMaxWR); err != nil {
		t.Fatal(err)
	}
	if got := srq.Query().MaxWR; got != 5 {
		t.Fatalf("SRQ MaxWR %d after resizing to 5", got)
	}
	if err := post(2); err != nil {
		t.Fatal(err)
	}
	if err := post(1); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("a sixth receive on an SRQ of 5: %v, want ErrQueueFull", err)
	}
}
