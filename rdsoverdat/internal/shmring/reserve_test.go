package shmring

import (
	"errors"
	"testing"
)

// TryReserve fills the ring to the byte without waiting, Abort
// publishes nothing of what it reserved, and a read makes room again.
func TestTryReserve(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	n := 0
	for {
		p, ok, err := prod.TryReserve(56) // 64 bytes with the header
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if len(p) != 56 {
			t.Fatalf("reservation of %d bytes, want 56", len(p))
		}
		pattern(p, uint64(n))
		if err := prod.Commit(len(p)); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != MinCapacity/64 {
		t.Fatalf("%d records of 64 bytes in a ring of %d", n, MinCapacity)
	}
	buf := make([]byte, 100)
	if got, ok := cons.TryRead(buf); !ok || got != 56 {
		t.Fatalf("TryRead: %d %v", got, ok)
	}
	checkPattern(t, buf[:56], 0)
	p, ok, err := prod.TryReserve(56)
	if !ok || err != nil {
		t.Fatalf("no room after a read: %v", err)
	}
	p[0] = 0xff
	prod.Abort()
	if err := prod.Commit(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Commit after Abort: %v, want ErrInvalid", err)
	}
	for i := 1; i < n; i++ {
		got, ok := cons.TryRead(buf)
		if !ok || got != 56 {
			t.Fatalf("record %d: %d %v", i, got, ok)
		}
		checkPattern(t, buf[:56], uint64(i))
	}
	if _, ok := cons.TryRead(buf); ok {
		t.Fatal("an aborted reservation was published")
	}
	if _, ok, err := prod.TryReserve(prod.MaxRecord() + 1); ok || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("TryReserve beyond MaxRecord: %v %v", ok, err)
	}
	prod.Close()
	if _, ok, err := prod.TryReserve(8); ok || !errors.Is(err, ErrClosed) {
		t.Fatalf("TryReserve after Close: %v %v", ok, err)
	}
	prod.Abort() // nothing reserved: no effect
}
