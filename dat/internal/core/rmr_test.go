package core_test

import (
	"runtime"
	"testing"
	"weak"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/verbs/verbstest"
)

// A bind's cookie slot points at its RMR for the bind's completion, and
// the later DTOs of the slot leave the pointer (cookieSlot.set, which
// stores no pointer on a post). So once the completion is taken the slot
// must let go of the RMR: else a freed RMR, its memory window and the
// buffer the window was bound to stayed reachable from the EP for its
// whole life, for a slot that no later bind lands on.
func TestRMRFreedIsNotKeptByItsBindSlot(t *testing.T) {
	verbstest.CheckLeaks(t)
	ias := dattest.OpenMem(t, 2)
	srv, cli := dattest.NewSide(t, ias[0], 4096), dattest.NewSide(t, ias[1], 4096)
	_, cep := dattest.Connect(t, srv, cli, nil)

	buf := make([]byte, 1<<16)
	bufRef := weak.Make(&buf[0])
	l, err := lmr.Create(cli.IA, cli.PZ, buf, dat.MemPrivAll, dat.VATypeVA)
	if err != nil {
		t.Fatal(err)
	}
	r, err := lmr.CreateRMR(cli.PZ)
	if err != nil {
		t.Fatal(err)
	}
	rmrRef := weak.Make(r)
	if _, err := r.Bind(l, l.Triplet(0, 4096), dat.MemPrivRemoteWrite, cep, 7, dat.CompletionDefault); err != nil {
		t.Fatal(err)
	}
	if ev := dattest.Expect(t, cli.EVD, dat.RMRBindCompletionEvent); ev.RMRBind.Cookie != 7 || ev.RMRBind.Status != dat.DTOSuccess {
		t.Fatalf("bind completion %+v", ev.RMRBind)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if err := l.Free(); err != nil {
		t.Fatal(err)
	}
	r, l, buf = nil, nil, nil
	for i := 0; i < 4; i++ {
		runtime.GC()
	}
	if rmrRef.Value() != nil {
		t.Error("the freed RMR is still reachable")
	}
	if bufRef.Value() != nil {
		t.Error("the buffer the freed RMR was bound to is still reachable")
	}
	runtime.KeepAlive(cep)
}
