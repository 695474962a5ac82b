//go:build rdmacore

package rdmacore

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pollFD waits for a file of libibverbs or librdmacm (a completion
// channel, the async event file, an event channel) through Go's network
// poller. It holds a duplicate of the descriptor, so that closing it stops
// the waiters without closing the library's own descriptor, which the
// library closes when it destroys its object.
type pollFD struct {
	f  *os.File
	rc syscall.RawConn
}

// newPollFD makes fd non-blocking (the library then returns EAGAIN instead
// of blocking when nothing is pending) and registers a duplicate of it
// with the poller.
func newPollFD(fd int, name string) (*pollFD, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("rdmacore: %s: %w", name, err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: %s: dup: %w", name, err)
	}
	f := os.NewFile(uintptr(dup), name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("rdmacore: %s: %w", name, err)
	}
	return &pollFD{f: f, rc: rc}, nil
}

// wait calls try until it reports that it took something, parking in the
// poller between calls. It returns an error once the pollFD is closed.
func (p *pollFD) wait(try func() bool) error {
	return p.rc.Read(func(uintptr) bool { return try() })
}

// read is wait with a callback made once: a closure made per call
// would allocate.
func (p *pollFD) read(try func(uintptr) bool) error { return p.rc.Read(try) }

// close stops the waiters; it returns once none is inside wait or read.
func (p *pollFD) close() { p.f.Close() }
