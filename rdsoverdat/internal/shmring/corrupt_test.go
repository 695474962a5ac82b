package shmring

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A hostile producer writes the shared memory as it likes; the consumer
// reports ErrCorrupt, for good, and never reads outside its mapping.
func TestCorruptConsumer(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(prod *Ring)
	}{
		{"write position beyond capacity", func(p *Ring) { p.sh.wpos.Store(MinCapacity + 8) }},
		{"write position behind read position", func(p *Ring) { p.sh.wpos.Store(1<<64 - 8) }},
		{"write position not aligned", func(p *Ring) { p.sh.wpos.Store(12) }},
		{"length beyond the ring", func(p *Ring) {
			recHdr(p.data).set(1<<31, kindData)
			p.sh.wpos.Store(64)
		}},
		{"length beyond the committed bytes", func(p *Ring) {
			recHdr(p.data).set(100, kindData)
			p.sh.wpos.Store(64)
		}},
		{"unknown kind", func(p *Ring) {
			recHdr(p.data).set(8, 7)
			p.sh.wpos.Store(16)
		}},
		{"padding at index 0", func(p *Ring) {
			recHdr(p.data).set(MinCapacity-8, kindPad)
			p.sh.wpos.Store(MinCapacity)
		}},
		{"padding beyond the committed bytes", func(p *Ring) {
			p.TryWrite(make([]byte, 8))
			recHdr(p.data[16:]).set(0, kindPad)
			p.sh.wpos.Store(24)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			prod, cons := pair(t, MinCapacity)
			c.write(prod)
			buf := make([]byte, MinCapacity)
			ctx := context.Background()
			for {
				_, err := cons.Read(ctx, buf)
				if err == nil {
					continue // records before the damage
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("Read: %v, want ErrCorrupt", err)
				}
				break
			}
			if _, err := cons.Peek(ctx); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Peek after corruption: %v", err)
			}
			if _, ok := cons.TryRead(buf); ok {
				t.Fatal("TryRead after corruption succeeded")
			}
		})
	}
}

// A hostile consumer claims to have read what was never written.
func TestCorruptProducer(t *testing.T) {
	prod, cons := pair(t, MinCapacity)
	fill(prod)
	cons.sh.rpos.Store(1 << 40)
	if err := prod.Write(context.Background(), make([]byte, 100)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Write: %v, want ErrCorrupt", err)
	}
	cons.sh.rpos.Store(0)
	if prod.TryWrite(nil) {
		t.Fatal("TryWrite after corruption succeeded")
	}
}

// Attach takes nothing on trust: the memfd must be sealed, its header
// sane, the wake-up files eventfds.
func TestAttachRefuses(t *testing.T) {
	good := func() []*os.File {
		r, err := Create(MinCapacity)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		var files []*os.File
		for _, f := range r.Files() {
			d, err := dupFile(f)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, d)
		}
		return files
	}
	unsealed := func(size int) *os.File {
		fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Ftruncate(fd, int64(size)); err != nil {
			t.Fatal(err)
		}
		return os.NewFile(uintptr(fd), "unsealed")
	}
	// header returns a sealed memfd of size bytes whose header says
	// magic, version and capacity.
	header := func(size int, magic, version uint32, capacity uint64) *os.File {
		f, mem, err := newMemfd("test", size)
		if err != nil {
			t.Fatal(err)
		}
		binary.NativeEndian.PutUint32(mem[offMagic:], magic)
		binary.NativeEndian.PutUint32(mem[offVersion:], version)
		binary.NativeEndian.PutUint64(mem[offCapacity:], capacity)
		unix.Munmap(mem)
		return f
	}
	pipe := func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		return r
	}
	tmp := func() *os.File {
		f, err := os.CreateTemp(t.TempDir(), "ring")
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(headerSize + MinCapacity)
		return f
	}
	size := headerSize + MinCapacity
	for _, c := range []struct {
		name  string
		files func() []*os.File
		want  error
	}{
		{"two files", func() []*os.File { return good()[:2] }, ErrBadFiles},
		{"unsealed memfd", func() []*os.File { f := good(); f[0] = unsealed(size); return f }, ErrBadFiles},
		{"regular file", func() []*os.File { f := good(); f[0] = tmp(); return f }, ErrBadFiles},
		{"pipe for an eventfd", func() []*os.File { f := good(); f[2] = pipe(); return f }, ErrBadFiles},
		{"memfd for an eventfd", func() []*os.File { f := good(); f[1] = header(size, ringMagic, ringVersion, MinCapacity); return f }, ErrBadFiles},
		{"bad magic", func() []*os.File { f := good(); f[0] = header(size, 1, ringVersion, MinCapacity); return f }, ErrBadFiles},
		{"bad version", func() []*os.File { f := good(); f[0] = header(size, ringMagic, 9, MinCapacity); return f }, ErrBadFiles},
		{"capacity beyond the file", func() []*os.File {
			f := good()
			f[0] = header(size, ringMagic, ringVersion, 2*MinCapacity)
			return f
		}, ErrBadFiles},
		{"capacity not a power of two", func() []*os.File {
			f := good()
			f[0] = header(2*size, ringMagic, ringVersion, MinCapacity+8)
			return f
		}, ErrBadFiles},
		{"file too small", func() []*os.File {
			f := good()
			f[0] = header(headerSize, ringMagic, ringVersion, MinCapacity)
			return f
		}, ErrBadFiles},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := c.files()
			r, err := Attach(files)
			if !errors.Is(err, c.want) {
				if r != nil {
					r.Close()
				}
				t.Fatalf("Attach: %v, want %v", err, c.want)
			}
			for _, f := range files {
				if err := f.Close(); !errors.Is(err, os.ErrClosed) {
					t.Errorf("Attach left %s open", f.Name())
				}
			}
		})
	}
}

// Positions that a peer left inconsistent before the attach are caught
// at once.
func TestAttachCorruptPositions(t *testing.T) {
	r, err := Create(MinCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.sh.wpos.Store(3 * MinCapacity)
	var files []*os.File
	for _, f := range r.Files() {
		d, err := dupFile(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, d)
	}
	if _, err := Attach(files); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Attach: %v, want ErrCorrupt", err)
	}
}

// A sealed hugetlbfs memfd is refused: touching one of its pages with
// the huge page pool empty would raise SIGBUS.
func TestRefuseHugetlb(t *testing.T) {
	fd, err := unix.MemfdCreate("huge", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_HUGETLB)
	if err != nil {
		t.Skipf("no hugetlbfs memfd here: %v", err)
	}
	f := os.NewFile(uintptr(fd), "huge")
	defer f.Close()
	if err := unix.Ftruncate(fd, 2<<20); err != nil {
		t.Skipf("hugetlbfs memfd of 2 MiB: %v", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, sealsSet); err != nil {
		t.Skipf("sealing a hugetlbfs memfd: %v", err)
	}
	if _, err := sealedSize(f); !errors.Is(err, ErrBadFiles) {
		t.Fatalf("sealedSize: %v, want ErrBadFiles", err)
	}
	if err := NewRegionTable(1, 1<<30).Add(1, f); !errors.Is(err, ErrBadFiles) {
		t.Fatalf("RegionTable.Add: %v, want ErrBadFiles", err)
	}
}
