package core_test

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/dat/srq"
	"github.com/godapl/godapl/verbs/verbstest"
)

// dat_srq_post_recv is valid in every SRQ state: an SRQ in the error
// state still takes posts (and reports them), where EP creation on it
// is refused.
func TestSRQPostRecvInErrorState(t *testing.T) {
	verbstest.CheckLeaks(t)
	a := dattest.OpenMem(t, 1)[0]
	s := dattest.NewSide(t, a, 64)
	q, err := srq.Create(a, s.PZ, srq.Attr{MaxRecvDTOs: 2})
	if err != nil {
		t.Fatal(err)
	}
	core.FailSRQ((*core.SRQ)(q))
	if p, _ := q.Query(); p.State != dat.SRQStateError {
		t.Fatalf("state %v", p.State)
	}
	if err := q.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 8)}, 1); err != nil {
		t.Fatalf("post in the error state: %v", err)
	}
	if p, _ := q.Query(); p.Available != 1 || p.Outstanding != 1 {
		t.Fatalf("query %+v", p)
	}
	_, err = ep.CreateWithSRQ(a, s.PZ, s.EVD, s.EVD, s.EVD, q, &dat.EPAttr{})
	dattest.WantErr(t, err, dat.InvalidState, dat.InvalidStateSRQError)
	if err := q.Free(); err != nil {
		t.Fatal(err)
	}
}
