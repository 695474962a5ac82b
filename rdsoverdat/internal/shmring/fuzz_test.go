package shmring

import (
	"context"
	"errors"
	"testing"
)

// FuzzHostilePeer writes arbitrary bytes over a ring's shared header
// positions and data area, as a hostile peer could at any time, and
// drives both ends: no call may panic, read outside the mapping, hand
// out a record that is not inside the data area, or loop; an error is
// ErrCorrupt (or what the calls document).
func FuzzHostilePeer(f *testing.F) {
	f.Add(uint64(0), uint64(0), []byte{})
	f.Add(uint64(16), uint64(0), []byte{8, 0, 0, 0, 1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint64(MinCapacity), uint64(0), []byte{0xf8, 0x0f, 0, 0, 2, 0, 0, 0})
	f.Add(uint64(1<<64-8), uint64(8), []byte{0, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, wpos, rpos uint64, data []byte) {
		prod, cons := pair(t, MinCapacity)
		// The producer's end stands for the hostile peer: its mapping
		// is written directly.
		copy(prod.data, data)
		prod.sh.rpos.Store(rpos)
		prod.sh.wpos.Store(wpos)
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // never wait: an empty ring ends the walk
		buf := make([]byte, MinCapacity)
		// Each record takes at least 8 bytes of at most a capacity's
		// worth committed.
		for i := 0; ; i++ {
			if i > MinCapacity/8+1 {
				t.Fatal("more records than the ring can hold")
			}
			rec, err := cons.Peek(ctx)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, context.Canceled) {
					t.Fatalf("Peek: %v", err)
				}
				break
			}
			if len(rec) > cons.MaxRecord() || !inside(cons.data, rec) {
				t.Fatalf("record of %d bytes outside the data area", len(rec))
			}
			n, err := cons.Read(ctx, buf)
			if err != nil || n != len(rec) {
				t.Fatalf("Read after Peek: %d %v", n, err)
			}
		}
		// The producer trusts the read position no more.
		cons.sh.rpos.Store(rpos)
		for range 4 {
			if err := prod.Write(ctx, data); err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("Write: %v", err)
				}
				break
			}
		}
	})
}

// inside reports whether b lies within mem.
func inside(mem, b []byte) bool {
	if len(b) == 0 {
		return true
	}
	_, ok := offsetIn(mem, b)
	return ok
}
