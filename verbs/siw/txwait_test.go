package siw_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// Transmit in wait: with Options.TransmitInWait a Write too large for the
// poster to send is sent by the goroutine that waits on the QP's CQ
// (qp_txwait.go).

// writeAll posts n RDMA Writes of sb's whole buffer to sa's, depth in
// flight, reaping each completion with wait.
func writeAll(t *testing.T, sa, sb *verbstest.Side, n, depth int, wait func() verbs.WC) {
	t.Helper()
	size := len(sb.Buf.B)
	wr := verbs.SendWR{Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, size)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}
	for i := range n {
		if i >= depth {
			verbstest.ExpectWC(t, wait(), 0, verbs.WCSuccess, verbs.WCRDMAWrite)
		}
		verbstest.MustPostSend(t, sb.QP, wr)
	}
	for range min(n, depth) {
		verbstest.ExpectWC(t, wait(), 0, verbs.WCSuccess, verbs.WCRDMAWrite)
	}
}

// fillPattern writes a pattern into sb's buffer and clears sa's.
func fillPattern(sa, sb *verbstest.Side, seed uint64) {
	copy(sb.Buf.B, verbstest.Pattern(len(sb.Buf.B), seed))
	clear(sa.Buf.B)
}

// checkPlaced checks that sa's buffer holds what sb's does, once a Send
// behind the Writes (which complete when handed to TCP) has arrived.
func checkPlaced(t *testing.T, sa, sb *verbstest.Side) {
	t.Helper()
	want := bytes.Clone(sb.Buf.B)
	verbstest.RoundTrip(t, sb, sa, 0, 9, inlineTimeout)
	if !bytes.Equal(sa.Buf.B, want) {
		t.Fatal("the Writes' data did not arrive")
	}
}

func inlineSends(s *verbstest.Side) uint64 { return s.Dev.Stats().InlineSends }

// waitBlocking reaps one completion with waits that have no deadline:
// the waits that send what the posts left.
func waitBlocking(t *testing.T, cq verbs.CQ) func() verbs.WC {
	return func() verbs.WC {
		var wcs [1]verbs.WC
		for cq.Poll(wcs[:]) == 0 {
			if err := cq.Wait(context.Background(), false); err != nil {
				t.Fatal(err)
			}
		}
		return wcs[0]
	}
}

func TestTransmitInWait(t *testing.T) {
	// Posts leave their Writes to the waits that follow; on a loaded
	// machine the first wait may come later than the fallback, which
	// would hand them all to the transmit goroutine.
	t.Cleanup(siw.SetTxWaitFallback(time.Minute))
	sa, sb := inlinePair(t, siw.Options{TransmitInWait: true})
	fillPattern(sa, sb, 1)
	writeAll(t, sa, sb, 64, 8, waitBlocking(t, sb.CQ))
	if inlineSends(sb) == 0 {
		t.Fatal("no waiter sent a Write: every post woke the transmit goroutine")
	}
	checkPlaced(t, sa, sb)
}

// Without the option no waiter sends: the count stays 0.
func TestTransmitInWaitOff(t *testing.T) {
	sa, sb := inlinePair(t, siw.Options{})
	fillPattern(sa, sb, 2)
	writeAll(t, sa, sb, 16, 8, waitBlocking(t, sb.CQ))
	if n := inlineSends(sb); n != 0 {
		t.Fatalf("%d inline sends without TransmitInWait", n)
	}
	checkPlaced(t, sa, sb)
}

// A wait with a deadline never sends (its write could outlast it): it
// hands the work to the transmit goroutine.
func TestTransmitInWaitDeadline(t *testing.T) {
	sa, sb := inlinePair(t, siw.Options{TransmitInWait: true})
	fillPattern(sa, sb, 3)
	writeAll(t, sa, sb, 16, 8, func() verbs.WC { return verbstest.PollOne(t, sb.CQ, inlineTimeout) })
	if n := inlineSends(sb); n != 0 {
		t.Fatalf("%d inline sends by waits with a deadline", n)
	}
	checkPlaced(t, sa, sb)
}

// Work left while nobody waits on the CQ is sent by the transmit
// goroutine once the fallback fires.
func TestTransmitInWaitNobodyWaits(t *testing.T) {
	sa, sb := inlinePair(t, siw.Options{TransmitInWait: true})
	fillPattern(sa, sb, 4)
	poll := func() verbs.WC {
		var wcs [1]verbs.WC
		deadline := time.Now().Add(inlineTimeout)
		for sb.CQ.Poll(wcs[:]) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("a Write left for a waiter never completed")
			}
			runtime.Gosched()
		}
		return wcs[0]
	}
	writeAll(t, sa, sb, 16, 4, poll)
	if n := inlineSends(sb); n != 0 {
		t.Fatalf("%d inline sends with nobody waiting", n)
	}
	checkPlaced(t, sa, sb)
	// Waits that come later still complete what is posted.
	writeAll(t, sa, sb, 16, 8, waitBlocking(t, sb.CQ))
	checkPlaced(t, sa, sb)
}
