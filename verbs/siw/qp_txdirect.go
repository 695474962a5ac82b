package siw

import (
	"errors"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The direct transmit path. Handing every post to the tx goroutine costs a
// goroutine wakeup, and on an otherwise idle machine that wakeup (another
// thread woken from its futex) is most of a small message's latency. So
// when a poster kicks a stream whose tx goroutine is idle, the poster
// transmits the work itself: it frames what the send queue holds, as the
// tx goroutine would, and writes it with one non-blocking write. Posting
// must never block, so nothing here waits: the transmit lock is only
// tried, the socket is written without waiting for room (bytes that do
// not fit go to a backlog the tx goroutine writes first), and large
// messages, inbound Read Responses and anything left over are handed to
// the tx goroutine.

// Tunables of the direct path.
const (
	// directMaxMessages bounds the messages one post transmits itself. A
	// poster that finds more queued leaves what it framed to the tx
	// goroutine, which then batches it with the rest: bulk posting keeps
	// its large writes, and the poster and the tx goroutine keep running
	// on separate cores.
	directMaxMessages = 4
	// directMaxMessage is the largest message the direct path takes;
	// larger ones are the tx goroutine's, which writes them from
	// registered memory instead of copying.
	directMaxMessage = 4 << 10
	// directBufferSize is the direct frame writer's buffer; every payload
	// is copied into it so that one write covers the batch.
	directBufferSize = 64 << 10
)

// Kick implements soft.Link: the send queue may have work. The engine
// calls it after every post, in the poster's goroutine.
func (s *stream) Kick() {
	tx := &s.tx
	if s.txOpen.Load() && tx.mu.TryLock() {
		more := s.pumpDirect() && !s.leaveToWaiter()
		tx.mu.Unlock()
		if !more {
			return
		}
	}
	s.signalTx()
}

// pumpDirect frames up to directMaxMessages small messages of the send
// queue. If that empties the queue it writes them without blocking;
// otherwise it leaves them, framed, to the tx goroutine. It reports
// whether the tx goroutine has work. The caller holds tx.mu.
func (s *stream) pumpDirect() bool {
	tx := &s.tx
	if s.stopped() {
		return false
	}
	if tx.fwDirect.Buffered() > 0 || len(tx.backlog) > 0 || s.irq.len() > 0 {
		return true
	}
	// The direct writer for this pass only; restored after the call
	// rather than by a deferred closure, a record on every Kick.
	tx.w = tx.fwDirect
	more := s.pumpDirectFramed()
	tx.w = tx.fw
	return more
}

// pumpDirectFramed is pumpDirect's pass once its writer is the direct
// one: it frames and writes, and reports what pumpDirect reports.
func (s *stream) pumpDirectFramed() bool {
	tx := &s.tx
	// more: the send queue held more than the request taken last; once
	// it did not, the loop ends without asking the QP again (a request
	// posted since is kicked by its poster, who finds tx.mu held and
	// hands it to the tx goroutine).
	more := true
	for msgs := 0; ; msgs++ {
		if !tx.curOn {
			var ok bool
			if !more {
				break
			}
			if ok, more = s.qp.NextSendMore(&tx.cur); !ok {
				break
			}
			if !s.startSend() {
				return false
			}
		}
		if msgs == directMaxMessages || tx.cur.Len > directMaxMessage {
			return true
		}
		for tx.curOn {
			if err := s.txNext(); err != nil {
				s.end(linkErrorCause(err), nil, false)
				return false
			}
		}
	}
	if err := s.flush(); err != nil {
		s.end(linkErrorCause(err), nil, false)
		return false
	}
	return len(tx.backlog) > 0
}

// flushDirect writes what the direct path left: FPDUs it framed, then
// bytes the socket did not take. It runs on the tx goroutine, which may
// block. The caller holds tx.mu.
func (s *stream) flushDirect() error {
	tx := &s.tx
	if tx.fwDirect.Buffered() > 0 {
		tx.w = tx.fwDirect
		err := s.flush()
		tx.w = tx.fw
		if err != nil {
			return err
		}
	}
	if len(tx.backlog) > 0 {
		_, err := s.nc.Write(tx.backlog)
		tx.backlog = tx.backlog[:0]
		return err
	}
	return nil
}

// directWriter is the direct frame writer's io.Writer: one non-blocking
// write attempt, the rest into the backlog. It keeps its callback and
// arguments in fields so that a write allocates nothing.
//
// While the stream runs it writes the socket with write(2) on its file
// descriptor rather than through the RawConn, whose reference count,
// readiness reset and callback cost more than the write's own work
// outside the kernel. What the RawConn's count guarded, that the
// descriptor is not closed (and its number reused) under a write in
// flight, the stream's fdBusy flag guards (see closeConn). A write never
// waits on the poller, so skipping its readiness reset loses nothing: the
// tx goroutine's blocking writes of the backlog reset it themselves
// before they wait. Once the stream is stopping, writes (the Terminate's)
// go through the RawConn again.
type directWriter struct {
	s   *stream
	fd  int // -1: no descriptor, always through rc
	rc  syscall.RawConn
	fn  func(fd uintptr) bool
	p   []byte
	n   int
	err error
}

func (w *directWriter) init(s *stream) {
	w.s, w.fd = s, -1
	w.rc, _ = s.nc.SyscallConn()
	w.fn = w.writeFD
	if w.rc != nil {
		w.rc.Control(func(fd uintptr) { w.fd = int(fd) })
	}
}

func (w *directWriter) writeFD(fd uintptr) bool {
	w.n, w.err = writeNoEINTR(int(fd), w.p)
	return true // never wait for room
}

// writeNoEINTR is one write(2) of p, retried if a signal interrupts it.
func writeNoEINTR(fd int, p []byte) (int, error) {
	for {
		n, err := unix.Write(fd, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// rawWriteNoEINTR is writeNoEINTR without telling the scheduler: the
// socket is non-blocking, so the write returns as soon as the kernel has
// queued what fits, and the scheduler's bookkeeping of a system call
// that may block (entersyscall, exitsyscall) is work for nothing. p is
// not empty (the frame writer writes whole FPDUs). The error is the
// bare errno, 0 for none, which the caller compares without building an
// error.
func rawWriteNoEINTR(fd int, p []byte) (int, unix.Errno) {
	for {
		r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != unix.EINTR {
			return int(r), e
		}
	}
}

// Write implements io.Writer. It always consumes all of p: what the
// socket does not take now is kept, in order, for the tx goroutine.
func (w *directWriter) Write(p []byte) (int, error) {
	s := w.s
	tx := &s.tx
	if len(tx.backlog) > 0 || w.rc == nil {
		tx.backlog = append(tx.backlog, p...)
		return len(p), nil
	}
	// The flag goes up before the stopping check, the closer sets
	// stopping before it reads the flag: one of the two sees the other.
	var n int
	s.fdBusy.Store(true)
	if w.fd >= 0 && !s.stopped() {
		var e unix.Errno
		n, e = rawWriteNoEINTR(w.fd, p)
		s.fdBusy.Store(false)
		if e == unix.EAGAIN {
			n = 0
		} else if e != 0 {
			return 0, e
		}
	} else {
		s.fdBusy.Store(false)
		w.p, w.n, w.err = p, 0, nil
		err := w.rc.Write(w.fn)
		w.p = nil
		if err != nil {
			return 0, err
		}
		n, err = w.n, w.err
		if errors.Is(err, unix.EAGAIN) {
			n, err = 0, nil
		}
		if err != nil {
			return 0, err
		}
	}
	n = max(n, 0)
	if n < len(p) {
		tx.backlog = append(tx.backlog, p[n:]...)
	}
	return len(p), nil
}
