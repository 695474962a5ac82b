package tcp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tcp transport's per-message system calls (readv, writev, the
// SIOCOUTQ ioctl) go through RawSyscall, past the Go scheduler's
// syscall hooks. Through Syscall a goroutine gives its P up for the
// call's duration (entersyscall); when the call takes longer than one
// sysmon tick (20 µs) while the other P is busy, sysmon hands the P to
// another thread (retake, handoffp), and the goroutine must find a P
// again when the call returns (exitsyscall), waking threads both times.
// That happens on large reads and writes wherever copies are slow (under
// emulation, say), and every hand-off wakes a thread; through
// RawSyscall the goroutine keeps its P and the hand-offs go
// (docs/ARCHITECTURE.md, fast paths). The sockets are non-blocking, so
// each call returns at once with data, room or EAGAIN, and the netpoller
// still does all the waiting (RawConn.Read and Write); the price is that
// the P stays with the goroutine for one copy of at most a batch.

// iovecs fills iov from the non-empty slices of bufs and returns how
// many it used (at most len(iov)).
func iovecs(iov []unix.Iovec, bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		if len(b) == 0 {
			continue
		}
		if n == len(iov) {
			break
		}
		iov[n].Base = &b[0]
		iov[n].SetLen(len(b))
		n++
	}
	return n
}

// dropBases lets go of the buffers iov points to. A batch has a few,
// for which a loop is cheaper than clear's bulk write barrier.
func dropBases(iov []unix.Iovec) {
	for i := 0; i < len(iov); i++ {
		iov[i].Base = nil
	}
}

// rawWritev is writev(2) on fd from iov[:n].
func rawWritev(fd uintptr, iov []unix.Iovec, n int) (int, unix.Errno) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	return int(r), e
}

// rawOutq returns the socket's unacknowledged byte count (SIOCOUTQ).
func rawOutq(fd uintptr) (int, unix.Errno) {
	var v int32
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCOUTQ, uintptr(unsafe.Pointer(&v)))
	return int(v), e
}
