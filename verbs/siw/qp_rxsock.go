package siw

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockReader is the socket as the frame reader sees it: reads through
// the raw connection (no allocation, no poll.FD bookkeeping beyond the
// wait), and a vector read (iwarp.VectorReader) with which the frame
// reader reads a large payload straight into its destination and what
// follows it — pad, CRC, the next header and, when the peer is
// streaming, the next few FPDUs whole — into its own buffer in the same
// call. Every byte still reaches its destination only through the frame
// reader, after the header it belongs to has been validated: nothing is
// placed speculatively.
//
// Why not read the following FPDUs straight into place. Their headers
// would be needed before they are read. A readv that guesses them — the
// same STag at the next TO, a payload as long as this one — cannot be
// made safe for an RDMA Write: its total length is on no header, so when
// the next segment is shorter than guessed (the last one usually is), the
// guessed iovec has already put the bytes that follow it into memory the
// Write does not target, memory the application may be using. So the
// following FPDUs land in the frame reader's buffer and their payloads
// are copied out: a copy in user space in exchange for the syscalls. The
// frame reader's buffer grows for a stream that carries large payloads
// (rxBulkBufferSize), so that a streaming peer costs one read per
// several FPDUs.
//
// An inline receiver's wait (waitRead) reads into the frame reader's
// buffer itself.
type sockReader struct {
	nc     *net.TCPConn
	rc     syscall.RawConn
	fd     uintptr
	fn     func(fd uintptr) bool // readv, kept so that a read allocates nothing
	fnWait func(fd uintptr) bool // readWait, likewise
	iov    [2]unix.Iovec
	niov   int // iovecs of the next readv
	n      int
	err    syscall.Errno
	dst    []byte // waitRead's destination, during the read
}

func (r *sockReader) init(nc *net.TCPConn) {
	r.nc = nc
	r.rc, _ = nc.SyscallConn()
	r.fn = r.readv
	r.fnWait = r.readWait
}

// waitRead is an inline receiver's wait (qp_rxinline.go): it blocks
// until the socket is readable, then reads what it holds into p, the
// frame reader's free buffer (iwarp.FrameReader.Space), so that a burst
// of small FPDUs costs one read, as with the frame reader's own reads,
// and the frames are parsed where they landed.
func (r *sockReader) waitRead(p []byte) (int, error) {
	r.dst = p
	r.n, r.err = 0, 0
	err := r.rc.Read(r.fnWait)
	r.dst = nil // do not keep the destination alive
	if err != nil {
		return 0, err
	}
	if r.err != 0 {
		return 0, &net.OpError{Op: "read", Net: "tcp", Addr: r.nc.RemoteAddr(), Err: r.err}
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	raceAcquireIO(int(r.fd))
	return r.n, nil
}

// The reads are raw system calls: the socket is non-blocking, so a read
// returns at once (EAGAIN when nothing is there) and never needs the
// scheduler to hand the P on, which unix.Syscall's entersyscall and
// exitsyscall prepare for on every call.

func (r *sockReader) readWait(fd uintptr) bool {
	r.fd = fd
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.dst[0])), uintptr(len(r.dst)))
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			return false
		}
		r.n, r.err = int(n), e
		return true
	}
}

func (r *sockReader) readv(fd uintptr) bool {
	r.fd = fd
	for {
		n, _, e := unix.RawSyscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&r.iov[0])), uintptr(r.niov))
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			return false // wait until readable, then try again
		}
		r.n, r.err = int(n), e
		return true
	}
}

// Read implements io.Reader: the frame reader's buffer refills.
func (r *sockReader) Read(p []byte) (int, error) {
	return r.ReadVec(p, nil)
}

// ReadVec implements iwarp.VectorReader: one readv into a, then b.
func (r *sockReader) ReadVec(a, b []byte) (int, error) {
	if len(a) == 0 {
		return 0, nil
	}
	if r.rc == nil {
		return r.nc.Read(a)
	}
	r.iov[0].Base = &a[0]
	r.iov[0].SetLen(len(a))
	r.niov = 1
	if len(b) > 0 {
		r.iov[1].Base = &b[0]
		r.iov[1].SetLen(len(b))
		r.niov = 2
	}
	r.n, r.err = 0, 0
	err := r.rc.Read(r.fn)
	r.iov[0].Base, r.iov[1].Base = nil, nil // do not keep the destination alive
	if err != nil {
		return 0, err
	}
	if r.err != 0 {
		return 0, &net.OpError{Op: "readv", Net: "tcp", Addr: r.nc.RemoteAddr(), Err: r.err}
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	raceAcquireIO(int(r.fd))
	return r.n, nil
}
