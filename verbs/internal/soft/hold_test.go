package soft

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// waitInvalid spins until r's validity has been cleared: the invalidation
// under test has reached its wait for accesses in progress.
func waitInvalid(t *testing.T, r *region, done <-chan error) {
	t.Helper()
	for r.valid.Load() {
		select {
		case err := <-done:
			t.Fatalf("the invalidation returned (%v) while an access was held", err)
		default:
		}
	}
}

// expectBlocked checks that the invalidation reporting on done has not
// returned. Once valid is false the invalidation is past its only early
// return, so this is exact, not a matter of timing.
func expectBlocked(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s returned (%v) while an access was held", what, err)
	default:
	}
}

// newTestMR opens a device of the default limits with a PD and a 4 KiB
// MR of the given access.
func newTestMR(t *testing.T, access verbs.Access) (*Device, *PD, *MR) {
	t.Helper()
	d := NewDevice(Limits())
	vpd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	pd := vpd.(*PD)
	vmr, err := pd.RegMR(make([]byte, 4096), access)
	if err != nil {
		t.Fatal(err)
	}
	return d, pd, vmr.(*MR)
}

// TestDeregWaitsForHold: Dereg (and MR Invalidate) return only after the
// access in progress is released, and no access starts after them.
func TestDeregWaitsForHold(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(mr *MR) error
	}{
		{"Dereg", (*MR).Dereg},
		{"Invalidate", (*MR).Invalidate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, pd, mr := newTestMR(t, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
			b, h, f := d.ResolveRemote(mr.RKey(), pd, mr.Addr(), 16, verbs.AccessRemoteWrite)
			if f != FaultNone || len(b) != 16 {
				t.Fatalf("ResolveRemote: %v, %d bytes", f, len(b))
			}
			done := make(chan error, 1)
			go func() { done <- tc.call(mr) }()
			waitInvalid(t, &mr.region, done)
			expectBlocked(t, done, tc.name)
			h.Release()
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if mr.region.users.Load() != 0 {
				t.Fatalf("users = %d after release", mr.region.users.Load())
			}
			if _, _, f := d.ResolveRemote(mr.RKey(), pd, mr.Addr(), 16, verbs.AccessRemoteWrite); f != FaultSTag {
				t.Fatalf("access after %s: fault %v, want %v", tc.name, f, FaultSTag)
			}
		})
	}
}

// TestPlacerHoldsUntilRelease: a Placer holds its current element from
// Next until Release, and Reset releases too.
func TestPlacerHoldsUntilRelease(t *testing.T) {
	d, pd, mr := newTestMR(t, verbs.AccessLocalWrite)
	qp := &QP{dev: d, pd: pd}
	w := &RecvWQE{NumSGE: 1, Len: 64}
	w.SGL[0] = verbs.SGEOf(mr, 0, 64)
	var p Placer
	p.Reset(qp, w)
	if _, f := p.Next(8); f != FaultNone {
		t.Fatal(f)
	}
	if n := mr.region.users.Load(); n != 1 {
		t.Fatalf("users = %d while placing, want 1", n)
	}
	p.Advance(8)
	p.Release()
	if n := mr.region.users.Load(); n != 0 {
		t.Fatalf("users = %d after Release, want 0", n)
	}
	if _, f := p.Next(8); f != FaultNone {
		t.Fatal(f)
	}
	p.Reset(qp, w)
	if n := mr.region.users.Load(); n != 0 {
		t.Fatalf("users = %d after Reset, want 0", n)
	}
}

// TestMWUnbindWaitsForHold: invalidating a window waits for an access
// through it.
func TestMWUnbindWaitsForHold(t *testing.T) {
	d, pd, mr := newTestMR(t, verbs.AccessLocalWrite|verbs.AccessMWBind)
	vmw, err := pd.AllocMW()
	if err != nil {
		t.Fatal(err)
	}
	mw := vmw.(*MW)
	if st := mw.bind(pd, &verbs.MWBind{MW: mw, MR: mr, Addr: mr.Addr(), Length: 64, Access: verbs.AccessRemoteRead}); st != verbs.WCSuccess {
		t.Fatalf("bind: %v", st)
	}
	_, h, f := d.ResolveRemote(mw.RKey(), pd, mr.Addr(), 64, verbs.AccessRemoteRead)
	if f != FaultNone {
		t.Fatal(f)
	}
	done := make(chan error, 1)
	go func() { mw.invalidate(); done <- nil }()
	waitInvalid(t, &mw.region, done)
	expectBlocked(t, done, "MW invalidate")
	h.Release()
	<-done
	if err := mw.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
}
