package testutil

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Loopback addresses for tests that bind real sockets. All of 127.0.0.0/8
// reaches lo on Linux, so each node of a test can have an address of its
// own; but the transports listen on fixed ports of each address (RDS/TCP's
// 16385, the dat transport's), and test processes run side by side: go
// test ./... runs packages at once, and other checkouts on the machine
// run theirs. Addresses drawn at random collided now and then (bind:
// address in use). So a process claims whole /16 blocks of
// 127.100.0.0-127.199.255.255 by an flock(2) on a file named after the
// block in the temporary directory, and hands their addresses out in turn.
// The lock is held until the process exits; the kernel drops it then,
// after a crash too, and the next process may take the block.
const (
	firstBlock = 100 // 127.100.0.0/16
	blocks     = 100
	blockAddrs = 1 << 16
)

var loopback struct {
	mu    sync.Mutex
	block int        // second byte of the block being handed out; 0 before the first
	next  int        // the index of the next address in it
	locks []*os.File // the claimed blocks' lock files, open (and so locked) for good
}

// LoopbackAddr returns an address of 127.0.0.0/8 that this process has
// not handed out before and no other process calling it holds. It panics
// when no block can be claimed: a test that binds there could collide.
func LoopbackAddr() netip.Addr {
	l := &loopback
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.block == 0 || l.next == blockAddrs {
		l.block, l.next = claimBlock(), 1 // 127.b.0.0 is left out
	}
	n := l.next
	l.next++
	return netip.AddrFrom4([4]byte{127, byte(l.block), byte(n >> 8), byte(n)})
}

// blockStart gives the place where claimBlock starts (a test's child
// process starts where its parent did).
var blockStart = os.Getpid

// claimBlock locks the file of a free block, trying them in turn from a
// place that depends on the process ID (so that processes started
// together mostly find theirs at the first try), and keeps it open. The
// caller holds loopback.mu.
func claimBlock() int {
	start := blockStart()
	for i := range blocks {
		b := firstBlock + (start+i)%blocks
		f, err := os.OpenFile(lockPath(fmt.Sprintf("loopback-127.%d", b)), os.O_RDONLY|os.O_CREATE, 0o644)
		if err != nil {
			panic(fmt.Sprintf("testutil: loopback block: %v", err))
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			loopback.locks = append(loopback.locks, f)
			return b
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			panic(fmt.Sprintf("testutil: loopback block 127.%d: flock: %v", b, err))
		}
	}
	panic(fmt.Sprintf("testutil: all %d loopback blocks are held by other processes", blocks))
}

// Exclusive makes the test the only one among the machine's processes
// that holds name until it ends, waiting for it meanwhile: for a test
// that must use fixed addresses and ports (a tool's defaults, say).
func Exclusive(tb testing.TB, name string) {
	tb.Helper()
	f, err := os.OpenFile(lockPath(name), os.O_RDONLY|os.O_CREATE, 0o644)
	if err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		tb.Fatalf("flock %s: %v", f.Name(), err)
	}
	tb.Cleanup(func() { f.Close() })
}

// lockPath is the path of the lock file of name, shared by every
// checkout and user on the machine: it is opened read-only (flock needs
// no more), so that the file of one user is the lock of all.
func lockPath(name string) string {
	return filepath.Join(os.TempDir(), "godapl-test-"+name+".lock")
}
