package rdsoverdat

import (
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// kickRole is a reader role that counts its interrupts.
type kickRole struct{ interrupts int }

func (k *kickRole) Run(xport.Receiver, []byte, bool, time.Time) (int, netip.AddrPort, xport.RRResult) {
	return 0, netip.AddrPort{}, xport.RRGone
}
func (k *kickRole) Interrupt() { k.interrupts++ }
func (k *kickRole) GiveBack()  {}

// A delivery's wake-up between a RecvMsg's look at the socket and its
// take of the role marks the socket interrupted, which Take sees; the
// next look clears it. Without a role about to run, a wake-up marks
// nothing.
func TestSockInterruptedBeforeTake(t *testing.T) {
	s := newSock(newTestStack(t, Config{}))
	k := &kickRole{}
	ref := &xport.RoleRef{R: k}
	s.Wake()
	if s.Interrupted() || k.interrupts != 0 {
		t.Fatal("a wake-up with no role about to run marked the socket")
	}
	s.mu.Lock()
	s.holdReader(ref)
	s.mu.Unlock()
	if s.Interrupted() {
		t.Fatal("interrupted before any wake-up")
	}
	s.Wake() // a message queued after the look
	if !s.Interrupted() || k.interrupts != 1 {
		t.Fatalf("after the wake-up: interrupted %v, %d interrupts; want true, 1", s.Interrupted(), k.interrupts)
	}
	s.ReaderDone(ref, false)
	s.mu.Lock()
	s.holdReader(ref) // the next look
	s.mu.Unlock()
	if s.Interrupted() {
		t.Fatal("a new look kept the old interrupt")
	}
}
