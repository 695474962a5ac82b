package core_test

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/verbs/verbstest"
)

// A work request ID names its EP by an index in the IA's owner table and
// an 8-bit generation, which a new owner of the index advances, so that
// a completion of a freed EP is not taken for one of the next owner's.
// ep_free drains the flushes of its QP from the EVDs and drops them
// (EVD.Purge), so none is left when it returns; but while it runs, other
// goroutines may create and free EPs. If the index were free for them
// before the drain, 256 of them would bring its generation round, and the
// last one's would match the flushes: here a receive of the EP being
// freed, taken for one of a new EP, which never posted it. The free
// stops before its QP is destroyed (at the lock of its receive EVD's CQ),
// 255 EPs come and go on another EVD, and the 256th takes the same
// receive EVD.
func TestOwnerIndexWaitsForTheFreedEPsFlushes(t *testing.T) {
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 1)
	s := dattest.NewSide(t, ias[0], 4096)
	recv, err := evd.Create(s.IA, 16, nil, dat.EVDDTO)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ep.Create(s.IA, s.PZ, recv, s.EVD, s.EVD, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 64)}, 1, dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	entered, release := core.GateCQLock((*core.EVD)(recv))
	freed := make(chan error, 1)
	go func() { freed <- a.Free() }()
	<-entered
	for i := 0; i < 255; i++ {
		b := s.NewEP(t, nil)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	z, err := ep.Create(s.IA, s.PZ, recv, s.EVD, s.EVD, nil)
	if err != nil {
		release()
		t.Fatal(err)
	}
	release()
	if err := <-freed; err != nil {
		t.Fatal(err)
	}
	if ev, err := recv.Dequeue(); err == nil {
		t.Fatalf("the freed EP's flushed receive came as an event of the new EP (%v): %v %+v", ev.DTO.EP == z, ev.Number, ev.DTO)
	}
	if err := z.Free(); err != nil {
		t.Fatal(err)
	}
}
