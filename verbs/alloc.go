package verbs

import (
	"fmt"
	"os"

	"github.com/godapl/godapl/internal/memhook"
	"golang.org/x/sys/unix"
)

// Mem is page-aligned memory outside the Go heap, mapped with mmap. It never
// moves and is never scanned by the garbage collector, which is what
// hardware providers need and what keeps large registrations cheap for the
// software ones.
type Mem struct {
	b    []byte
	size int // requested size
}

// AllocMem maps size bytes (rounded up to whole pages) of zeroed,
// page-aligned memory.
func AllocMem(size int) (*Mem, error) {
	if size <= 0 {
		return nil, fmt.Errorf("verbs: alloc %d bytes: %w", size, ErrInvalidArgument)
	}
	page := os.Getpagesize()
	n := (size + page - 1) &^ (page - 1)
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("verbs: mmap %d bytes: %w", n, err)
	}
	return &Mem{b: b, size: size}, nil
}

// Bytes returns the memory, exactly as long as requested.
func (m *Mem) Bytes() []byte { return m.b[:m.size:m.size] }

// Free unmaps the memory. It does not refuse while MRs are registered
// on it (a Mem does not know the MRs over it): deregister every MR on
// it first. One left behind on a software provider reaches unmapped
// pages (an access faults) or whatever is mapped there next; on a
// hardware device it keeps the old pages pinned, so the device goes on
// reading and writing those instead of the memory now at that address.
// Before unmapping, Free tells the module's registration caches, which
// drop what they registered on the range.
func (m *Mem) Free() error {
	if m.b == nil {
		return ErrClosed
	}
	memhook.Unmapping(m.b)
	err := unix.Munmap(m.b)
	m.b = nil
	return err
}
