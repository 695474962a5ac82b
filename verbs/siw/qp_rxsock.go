package siw

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockReader is the socket as the frame reader sees it. It saves a
// syscall per large FPDU: when the frame reader reads a payload straight
// into its destination, sockReader reads with readv into the destination
// and a small spill buffer at once, so the pad, CRC and next header arrive
// with the payload instead of in a read of their own; the next reads are
// served from the spill first. Byte order is preserved, so the frame
// reader notices nothing.
type sockReader struct {
	nc  *net.TCPConn
	rc  syscall.RawConn
	fd  uintptr
	fn  func(fd uintptr) bool // readv, kept so that a read allocates nothing
	iov [2]unix.Iovec
	n   int
	err syscall.Errno

	spill  [spillSize]byte
	sr, sw int // spill[sr:sw] is read ahead and not yet consumed
}

const (
	// spillSize holds a trailer and the next header with room to spare;
	// more would only copy payload that could be read in place.
	spillSize = 256
	// readvMin is the read size from which the spill buffer is attached;
	// smaller reads are buffer refills of the frame reader.
	readvMin = 2 << 10
)

func (r *sockReader) init(nc *net.TCPConn) {
	r.nc = nc
	r.rc, _ = nc.SyscallConn()
	r.fn = r.readv
}

func (r *sockReader) readv(fd uintptr) bool {
	r.fd = fd
	for {
		n, _, e := unix.Syscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&r.iov[0])), uintptr(len(r.iov)))
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

// Read implements io.Reader.
func (r *sockReader) Read(p []byte) (int, error) {
	if r.sr < r.sw {
		n := copy(p, r.spill[r.sr:r.sw])
		r.sr += n
		return n, nil
	}
	if len(p) < readvMin || r.rc == nil {
		return r.nc.Read(p)
	}
	r.iov[0].Base, r.iov[1].Base = &p[0], &r.spill[0]
	r.iov[0].SetLen(len(p))
	r.iov[1].SetLen(len(r.spill))
	r.n, r.err = 0, 0
	err := r.rc.Read(r.fn)
	r.iov[0].Base = nil // do not keep the destination alive
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
	n := r.n
	if n > len(p) {
		r.sr, r.sw = 0, n-len(p)
		n = len(p)
	}
	return n, nil
}
