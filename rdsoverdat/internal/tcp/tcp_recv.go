package tcp

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// The tcp receive side (tcp_recv.c): read a 48-byte header, then exactly
// h_len payload bytes into a message from the pool, hand it to the core,
// repeat. A connection that replaced an older one on the same path starts
// reading only after the older reader has delivered everything it had, so
// messages of one path reach the core in the order the peer sent them.
// h_csum is neither checked nor required, like rds_tcp; an h_len above
// 1 MiB, or a congestion map of the wrong size, is a protocol error that
// resets the connection.

func (c *tcpConn) routineRecv() {
	defer c.tp.tn.wg.Done()
	defer c.release()
	defer close(c.rdone)
	if c.prevRx != nil {
		<-c.prevRx
	}
	r := &c.reader
	defer r.end()
	for {
		s, err := c.readerStep()
		if err == nil && s != nil && c.tp.tn.cfg.ReaderGrace > 0 {
			// The receiver that waited for this message runs the role
			// from its next RecvMsg on (tcp_reader.go).
			r.rx.rd.wakes.Flush()
			err = r.lend(s)
		}
		if err != nil {
			r.rx.rd.wakes.Flush()
			c.shutdown(err, true)
			return
		}
	}
}

// tcpRx is a connection's place in the stream: the staging reader, the
// header read so far and where the payload goes. It belongs to whoever
// holds the reader role (tcp_reader.go), so a message one goroutine began
// can be finished by another.
type tcpRx struct {
	rd  *tcpReader
	hdr [wire.HeaderLen]byte
	hn  int    // header bytes read
	dst rxDest // where the payload goes, once the header is complete
	m   xport.Msg
	d   xport.Direct
	own []byte // dstOwn: the buffer of the RecvMsg running the role
	pn  int    // payload bytes read
}

type rxDest uint8

const (
	dstNone  rxDest = iota // the header is not complete or not looked at
	dstMsg                 // a message from the pool, delivered by Receive
	dstClaim               // a waiting receiver's buffer (ClaimDirect, reader goroutine only) or a socket's sink (ClaimSink)
	dstOwn                 // the buffer of the RecvMsg running the role
)

// payload is the current payload's destination.
func (x *tcpRx) payload() []byte {
	switch x.dst {
	case dstMsg:
		return x.m.Payload()
	case dstClaim:
		return x.d.Buf
	}
	return x.own
}

// next forgets the message just finished, and notes its size for the
// next header read (tcpReader.big).
func (x *tcpRx) next(l int) {
	x.rd.big = l >= tcpDirectReadMin
	x.clear()
}

// clear forgets the current message: the next read starts a header.
// Only the destination dst names is set (the others are already zero),
// so only it is cleared: a Direct is ten words.
func (x *tcpRx) clear() {
	switch x.dst {
	case dstMsg:
		x.m = nil
	case dstClaim:
		x.d = xport.Direct{}
	case dstOwn:
		x.own = nil
	}
	x.hn, x.dst, x.pn = 0, dstNone, 0
}

// abort drops a message left half read by a failed connection: it never
// counted as received, so the peer sends it again on the next one.
func (x *tcpRx) abort() {
	switch x.dst {
	case dstMsg:
		x.m.Release()
	case dstClaim:
		x.d.Done(false)
	}
	x.clear()
}

// readerStep reads the rest of the current message in the reader
// goroutine and disposes of it: straight into a waiting receiver's buffer
// when one has offered it, else into a message for Receive. It returns
// the message's socket if a RecvMsg of that socket was waiting for it:
// the role then goes to that socket's receivers.
func (c *tcpConn) readerStep() (xport.Receiver, error) {
	r, p := &c.reader, c.tp.p
	x := &r.rx
	if err := r.read(x.hdr[:], &x.hn, false); err != nil {
		return nil, err
	}
	h := wire.Header(x.hdr[:])
	if x.dst == dstNone {
		c.noteHeader(x.rd, h)
		if d, ok := p.ClaimDirect(h); ok {
			x.dst, x.d = dstClaim, d
		} else {
			m, err := p.NewRxMessage(h)
			if err != nil {
				c.shutdown(err, false)
				return nil, err
			}
			x.dst, x.m = dstMsg, m
		}
	}
	if err := r.read(x.payload(), &x.pn, false); err != nil {
		return nil, err
	}
	l := int(h.Len())
	if x.dst == dstClaim {
		d := x.d
		x.next(l)
		want := waiting(d.Sink)
		d.Wakes = &x.rd.wakes
		d.Done(true)
		return want, nil
	}
	m := x.m
	x.next(l)
	want := waiting(p.ReaderTarget(m.Header()))
	p.ReceiveWakes(m, &x.rd.wakes)
	return want, nil
}

// waiting returns r if a RecvMsg of r waits for a message, else nil.
func waiting(r xport.Receiver) xport.Receiver {
	if r != nil && r.Waiting() {
		return r
	}
	return nil
}

