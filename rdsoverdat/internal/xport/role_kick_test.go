package xport

import (
	"testing"
	"testing/synctest"
)

// A RecvMsg that was interrupted after it looked at its socket and
// before it took the idle role must not read: the interrupt went to the
// holder before it, so no read of its own would end when its message is
// already queued. Take leaves the role idle (given back if the socket
// closed), tells the socket, and says to look again.
func TestRoleTakeInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, s := newTestRole(), &roleSock{}
		back := lendAsync(r, s, nil)
		s.kicked = true
		if res, ok := r.Take(s); ok || res != RRAgain {
			t.Fatalf("Take by an interrupted socket: %v %v, want RRAgain, not taken", res, ok)
		}
		if s.done != 1 || s.gones != 0 {
			t.Fatalf("ReaderDone %d times (%d gone), want once, not gone", s.done, s.gones)
		}
		if st := r.State(); st != RoleIdle {
			t.Fatalf("role %v after the refused take, want idle", st)
		}
		s.kicked = false
		if _, ok := r.Take(s); !ok {
			t.Fatal("Take after looking again failed")
		}
		r.Leave(s, false, nil)

		s.kicked, s.refuse = true, true // interrupted by its close
		if res, ok := r.Take(s); ok || res != RRAgain {
			t.Fatalf("Take by a closed socket: %v %v, want RRAgain, not taken", res, ok)
		}
		if p := <-back; p.note != nil || p.d != 0 {
			t.Fatalf("owner back after %v with %v, want at once", p.d, p.note)
		}
	})
}
