package siw

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockReader is the socket as the frame reader sees it. It saves
// syscalls on large FPDUs: when the frame reader reads a payload straight
// into its destination, sockReader reads with readv into the destination
// and a spill buffer at once, so that the pad, CRC and next header — and,
// when the peer is streaming, the next few FPDUs whole — arrive with the
// payload instead of in reads of their own; the next reads are served
// from the spill first. Byte order is preserved, so the frame reader
// notices nothing, and every byte still reaches its destination only
// through the frame reader, after the header it belongs to has been
// validated: nothing is placed speculatively.
//
// Why a large spill and not speculation. While a large RDMA Write
// streams in, the kernel has many FPDUs queued; reading them one payload
// per syscall, as a spill of only a trailer and a header forces, costs a
// syscall per 64 KiB where a plain TCP reader reads hundreds of KiB per
// call (on the 2-core development VM: 1 MiB in 64 KiB reads takes the
// kernel about twice as long as in one read). Reading the following FPDUs
// straight into place would need their headers before they are read. A
// readv that guesses them — the same STag at the next TO, a payload as
// long as this one — cannot be made safe for an RDMA Write: its total
// length is on no header, so when the next segment is shorter than
// guessed (the last one usually is), the guessed iovec has already put
// the bytes that follow it into memory the Write does not target, memory
// the application may be using. So the following FPDUs are read into the
// spill and their payloads copied out: a copy in user space in exchange
// for the syscalls, with fewer wakeups of the reader (benchmarks: RDMA
// Write of 1 MiB about a fifth faster). Only a stream that has carried a
// large payload pays for the memory.
type sockReader struct {
	nc      *net.TCPConn
	rc      syscall.RawConn
	fd      uintptr
	fn      func(fd uintptr) bool // readv, kept so that a read allocates nothing
	fnSpill func(fd uintptr) bool // readSpill, likewise
	iov     [2]unix.Iovec
	n       int
	err     syscall.Errno

	spill  []byte // small, until the first large payload read; then bulk
	small  [spillSmall]byte
	sr, sw int // spill[sr:sw] is read ahead and not yet consumed
}

const (
	// spillSmall holds a trailer and the next header with room to spare.
	spillSmall = 256
	// spillBulk is the spill of a stream that has carried a large
	// payload: a few maximal FPDUs, so that a streaming RDMA Write costs
	// one syscall per several FPDUs. Much more than this stops paying:
	// the spill and its copy out no longer stay in the cache.
	spillBulk = 256 << 10
	// bulkReadMin is the payload read that switches the spill to
	// spillBulk (once per stream): a payload of a few KiB behind a
	// header is no sign of a streaming peer.
	bulkReadMin = 32 << 10
	// readvMin is the read size from which the spill buffer is attached;
	// smaller reads are buffer refills of the frame reader.
	readvMin = 2 << 10
)

func (r *sockReader) init(nc *net.TCPConn) {
	r.nc = nc
	r.rc, _ = nc.SyscallConn()
	r.fn = r.readv
	r.fnSpill = r.readSpill
	r.spill = r.small[:]
}

// buffered returns the bytes read ahead and not yet consumed.
func (r *sockReader) buffered() int { return r.sw - r.sr }

// fillSpill is an inline receiver's wait (qp_rxinline.go): it blocks
// until the socket is readable, then reads what it holds into the empty
// spill, which Read serves first. The spill is grown to the frame
// reader's buffer size, so that a burst of small FPDUs costs one read,
// as it does with the frame reader's own reads.
func (r *sockReader) fillSpill() error {
	if len(r.spill) < rxBufferSize {
		r.spill = make([]byte, rxBufferSize)
	}
	r.sr, r.sw = 0, 0
	r.n, r.err = 0, 0
	if err := r.rc.Read(r.fnSpill); err != nil {
		return err
	}
	if r.err != 0 {
		return &net.OpError{Op: "read", Net: "tcp", Addr: r.nc.RemoteAddr(), Err: r.err}
	}
	if r.n == 0 {
		return io.EOF
	}
	raceAcquireIO(int(r.fd))
	r.sw = r.n
	return nil
}

func (r *sockReader) readSpill(fd uintptr) bool {
	r.fd = fd
	for {
		n, _, e := unix.Syscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&r.spill[0])), uintptr(len(r.spill)))
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
	if len(p) >= bulkReadMin && len(r.spill) < spillBulk {
		r.spill = make([]byte, spillBulk)
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
