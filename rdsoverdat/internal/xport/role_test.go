package xport

import (
	"errors"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"
)

// roleSock is a Receiver that records what the role tells it.
type roleSock struct {
	refuse      bool // LendReader fails: the socket is closed
	kicked      bool // Interrupted
	lent        *RoleRef
	done, gones int
}

func (s *roleSock) Waiting() bool     { return true }
func (s *roleSock) Closed() bool      { return s.refuse }
func (s *roleSock) QueueEmpty() bool  { return true }
func (s *roleSock) Interrupted() bool { return s.kicked }

func (s *roleSock) LendReader(r *RoleRef) bool {
	if s.refuse {
		return false
	}
	s.lent = r
	return true
}

func (s *roleSock) ReaderDone(r *RoleRef, gone bool) {
	s.done++
	if gone {
		s.gones++
	}
}

// roleRunner is the transport side a Role is initialized with; the state
// machine never calls it.
type roleRunner struct{}

func (roleRunner) Run(Receiver, []byte, bool, time.Time) (int, netip.AddrPort, RRResult) {
	return 0, netip.AddrPort{}, RRGone
}
func (roleRunner) Interrupt() {}
func (roleRunner) GiveBack()  {}

const testGrace = 10 * time.Millisecond

func newTestRole() *Role {
	r := new(Role)
	r.Init(roleRunner{}, testGrace)
	return r
}

// lendAsync lends r to s from an owner goroutine; the channel gets Park's
// note and how long the owner was parked.
type parked struct {
	note error
	d    time.Duration
}

func lendAsync(r *Role, s Receiver, stop <-chan struct{}) <-chan parked {
	ch := make(chan parked, 1)
	go func() {
		start := time.Now()
		note := r.Lend(s, stop)
		ch <- parked{note, time.Since(start)}
	}()
	synctest.Wait()
	return ch
}

// A lent role nobody takes goes back to its owner after one grace
// period; one that was taken and left idle gets a second period.
func TestRoleCheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, s := newTestRole(), &roleSock{}
		back := lendAsync(r, s, nil)
		if st := r.State(); st != RoleIdle || s.lent != r.Ref() {
			t.Fatalf("after Lend: state %v, lent %p; want idle, lent %p", st, s.lent, r.Ref())
		}
		p := <-back
		if p.note != nil || p.d != testGrace {
			t.Fatalf("untaken role: back after %v with %v, want %v and no note", p.d, p.note, testGrace)
		}
		if st := r.State(); st != RoleOwner {
			t.Fatalf("state %v after the check, want the owner's", st)
		}

		back = lendAsync(r, s, nil)
		time.Sleep(testGrace / 2)
		if res, ok := r.Take(s); !ok {
			t.Fatalf("Take of an idle role: %v", res)
		}
		if st := r.State(); st != RoleRecv {
			t.Fatalf("state %v while taken, want recv", st)
		}
		r.Leave(s, false, nil)
		if p = <-back; p.note != nil || p.d != 2*testGrace {
			t.Fatalf("role taken once: back after %v with %v, want %v", p.d, p.note, 2*testGrace)
		}
		if lends, resumes := r.Counts(); lends != 2 || resumes != 2 {
			t.Fatalf("counts: %d lends, %d resumes, want 2 and 2", lends, resumes)
		}
		if s.done != 1 || s.gones != 0 {
			t.Fatalf("ReaderDone %d times (%d gone), want once, not gone", s.done, s.gones)
		}
	})
}

// A check that fires while a RecvMsg holds the role disarms itself and
// leaves the role alone; the Leave that makes the role idle afterwards
// arms it again, so the owner gets the role back a grace period later
// instead of never.
func TestRoleCheckWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, s := newTestRole(), &roleSock{}
		back := lendAsync(r, s, nil)
		if res, ok := r.Take(s); !ok {
			t.Fatalf("Take of an idle role: %v", res)
		}
		time.Sleep(testGrace * 3 / 2) // the check fires meanwhile
		synctest.Wait()
		if st := r.State(); st != RoleRecv {
			t.Fatalf("state %v after a check on a held role, want recv", st)
		}
		r.Leave(s, false, nil)
		if p := <-back; p.note != nil || p.d != testGrace*5/2 {
			t.Fatalf("role left after its check: back after %v with %v, want %v", p.d, p.note, testGrace*5/2)
		}
		if st := r.State(); st != RoleOwner {
			t.Fatalf("state %v after the second check, want the owner's", st)
		}
	})
}

// Take fails on a role another RecvMsg holds (busy) and on one its owner
// holds (gone); Leave with back and Decline hand the role to the owner
// with their note at once.
func TestRoleTakeLeaveDecline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, s := newTestRole(), &roleSock{}
		if res, ok := r.Take(s); ok || res != RRGone || s.gones != 1 {
			t.Fatalf("Take of the owner's role: %v %v, %d gone; want RRGone, told gone", res, ok, s.gones)
		}
		errConn := errors.New("connection failed")
		back := lendAsync(r, s, nil)
		if _, ok := r.Take(s); !ok {
			t.Fatal("Take of the lent role failed")
		}
		if res, ok := r.Take(s); ok || res != RRBusy || s.gones != 1 {
			t.Fatalf("Take of a held role: %v %v; want RRBusy, not told gone", res, ok)
		}
		if res := r.Decline(s, errConn); res != RRBusy {
			t.Fatalf("Decline of a held role: %v, want RRBusy", res)
		}
		r.Leave(s, true, errConn)
		if p := <-back; p.note != errConn || p.d != 0 {
			t.Fatalf("Leave(back): owner back after %v with %v, want at once with %v", p.d, p.note, errConn)
		}

		errRefused := errors.New("refused")
		back = lendAsync(r, s, nil)
		gones := s.gones
		if res := r.Decline(s, errRefused); res != RRGone || s.gones != gones+1 {
			t.Fatalf("Decline of an idle role: %v; want RRGone, told gone", res)
		}
		if p := <-back; p.note != errRefused || p.d != 0 {
			t.Fatalf("Decline: owner back after %v with %v, want at once with %v", p.d, p.note, errRefused)
		}
		if res := r.Decline(s, errRefused); res != RRGone {
			t.Fatalf("Decline of the owner's role: %v, want RRGone", res)
		}
		// That note went nowhere: the role was not idle.
		back = lendAsync(r, s, nil)
		r.GiveBack()
		if p := <-back; p.note != nil || p.d != 0 {
			t.Fatalf("GiveBack: owner back after %v with %v, want at once, no note", p.d, p.note)
		}
	})
}

// The owner takes an idle role back as soon as its stop channel closes,
// and a socket that cannot take the role (closed) gives it back at once;
// after End nobody takes it.
func TestRoleStopAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, s := newTestRole(), &roleSock{}
		stop := make(chan struct{})
		back := lendAsync(r, s, stop)
		close(stop)
		if p := <-back; p.d != 0 {
			t.Fatalf("stop: owner back after %v, want at once", p.d)
		}
		back = lendAsync(r, &roleSock{refuse: true}, nil)
		if p := <-back; p.d != 0 {
			t.Fatalf("closed socket: owner back after %v, want at once", p.d)
		}
		r.End()
		if res, ok := r.Take(s); ok || res != RRGone {
			t.Fatalf("Take after End: %v %v, want RRGone", res, ok)
		}
		if st := r.State(); st != RoleDead {
			t.Fatalf("state %v after End, want dead", st)
		}
	})
}
