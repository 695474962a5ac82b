//go:build rdmacore

package rdmacore

import (
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// Both ends of a connection have the minimum RNR timer of minRNRTimer,
// not rdma_cm's 655 ms.
func TestMinRNRTimer(t *testing.T) {
	name, addr := testDevice(t)
	a, b := openPair(t, name)
	defer a.Close()
	defer b.Close()
	if a.Query().Transport == verbs.TransportIWARP {
		t.Skip("iWARP has no RNR: rdma_cm drives its QPs and no timer applies")
	}
	sa, sb := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
	for _, s := range []*verbstest.Side{sa, sb} {
		p, err := s.QP.(*qp).queryPath()
		if err != nil {
			t.Fatal(err)
		}
		if p.MinRNRTimer != minRNRTimer {
			t.Errorf("QP %d: min_rnr_timer %d, want %d (0.32 ms)", s.QP.QPN(), p.MinRNRTimer, minRNRTimer)
		}
	}
}

// Both ends of a connection have the transport retry count retryCount,
// which every device counts down: rxe takes 7 for retries without end.
func TestRetryCount(t *testing.T) {
	name, addr := testDevice(t)
	a, b := openPair(t, name)
	defer a.Close()
	defer b.Close()
	if a.Query().Transport == verbs.TransportIWARP {
		t.Skip("iWARP: TCP retransmits, rdma_cm drives the QP and libibverbs reports no retry count")
	}
	sa, sb := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
	for _, s := range []*verbstest.Side{sa, sb} {
		p, err := s.QP.(*qp).queryPath()
		if err != nil {
			t.Fatal(err)
		}
		if p.RetryCnt != retryCount || p.RetryCnt >= 7 {
			t.Errorf("QP %d: retry_cnt %d, want %d (below 7)", s.QP.QPN(), p.RetryCnt, retryCount)
		}
	}
}

// TestQPPath: a connected QP has the path rdma_cm resolved: an MTU the
// port allows and a retransmission timeout that is set. It logs the
// attributes, which the lab compares with perftest's.
func TestQPPath(t *testing.T) {
	name, addr := testDevice(t)
	a, b := openPair(t, name)
	defer a.Close()
	defer b.Close()
	if a.Query().Transport == verbs.TransportIWARP {
		t.Skip("iWARP: rdma_cm drives the QP's path in the kernel and libibverbs reports none")
	}
	sa, sb := verbstest.ConnectPair(t, a, b, addr+":0", verbstest.PairAttr{})
	for _, s := range []*verbstest.Side{sa, sb} {
		p, err := s.QP.(*qp).queryPath()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("QP %d: %+v", s.QP.QPN(), p)
		if p.MTU < 256 || p.MTU > 4096 || p.Timeout == 0 {
			t.Errorf("QP %d: path %+v, want an MTU of 256-4096 bytes and a timeout", s.QP.QPN(), p)
		}
	}
}
