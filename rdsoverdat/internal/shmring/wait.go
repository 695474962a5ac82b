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

	"github.com/godapl/godapl/internal/memhook"
	"golang.org/x/sys/unix"
)

// Wake-ups. A side about to sleep sets its waiting flag in the header,
// looks at the ring again, and only then sleeps on its eventfd; the
// other side, after publishing a position, reads the flag and writes the
// eventfd only when it is set, clearing it with a compare-and-swap so
// that one sleep costs one write. The flag store and the position load
// on one side, the position store and the flag load on the other, are
// sequentially consistent atomics, so one of the two sees the other's
// store: a sleeper is never missed, and a busy stream, whose consumer
// finds records without sleeping, makes no system call per record.
//
// The sleep is a wait for the eventfd's readiness in Go's netpoller,
// which watches it edge-triggered: every write to the eventfd makes an
// event, whatever its counter holds, so the counter is never read and
// a wake-up costs the sleeper no system call of its own (reading it
// would cost two: a poll first, since the peer shares the file's
// status flags and could make it blocking). The netpoller forgets an
// event that came before the wait began, so the wait's first look, made
// once it is armed, asks the flag instead: a flag no longer set was
// taken by a signal (or a context's kick, which clears it too), whose
// write may have come too early to be seen. A look that finds it set
// sleeps: the signal for it is written later, and wakes it. An event
// left from an earlier sleep only makes a spurious wake-up, which the
// caller tolerates. The counter only grows; a peer that fills it stops
// its own writes, which only delays the wake-ups of its own ring, as
// one that never signals does.
//
// Close and Shutdown interrupt a wait with a read deadline in the
// past, which a peer cannot undo; a context's end interrupts it with a
// write to the eventfd.

// evfd is an eventfd, either made here or received from the peer.
type evfd struct {
	f  *os.File
	fd int // f's descriptor, for writes that must not go through f's locks
	rc syscall.RawConn
	// kick clears the flag and signals the eventfd for a context's end;
	// it holds a reference on the ring, as it may run after the waiting
	// call returned.
	kick func()
	// taken reports that the waiting flag of this eventfd's sleeper is no
	// longer set: its signal is written or on its way.
	taken  func() bool
	looked bool                  // the wait's first look was made
	look   func(fd uintptr) bool // rc.Read's callback, made once
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
	e.look = e.lookOnce
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

// lookOnce is rc.Read's callback: its first call, once the netpoller
// is armed, ends the wait only if the flag was taken; the next, after
// an event, ends it.
func (e *evfd) lookOnce(uintptr) bool {
	if e.looked {
		return true
	}
	e.looked = true
	return e.taken()
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
	e.looked = false
	err := e.rc.Read(e.look)
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
// Every mapping of the package ends here, announced first (memhook):
// the daemon registers regions for RDMA, and a registration cached by
// address must not outlive the mapping it was made on.
func closeAll(mem []byte, files ...*os.File) {
	if mem != nil {
		memhook.Unmapping(mem)
		unix.Munmap(mem)
	}
	for _, f := range files {
		f.Close()
	}
}
