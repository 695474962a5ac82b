package core_test

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/internal/core"
	"github.com/godapl/godapl/verbs/verbstest"
)

// An EVD keeps the queue of its last completion (EVD.lastQ) for the next
// take; the EP's free must make it let go: the slot ring, the EP and
// its owner would otherwise stay reachable from the EVD, and a take
// between the owner's removal and the purge of the EP's events would
// hand out a completion of the EP being freed.
func TestEPFreeDropsLastQueue(t *testing.T) {
	verbstest.CheckLeaks(t)
	srv, cli, req, sep, cep := wakeupPair(t)
	if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, 1, dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 64)}, 2, dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	dattest.ExpectDTO(t, srv.EVD, 1, dat.DTOSuccess)
	dattest.ExpectDTO(t, req, 2, dat.DTOSuccess)
	if !core.HoldsQueueOf((*core.EVD)(srv.EVD), (*core.EP)(sep)) {
		t.Fatal("the receive's take did not keep the EP's receive queue")
	}
	if err := sep.Free(); err != nil {
		t.Fatal(err)
	}
	if core.HoldsQueueOf((*core.EVD)(srv.EVD), (*core.EP)(sep)) {
		t.Fatal("the EVD still holds a queue of the freed EP")
	}
}
