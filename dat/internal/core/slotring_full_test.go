package core_test

import (
	"errors"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/verbs/verbstest"
)

// A queue holds as many requests as its EP was created for, by the
// poster's copy of its head (slotRing.end) on the fast posts as on the
// general one: one more is refused with DAT_INSUFFICIENT_RESOURCES until a
// completion is dequeued, round after round as the copy moves on.
func TestPostFullQueueRefused(t *testing.T) {
	verbstest.CheckLeaks(t)
	const depth = 4
	ias := dattest.OpenMem(t, 2)
	srv, cli := dattest.NewSide(t, ias[0], 4096), dattest.NewSide(t, ias[1], 4096)
	sep, cep := dattest.Connect(t, srv, cli, &dat.EPAttr{MaxRequestDTOs: depth, MaxRecvDTOs: depth})
	full := func(what string, err error) {
		t.Helper()
		var de *dat.Error
		if !errors.As(err, &de) || de.Code != dat.InsufficientResources {
			t.Fatalf("%s on a full queue: %v, want DAT_INSUFFICIENT_RESOURCES", what, err)
		}
	}
	write := func(c dat.DTOCookie) error {
		return cep.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, c, srv.Buf.RMRTriplet(0, 8), dat.CompletionDefault)
	}
	recv := func(c dat.DTOCookie) error {
		return sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(64, 64)}, c, dat.CompletionDefault)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < depth; i++ {
			if err := write(dat.DTOCookie(i)); err != nil {
				t.Fatalf("round %d: write %d: %v", round, i, err)
			}
			if err := recv(dat.DTOCookie(i)); err != nil {
				t.Fatalf("round %d: recv %d: %v", round, i, err)
			}
		}
		full("a write", write(99))
		full("a receive", recv(99))
		for i := 0; i < depth; i++ {
			dattest.ExpectDTO(t, cli.EVD, dat.DTOCookie(i), dat.DTOSuccess)
		}
		for i := 0; i < depth; i++ { // each Send takes a receive
			if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 50, dat.CompletionDefault); err != nil {
				t.Fatalf("round %d: send %d: %v", round, i, err)
			}
			dattest.ExpectDTO(t, cli.EVD, 50, dat.DTOSuccess)
			dattest.ExpectDTO(t, srv.EVD, dat.DTOCookie(i), dat.DTOSuccess)
		}
	}
}
