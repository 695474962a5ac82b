package rdsoverdat

import (
	"fmt"
	"os"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
)

// daemonMem holds the shared memory regions one client handed its
// daemon connection (OpRegion: a sealed memfd of a shmring.Region,
// mapped here by a shmring.RegionTable), which RDMA control messages
// and GetMR name by region ID. Regions belong to the connection: no
// other client can name them, and they are unmapped when the connection
// ends.
type daemonMem struct {
	t *shmring.RegionTable
}

// Limits of one client's regions, so that a client cannot exhaust the
// daemon's address space.
const (
	maxRegions     = 64
	maxRegionBytes = 1 << 30
)

func newDaemonMem() *daemonMem {
	return &daemonMem{t: shmring.NewRegionTable(maxRegions, maxRegionBytes)}
}

// add maps the memfd fd as region id, and closes fd.
func (dm *daemonMem) add(id uint64, fd int) error {
	f := os.NewFile(uintptr(fd), "rdsd-region")
	defer f.Close()
	if err := dm.t.Add(id, f); err != nil {
		return fmt.Errorf("%w (%v)", eINVAL, err)
	}
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
	if m.Len == 0 {
		return nil, true, nil // an empty range: the core refuses it (EINVAL)
	}
	b, err = dm.t.Bytes(m.Region, m.Off, m.Len)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", rdsdproto.ErrBody, err)
	}
	return b, true, nil
}

// close drops every region. The socket is closed first, which frees
// its MRs (a transport waits for the ops on a freed MR); a message of
// an op that the transport may still run on the client's memory holds
// the table (RDMAArgs.pin), and the regions stay mapped until it is
// freed.
func (dm *daemonMem) close() { dm.t.Close() }
