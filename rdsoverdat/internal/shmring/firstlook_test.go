package shmring

import "testing"

// A wait's first look at the data eventfd makes no system call while
// the consumer's waiting flag is still set (the producer has not
// signalled this sleep): a count left from an earlier sleep stays for
// the next look, which reads it. A look that is not a wait's first
// reads the counter whatever the flag says.
func TestFirstLookSkipsUnsignalled(t *testing.T) {
	r, err := Create(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	e := r.dataEv
	r.sh.consWait.Store(1)
	e.signal() // a stale count: the flag was not taken
	e.fresh = true
	if e.tryRead(uintptr(e.fd)) {
		t.Fatal("the first look read the counter though the flag is set")
	}
	if !e.tryRead(uintptr(e.fd)) {
		t.Fatal("the next look did not read the pending count")
	}
	if e.tryRead(uintptr(e.fd)) {
		t.Fatal("a look read a count of zero")
	}
	r.sh.consWait.Store(0) // taken by a producer that signals
	e.signal()
	e.fresh = true
	if !e.tryRead(uintptr(e.fd)) {
		t.Fatal("the first look missed a signal for this sleep")
	}
}
