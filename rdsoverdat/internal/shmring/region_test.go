package shmring

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRegionAlloc(t *testing.T) {
	g, err := NewRegion(1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if g.Size() != os.Getpagesize() || g.ID() == 0 {
		t.Fatalf("size %d id %d", g.Size(), g.ID())
	}
	var bufs [][]byte
	for {
		b, err := g.Alloc(100)
		if errors.Is(err, ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		off, ok := g.Offset(b)
		if !ok || off%regionAlign != 0 || len(b) != 100 || cap(b) != 100 {
			t.Fatalf("buffer at %d (%v), len %d cap %d", off, ok, len(b), cap(b))
		}
		bufs = append(bufs, b)
	}
	if len(bufs) != g.Size()/128 {
		t.Fatalf("%d buffers of 100 bytes in %d", len(bufs), g.Size())
	}
	if _, err := g.Alloc(g.Size()); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Alloc of all of a full region: %v", err)
	}
	// Free every other buffer, then the rest: the extents merge back
	// into one, which a whole-region Alloc proves.
	for i := 0; i < len(bufs); i += 2 {
		if err := g.Free(bufs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Free(bufs[0]); !errors.Is(err, ErrInvalid) {
		t.Fatalf("double free: %v", err)
	}
	if err := g.Free(bufs[1][1:]); !errors.Is(err, ErrInvalid) {
		t.Fatalf("free inside a buffer: %v", err)
	}
	if err := g.Free(make([]byte, 10)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("free of heap memory: %v", err)
	}
	for i := 1; i < len(bufs); i += 2 {
		if err := g.Free(bufs[i]); err != nil {
			t.Fatal(err)
		}
	}
	all, err := g.Alloc(g.Size())
	if err != nil {
		t.Fatalf("whole region after freeing all: %v", err)
	}
	if _, ok := g.Offset(make([]byte, 8)); ok {
		t.Fatal("heap memory has an offset in the region")
	}
	if _, ok := g.Offset(all[:0]); ok {
		t.Fatal("an empty buffer has an offset")
	}
	for _, n := range []int{0, -1, g.Size() + 1} {
		if _, err := g.Alloc(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("Alloc(%d): %v", n, err)
		}
	}
	if _, err := NewRegion(0); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewRegion(0): %v", err)
	}
}

// The daemon's table reaches the client's buffers through its own
// mapping, by (id, offset, length), and nothing else.
func TestRegionTable(t *testing.T) {
	g, err := NewRegion(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tab := NewRegionTable(2, 1<<17)
	defer tab.Close()
	if err := tab.Add(g.ID(), g.File()); err != nil {
		t.Fatal(err)
	}
	b, err := g.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, "written by the client")
	off, _ := g.Offset(b)
	d, err := tab.Bytes(g.ID(), uint64(off), uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if string(d[:21]) != "written by the client" {
		t.Fatalf("daemon sees %q", d[:21])
	}
	copy(d, "and by the daemon....")
	if string(b[:21]) != "and by the daemon...." {
		t.Fatalf("client sees %q", b[:21])
	}
	if mem, err := tab.Mem(g.ID()); err != nil || len(mem) != g.Size() {
		t.Fatalf("Mem: %d bytes, %v", len(mem), err)
	}
	size := uint64(g.Size())
	for _, c := range []struct {
		id     uint64
		off, n uint64
	}{
		{g.ID() + 1, 0, 1},
		{g.ID(), size, 1},
		{g.ID(), size - 1, 2},
		{g.ID(), 1, size},
		{g.ID(), 0, 0},
		{g.ID(), 1 << 63, 1 << 63},
		{g.ID(), 8, 1<<64 - 4},
	} {
		if _, err := tab.Bytes(c.id, c.off, c.n); !errors.Is(err, ErrNotShared) {
			t.Errorf("Bytes(%d, %d, %d): %v, want ErrNotShared", c.id, c.off, c.n, err)
		}
	}
	if _, err := tab.Mem(99); !errors.Is(err, ErrNotShared) {
		t.Errorf("Mem of an unknown region: %v", err)
	}
	if err := tab.Add(g.ID(), g.File()); !errors.Is(err, ErrInvalid) {
		t.Errorf("second Add of an id: %v", err)
	}
	if err := tab.Add(0, g.File()); !errors.Is(err, ErrInvalid) {
		t.Errorf("Add of id 0: %v", err)
	}
	big, err := NewRegion(1 << 17)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	if err := tab.Add(big.ID(), big.File()); !errors.Is(err, ErrNoSpace) {
		t.Errorf("Add over the byte limit: %v", err)
	}
	fd, err := unix.MemfdCreate("unsealed", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	unsealed := os.NewFile(uintptr(fd), "unsealed")
	defer unsealed.Close()
	unix.Ftruncate(fd, 4096)
	if err := tab.Add(77, unsealed); !errors.Is(err, ErrBadFiles) {
		t.Errorf("Add of an unsealed memfd: %v", err)
	}
	if err := tab.Remove(g.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.Bytes(g.ID(), uint64(off), 1); !errors.Is(err, ErrNotShared) {
		t.Errorf("Bytes after Remove: %v", err)
	}
	if err := tab.Remove(g.ID()); !errors.Is(err, ErrNotShared) {
		t.Errorf("second Remove: %v", err)
	}
	if err := tab.Add(big.ID(), big.File()); err != nil {
		t.Errorf("Add after Remove made room: %v", err)
	}
	tab.Close()
	if err := tab.Add(g.ID(), g.File()); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close: %v", err)
	}
}

// A held table keeps the mappings that Remove and Close drop until the
// last Release: an op still posted on a client's memory after the
// client went reads and writes it rather than fault.
func TestRegionTableHold(t *testing.T) {
	g, err := NewRegion(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g2, err := NewRegion(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	tab := NewRegionTable(4, 1<<20)
	for _, r := range []*Region{g, g2} {
		if err := tab.Add(r.ID(), r.File()); err != nil {
			t.Fatal(err)
		}
	}
	all := int64(g.Size() + g2.Size())
	if got := tab.Mapped(); got != all {
		t.Fatalf("Mapped %d, want %d", got, all)
	}
	d, err := tab.Bytes(g.ID(), 100, 64)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := tab.Bytes(g2.ID(), 0, 8)
	if err != nil {
		t.Fatal(err)
	}
	tab.Hold()
	tab.Hold()
	if err := tab.Remove(g2.ID()); err != nil {
		t.Fatal(err)
	}
	tab.Close()
	if _, err := tab.Bytes(g.ID(), 100, 64); !errors.Is(err, ErrNotShared) {
		t.Fatalf("Bytes after Close: %v", err)
	}
	if got := tab.Mapped(); got != all {
		t.Fatalf("Mapped %d while held, want %d", got, all)
	}
	// The late accesses of a held op: a fault here would kill the test.
	copy(d, "late write")
	copy(d2, "late")
	b := g.mem[100:110]
	if string(b) != "late write" {
		t.Fatalf("client sees %q", b)
	}
	tab.Release()
	if got := tab.Mapped(); got != all {
		t.Fatalf("Mapped %d with one hold left, want %d", got, all)
	}
	tab.Release()
	if got := tab.Mapped(); got != 0 {
		t.Fatalf("Mapped %d after the last Release", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a Release without Hold did not panic")
		}
	}()
	tab.Release()
}
