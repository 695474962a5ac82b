package verbstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
)

var concurrencyTests = []testCase{
	{"SharedCQ", testConcurrencySharedCQ},
}

// testConcurrencySharedCQ runs several connections at once: on each, one
// goroutine posts receives and another posts sends, while two goroutines
// per device poll the one CQ all of that device's QPs share. Run it with
// -race.
func testConcurrencySharedCQ(t *testing.T, e *env) {
	const (
		conns  = 4
		msgs   = 200
		window = 16
		size   = 64
	)
	type pair struct {
		rx, tx   verbs.QP
		rbuf     *Buf
		sbuf     *Buf
		credits  chan struct{} // one token per send slot
		received [msgs]bool
	}
	mk := func(dev verbs.Device) (verbs.PD, verbs.CQ) {
		pd, err := dev.AllocPD()
		expectNoErr(t, "AllocPD", err)
		cq, err := dev.CreateCQ(verbs.CQAttr{Depth: 4 * conns * msgs})
		expectNoErr(t, "CreateCQ", err)
		return pd, cq
	}
	pdA, cqA := mk(e.a)
	pdB, cqB := mk(e.b)
	pairs := make([]*pair, conns)
	byRx := make(map[uint32]*pair)
	byTx := make(map[uint32]*pair)
	for i := range pairs {
		p := &pair{credits: make(chan struct{}, window)}
		var err error
		p.rx, err = pdA.CreateQP(verbs.QPInitAttr{SendCQ: cqA, RecvCQ: cqA, Caps: verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: msgs, MaxSendSGE: 1, MaxRecvSGE: 1}})
		expectNoErr(t, "CreateQP", err)
		p.tx, err = pdB.CreateQP(verbs.QPInitAttr{SendCQ: cqB, RecvCQ: cqB, Caps: verbs.QPCaps{MaxSendWR: window, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		expectNoErr(t, "CreateQP", err)
		p.rbuf = NewBuf(t, pdA, msgs*size, verbs.AccessLocalWrite)
		p.sbuf = NewBuf(t, pdB, msgs*size, 0)
		for range window {
			p.credits <- struct{}{}
		}
		ConnectQPs(t, e.a, e.b, e.addr, p.rx, p.tx, verbs.ConnParam{}, verbs.ConnParam{})
		pairs[i] = p
		byRx[p.rx.QPN()] = p
		byTx[p.tx.QPN()] = p
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*e.timeout)
	defer cancel()
	errs := make(chan error, 64)
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
		cancel()
	}
	var wg sync.WaitGroup

	// Pollers: two per CQ, racing each other.
	var recvMu sync.Mutex
	var recvd, sent int
	var sentMu sync.Mutex
	allRecvd := make(chan struct{})
	allSent := make(chan struct{})
	poll := func(cq verbs.CQ, handle func(wc verbs.WC) bool) {
		defer wg.Done()
		wcs := make([]verbs.WC, 8)
		for {
			n := cq.Poll(wcs)
			for _, wc := range wcs[:n] {
				if handle(wc) {
					return
				}
			}
			if n == 0 {
				if err := cq.Wait(ctx, false); err != nil {
					return // done or failed; the main goroutine reports
				}
			}
		}
	}
	onRecv := func(wc verbs.WC) bool {
		p := byRx[wc.QPN]
		if wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv || p == nil || wc.ByteLen != size {
			fail("receive completion %+v", wc)
			return true
		}
		slot := p.rbuf.B[wc.ID*size : (wc.ID+1)*size]
		seq := binary.BigEndian.Uint64(slot)
		want := Pattern(size-8, uint64(wc.QPN)<<32|seq)
		if seq >= msgs || string(slot[8:]) != string(want) {
			fail("QP %d receive %d holds message %d with wrong data", wc.QPN, wc.ID, seq)
			return true
		}
		recvMu.Lock()
		defer recvMu.Unlock()
		if p.received[seq] {
			fail("QP %d got message %d twice", wc.QPN, seq)
			return true
		}
		p.received[seq] = true
		recvd++
		if recvd == conns*msgs {
			close(allRecvd)
		}
		return false
	}
	onSend := func(wc verbs.WC) bool {
		p := byTx[wc.QPN]
		if wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCSend || p == nil {
			fail("send completion %+v", wc)
			return true
		}
		p.credits <- struct{}{}
		sentMu.Lock()
		defer sentMu.Unlock()
		sent++
		if sent == conns*msgs {
			close(allSent)
		}
		return false
	}
	for range 2 {
		wg.Add(2)
		go poll(cqA, onRecv)
		go poll(cqB, onSend)
	}

	// Posters: all receives of a connection are posted before its sends
	// start (iWARP has no RNR retry), by a goroutine of their own.
	for _, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range msgs {
				wr := verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{p.rbuf.SGE(i*size, size)}}
				if _, err := p.rx.PostRecv([]verbs.RecvWR{wr}); err != nil {
					fail("PostRecv: %v", err)
					return
				}
			}
			// Hand over to this connection's sender.
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range msgs {
					select {
					case <-p.credits:
					case <-ctx.Done():
						return
					}
					slot := p.sbuf.B[i*size : (i+1)*size]
					binary.BigEndian.PutUint64(slot, uint64(i))
					Fill(slot[8:], uint64(p.rx.QPN())<<32|uint64(i))
					wr := verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{p.sbuf.SGE(i*size, size)}}
					if _, err := p.tx.PostSend([]verbs.SendWR{wr}); err != nil {
						fail("PostSend: %v", err)
						return
					}
				}
			}()
		}()
	}

	timer := time.NewTimer(3 * e.timeout)
	defer timer.Stop()
	var failed error
wait:
	for _, done := range []chan struct{}{allRecvd, allSent} {
		select {
		case <-done:
		case failed = <-errs:
			break wait
		case <-timer.C:
			failed = fmt.Errorf("timed out")
			break wait
		}
	}
	cancel()
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	if recvd != conns*msgs || sent != conns*msgs {
		t.Fatalf("received %d and completed %d sends of %d", recvd, sent, conns*msgs)
	}
}
