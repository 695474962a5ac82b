package shmring

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
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

// FuzzAttach gives Attach an arbitrary ring header (magic, version,
// capacity, positions) in a sealed memfd of arbitrary size: it either
// refuses it or returns a ring whose data area lies inside the file,
// which then carries a record.
func FuzzAttach(f *testing.F) {
	good := make([]byte, 136)
	binary.NativeEndian.PutUint32(good[offMagic:], ringMagic)
	binary.NativeEndian.PutUint32(good[offVersion:], ringVersion)
	binary.NativeEndian.PutUint64(good[offCapacity:], MinCapacity)
	f.Add(uint32(headerSize+MinCapacity), good)
	f.Add(uint32(headerSize), good)
	f.Add(uint32(headerSize+2*MinCapacity), []byte{})
	f.Fuzz(func(t *testing.T, size uint32, header []byte) {
		size = size % (headerSize + 4*MinCapacity + 1)
		if size == 0 {
			size = 1
		}
		mf, mem, err := newMemfd("fuzz", int(size))
		if err != nil {
			t.Fatal(err)
		}
		copy(mem[:min(len(mem), headerSize)], header)
		unix.Munmap(mem)
		evs := make([]*os.File, 2)
		for i := range evs {
			e, err := newEventfd()
			if err != nil {
				t.Fatal(err)
			}
			evs[i] = e.f
		}
		r, err := Attach([]*os.File{mf, evs[0], evs[1]})
		if err != nil {
			if !errors.Is(err, ErrBadFiles) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Attach: %v", err)
			}
			return
		}
		defer r.Close()
		if headerSize+r.Capacity() > int(size) {
			t.Fatalf("capacity %d in a file of %d bytes", r.Capacity(), size)
		}
		if r.wpos-r.rpos > r.cap || r.wpos%8 != 0 || r.rpos%8 != 0 {
			t.Fatalf("attached with positions write %d read %d", r.wpos, r.rpos)
		}
		// Whatever the header's positions left in the ring is read
		// (records or ErrCorrupt, within bounds), after which a record
		// goes through.
		buf := make([]byte, r.MaxRecord())
		for i := 0; ; i++ {
			if i > MinCapacity/2 {
				t.Fatal("more records than the ring can hold")
			}
			if _, ok := r.TryRead(buf); !ok {
				break
			}
		}
		if r.corrupt.Load() || r.peerGone() {
			return // corrupt, or the header said closed
		}
		if !r.TryWrite([]byte("x")) {
			t.Fatal("no room in an emptied ring")
		}
		if n, ok := r.TryRead(buf); !ok || n != 1 {
			t.Fatalf("TryRead: %d %v", n, ok)
		}
	})
}
