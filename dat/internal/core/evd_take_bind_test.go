package core_test

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/verbs/verbstest"
)

// A bind's completion on an EP's request queue is an RMR bind event, also
// when Take meets it as the oldest request of the queue it last took from
// (EVD.lastQ): Take hands out as they are only slots neither suppressed
// nor of a bind (slotBind), and the bind's goes to the full translation.
func TestTakeBindAfterDTOOfItsQueue(t *testing.T) {
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 2)
	srv, cli := dattest.NewSide(t, ias[0], 4096), dattest.NewSide(t, ias[1], 4096)
	_, cep := dattest.Connect(t, srv, cli, nil)
	r, err := lmr.CreateRMR(cli.PZ)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Free()
	for i := 0; i < 3; i++ {
		// The write makes cep's request queue the EVD's last queue.
		if err := cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 1, srv.Buf.RMRTriplet(0, 8), dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		dattest.ExpectDTO(t, cli.EVD, 1, dat.DTOSuccess)
		if _, err := r.Bind(cli.Buf, cli.Buf.Triplet(0, 64), dat.MemPrivRemoteWrite, cep, 7, dat.CompletionDefault); err != nil {
			t.Fatal(err)
		}
		if ev := dattest.Expect(t, cli.EVD, dat.RMRBindCompletionEvent); ev.RMRBind.Cookie != 7 || ev.RMRBind.Status != dat.DTOSuccess {
			t.Fatalf("round %d: bind completion %+v", i, ev.RMRBind)
		}
	}
}
