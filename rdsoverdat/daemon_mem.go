package rdsoverdat

import (
	"fmt"
	"sync"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"golang.org/x/sys/unix"
)

// daemonMem holds the shared memory regions one client handed its
// daemon connection (OpRegion: a memfd, mapped here MAP_SHARED), which
// RDMA control messages and GetMR name by region ID. Regions belong to
// the connection: no other client can name them, and they are unmapped
// when the connection ends.
type daemonMem struct {
	mu      sync.Mutex
	regions map[uint64][]byte
}

// maxRegion bounds one region (and so what a client makes the daemon map).
const maxRegion = 1 << 30

func newDaemonMem() *daemonMem { return &daemonMem{regions: map[uint64][]byte{}} }

// add maps the memfd fd of size bytes as region id, and closes fd.
func (dm *daemonMem) add(id uint64, fd int, size uint64) error {
	defer unix.Close(fd)
	if id == 0 || size == 0 || size > maxRegion {
		return eINVAL
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || uint64(st.Size) < size || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return eINVAL
	}
	b, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	dm.mu.Lock()
	defer dm.mu.Unlock()
	if dm.regions == nil || dm.regions[id] != nil {
		unix.Munmap(b)
		return eINVAL
	}
	dm.regions[id] = b
	return nil
}

// standIn is what memory outside any region becomes in the daemon: the
// core sees its length only where it refuses the call before touching
// memory (the caller checks). It is never written: a transport that
// could write it refuses such memory instead.
var standIn = make([]byte, rdsdproto.MaxMessage)

// at returns the memory m names; shared is false for memory outside the
// client's regions (a stand-in of its length). An unknown region or a
// range outside one is a protocol error.
func (dm *daemonMem) at(m rdsdproto.Mem) (b []byte, shared bool, err error) {
	if m.Region == 0 {
		return standIn[:m.Len:m.Len], false, nil
	}
	dm.mu.Lock()
	defer dm.mu.Unlock()
	r := dm.regions[m.Region]
	if r == nil || m.Off > uint64(len(r)) || m.Len > uint64(len(r))-m.Off {
		return nil, false, fmt.Errorf("%w: memory outside the client's region %d", rdsdproto.ErrBody, m.Region)
	}
	return r[m.Off : m.Off+m.Len : m.Off+m.Len], true, nil
}

// close unmaps every region. The core holds no reference by then: the
// socket, and with it every mapping and op, is closed first.
func (dm *daemonMem) close() {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	for _, b := range dm.regions {
		unix.Munmap(b)
	}
	dm.regions = nil
}
