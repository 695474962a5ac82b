package shmring

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Wake-ups. A side about to sleep sets its waiting flag in the header,
// looks at the ring again, and only then blocks reading its eventfd; the
// other side, after publishing a position, reads the flag and writes the
// eventfd only when it is set, clearing it with a compare-and-swap so
// that one sleep costs one write. The flag store and the position load
// on one side, the position store and the flag load on the other, are
// sequentially consistent atomics, so one of the two sees the other's
// store: a sleeper is never missed, and a busy stream, whose consumer
// finds records without sleeping, makes no system call per record.
//
// The blocked read goes through Go's netpoller (the eventfd is
// non-blocking), so no thread is parked in a system call. Close and
// Shutdown interrupt it with a read deadline in the past, which a peer
// cannot undo; a context's end interrupts it with a write to the
// eventfd, which a hostile peer could steal by reading it, delaying only
// its own client's call until Close or Shutdown.

// evfd is an eventfd, either made here or received from the peer.
type evfd struct {
	f    *os.File
	fd   int // f's descriptor, for writes that must not go through f's locks
	rc   syscall.RawConn
	buf  [8]byte
	read func(fd uintptr) bool // rc.Read's callback, made once
	// kick signals the eventfd for a context's end; it holds a reference
	// on the ring, as it may run after the waiting call returned.
	kick func()
	// unsignalled, if set, reports that the peer has not signalled the
	// sleep the caller announced (its waiting flag is still set): the
	// first look of a wait then needs no system call, since a signal
	// for this sleep, written later, wakes the netpoller anyway. A
	// hostile peer that sets the flag itself only delays the wake-ups of
	// its own ring, as one that never signals does.
	unsignalled func() bool
	fresh       bool // the next tryRead is a wait's first look
}

// one is the value a signal adds to an eventfd's counter.
var one = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return
}()

func newEventfd() (*evfd, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("shmring: eventfd: %w", err)
	}
	return wrapEventfd(fd)
}

// attachEventfd checks that f is an eventfd and takes a duplicate of it,
// made non-blocking.
func attachEventfd(f *os.File) (*evfd, error) {
	var fd int
	var err error
	ctlErr := control(f, func(raw int) {
		var target string
		target, err = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", raw))
		if err != nil {
			return
		}
		if !strings.HasPrefix(target, "anon_inode:[eventfd]") {
			err = fmt.Errorf("%w: %s is %s, not an eventfd", ErrBadFiles, f.Name(), target)
			return
		}
		fd, err = unix.FcntlInt(uintptr(raw), unix.F_DUPFD_CLOEXEC, 0)
	})
	if ctlErr != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFiles, f.Name(), ctlErr)
	}
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shmring: eventfd nonblocking: %w", err)
	}
	return wrapEventfd(fd)
}

func wrapEventfd(fd int) (*evfd, error) {
	e := &evfd{f: os.NewFile(uintptr(fd), "eventfd"), fd: fd}
	rc, err := e.f.SyscallConn()
	if err != nil {
		e.f.Close()
		return nil, fmt.Errorf("shmring: eventfd: %w", err)
	}
	e.rc = rc
	e.read = e.tryRead
	return e, nil
}

// signal adds one to the counter. A full counter (only a hostile peer
// fills it) already wakes the reader, so errors are of no consequence.
func (e *evfd) signal() {
	unix.Write(e.fd, one[:])
}

// interrupt ends a blocked wait for good.
func (e *evfd) interrupt() {
	e.f.SetReadDeadline(time.Unix(1, 0))
}

// tryRead drains the counter if it is non-zero. It polls first: the
// peer shares the file's status flags and could have made it blocking,
// and a read of a zero counter would then hold a thread.
func (e *evfd) tryRead(fd uintptr) bool {
	if e.fresh {
		e.fresh = false
		if e.unsignalled() {
			return false
		}
	}
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err == nil && n == 0 {
			// Not readable: the netpoller waits for the next write.
			return false
		}
		// A peer reading the counter in between makes this fail with
		// EAGAIN: a spurious wake-up, which the caller tolerates.
		unix.Read(int(fd), e.buf[:])
		return true
	}
}

// wait blocks until the eventfd is signalled, ctx ends, or the wait is
// interrupted, and the caller looks at the ring again. It returns ctx's
// error only if ctx had ended before (the caller's next wait reports an
// end during this one) and an error if the eventfd cannot be read.
func (e *evfd) wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, e.kick)
		defer stop()
	}
	e.fresh = e.unsignalled != nil
	err := e.rc.Read(e.read)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("shmring: eventfd wait: %w", err)
	}
	return nil
}

// control runs fn on f's descriptor without changing its blocking mode.
func control(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}

// dupFile duplicates f, for a Ring or Region to own what Attach got.
func dupFile(f *os.File) (*os.File, error) {
	var nfd int
	var err error
	if cerr := control(f, func(fd int) {
		nfd, err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	}); cerr != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadFiles, f.Name(), cerr)
	}
	if err != nil {
		return nil, fmt.Errorf("shmring: dup %s: %w", f.Name(), err)
	}
	return os.NewFile(uintptr(nfd), f.Name()), nil
}

// closeAll unmaps mem and closes files, for error paths and the end.
func closeAll(mem []byte, files ...*os.File) {
	if mem != nil {
		unix.Munmap(mem)
	}
	for _, f := range files {
		f.Close()
	}
}
