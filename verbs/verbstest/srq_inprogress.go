package verbstest

import (
	"sync"
	"testing"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// testSRQRecvInProgress: a QP's RecvInProgress counts the receives it took
// from the SRQ for messages still arriving. Two peers stream messages at
// once while a sampler reads both QPs' counts: each QP receives one
// message at a time, so every sample is 0 or 1; a QP whose receive
// completion was polled counts 0, and so do both when idle.
func testSRQRecvInProgress(t *testing.T, e *env) {
	const size, rounds = 32 << 10, 8
	s := newSRQScene(t, e, verbs.SRQAttr{MaxWR: 16, MaxSGE: 1})
	var rip [2]fastpath.RecvInProgress
	for i, qp := range s.qps {
		r, ok := qp.(fastpath.RecvInProgress)
		if !ok {
			t.Skip("the provider's QPs do not implement fastpath.RecvInProgress")
		}
		rip[i] = r
	}
	idle := func(when string) {
		t.Helper()
		for i, r := range rip {
			if n := r.RecvInProgress(); n != 0 {
				t.Fatalf("%s: QP %d RecvInProgress() = %d, want 0", when, i, n)
			}
		}
	}
	idle("before any message")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var bad [2]int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i, r := range rip {
				if n := r.RecvInProgress(); n < 0 || n > 1 {
					bad[i] = n
				}
			}
		}
	}()
	for round := 0; round < rounds; round++ {
		for i := range s.qps {
			id := uint64(10*round + i)
			if n, err := s.srq.PostRecv([]verbs.RecvWR{{ID: id, SGL: []verbs.SGE{s.buf.SGE(i*size, size)}}}); n != 1 || err != nil {
				t.Fatalf("SRQ.PostRecv = %d, %v", n, err)
			}
		}
		for i, p := range s.peers {
			MustPostSend(t, p.QP, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{p.Buf.SGE(0, size)}})
		}
		for _, wc := range PollN(t, s.cq, 2, e.timeout) {
			if wc.Status != verbs.WCSuccess || wc.ByteLen != size {
				t.Fatalf("round %d: SRQ receive %+v, want %d bytes", round, wc, size)
			}
			for i, qp := range s.qps {
				if wc.QPN == qp.QPN() {
					if n := rip[i].RecvInProgress(); n != 0 {
						t.Fatalf("round %d: QP %d RecvInProgress() = %d after its completion was polled, want 0", round, i, n)
					}
				}
			}
		}
		for i, p := range s.peers {
			ExpectWC(t, PollOne(t, p.CQ, e.timeout), uint64(i), verbs.WCSuccess, verbs.WCSend)
		}
	}
	close(stop)
	wg.Wait()
	for i, n := range bad {
		if n != 0 {
			t.Fatalf("QP %d RecvInProgress() read %d while it received one message at a time", i, n)
		}
	}
	idle("after every message completed")
}