// tcpReader reads the stream through a staging buffer, except that the
// bulk of a large payload is read straight into its destination: one
// copy (out of the socket) instead of two. While the peer sends large
// messages (big), a header is not read through the whole staging buffer,
// so that the staging buffer does not swallow the next payload only to
// copy it again: the read that ends a large payload also takes the next
// header into staging (readv of the payload's rest and one header), and a
// header still missing after that is read on its own.
type tcpReader struct {
	nc   net.Conn
	raw  syscall.RawConn // for readv; nil reads the payload alone
	buf  []byte          // staging, holding buf[r:w] not yet consumed
	r, w int
	big  bool // the last payload was at least tcpDirectReadMin bytes

	// The sockets delivered to from what was read (xport.Wakes): woken
	// before the next read of the socket and whenever the role's holder
	// gives it up, so that a burst read at once wakes each socket once.
	wakes xport.Wakes

	// The pending readv: iov[:ivn] (the payload's rest and the staging
	// buffer's first header), set once per read rather than on every
	// call the poller makes, and what the system call returned. readvFn
	// is the RawConn.Read callback, made once, so a read allocates
	// nothing.
	iov     [2]unix.Iovec
	ivn     int
	vn      int
	verr    error
	readvFn func(fd uintptr) bool
}

func newTCPReader(nc net.Conn, raw syscall.RawConn) *tcpReader {
	rd := &tcpReader{nc: nc, raw: raw, buf: make([]byte, tcpBufSize)}
	// The readv itself, through RawSyscall (tcp_sys.go); false asks
	// the poller to wait until the socket is readable and call again.
	// Its body is the closure's own, system call included: a method
	// value would add a call per readv, and so would a helper, which a
	// closure made in an inlined constructor does not inline.
	rd.readvFn = func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&rd.iov[0])), uintptr(rd.ivn))
			k := int(r)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			case 0:
				rd.vn, rd.verr = k, nil
			default:
				rd.vn, rd.verr = 0, e
			}
			return true
		}
	}
	return rd
}

// readStage reads into the staging buffer's first want bytes what has
// arrived (at least one byte, waiting for it); io.EOF at the end of the
// stream. The iovec points into rd's own buffer, so that, unlike
// readvInto's, it need not let go of it after the read.
func (rd *tcpReader) readStage(want int) (int, error) {
	if rd.raw == nil {
		return rd.nc.Read(rd.buf[:want])
	}
	rd.iov[0].Base = &rd.buf[0]
	rd.iov[0].SetLen(want)
	rd.ivn = 1
	return rd.readvDone(rd.raw.Read(rd.readvFn))
}

// readvInto reads into a and then b (nil: a alone) with one readv,
// waiting for data through the poller; io.EOF at the end of the stream.
func (rd *tcpReader) readvInto(a, b []byte) (int, error) {
	bufs := [2][]byte{a, b}
	rd.ivn = iovecs(rd.iov[:], bufs[:])
	err := rd.raw.Read(rd.readvFn)
	dropBases(rd.iov[:]) // hold no buffer between reads
	return rd.readvDone(err)
}

// readvDone returns what the readv of a RawConn.Read that returned err
// read.
func (rd *tcpReader) readvDone(err error) (int, error) {
	n, verr := rd.vn, rd.verr
	if err == nil {
		err = verr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// readDirect reads the rest of a large payload, p, and as much of the
// next header as has arrived behind it; the staging buffer is empty.
func (rd *tcpReader) readDirect(p []byte) (int, error) {
	if rd.raw == nil {
		return rd.nc.Read(p)
	}
	n, err := rd.readvInto(p, rd.buf[:wire.HeaderLen])
	if err != nil {
		return 0, err
	}
	if n > len(p) {
		rd.r, rd.w = 0, n-len(p)
		n = len(p)
	}
	return n, nil
}

// readFull fills p from the stream; a stream ending inside p is
// io.ErrUnexpectedEOF, one ending before it io.EOF.
func (rd *tcpReader) readFull(p []byte) error {
	n := 0
	return rd.fill(p, &n)
}

// fill goes on filling p from p[*pn:], and leaves in *pn how far it got
// when a read fails (a deadline can interrupt it and another call, even
// by another goroutine, resume it). A stream ending inside the message
// is io.ErrUnexpectedEOF, one ending before it io.EOF.
func (rd *tcpReader) fill(p []byte, pn *int) error {
	n := *pn
	if rd.r < rd.w { // often empty: a lone message's header drained it
		c := copy(p[n:], rd.buf[rd.r:rd.w])
		rd.r += c
		n += c
	}
	for n < len(p) {
		var k int
		var err error
		rd.wakes.Flush() // the next read may block: wake what was delivered
		if len(p)-n >= tcpDirectReadMin {
			k, err = rd.readDirect(p[n:])
			n += k
		} else {
			want := len(rd.buf)
			if rd.big && len(p) == wire.HeaderLen {
				want = wire.HeaderLen - n
			}
			k, err = rd.readStage(want)
			rd.r, rd.w = 0, k
			c := copy(p[n:], rd.buf[:k])
			rd.r, n = c, n+c
		}
		if err != nil && n < len(p) {
			*pn = n
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	*pn = n
	return nil
}
