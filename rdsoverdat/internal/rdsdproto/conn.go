package rdsdproto

import (
	"fmt"
	"net"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Conn is one end of a control connection (a unixpacket socket): it
// writes requests or replies whole, splitting long bodies into FlagMore
// records under one lock, and reads them whole.
type Conn struct {
	uc *net.UnixConn
	rc syscall.RawConn

	// The reader's recvmsg(2), made once so that a read allocates
	// nothing (ReadMsgUnix makes a sockaddr per call).
	rmsg   unix.Msghdr
	riov   unix.Iovec
	rn     int
	rflags int
	rerr   error
	readFn func(fd uintptr) bool

	wmu  sync.Mutex
	wbuf []byte

	rbuf []byte // one datagram (reader side; one reader at a time)
	oob  []byte
}

// NewConn wraps a unixpacket connection.
func NewConn(uc *net.UnixConn) *Conn {
	c := &Conn{uc: uc, wbuf: make([]byte, MaxRecord), rbuf: make([]byte, MaxRecord+1),
		oob: make([]byte, unix.CmsgSpace(4*4))}
	c.rc, c.rerr = uc.SyscallConn()
	c.riov.Base = &c.rbuf[0]
	c.riov.SetLen(len(c.rbuf))
	c.rmsg.Iov = &c.riov
	c.rmsg.Iovlen = 1
	c.rmsg.Control = &c.oob[0]
	c.readFn = c.recvmsg
	return c
}

// recvmsg is one recvmsg(2) for RawConn.Read: false to wait for
// readability.
func (c *Conn) recvmsg(fd uintptr) bool {
	c.rmsg.SetControllen(len(c.oob))
	c.rmsg.Flags = 0
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.rmsg)), unix.MSG_CMSG_CLOEXEC)
	if e == unix.EAGAIN {
		return false
	}
	if e == unix.EINTR {
		return c.recvmsg(fd)
	}
	c.rn, c.rflags, c.rerr = int(n), int(c.rmsg.Flags), nil
	if e != 0 {
		c.rn, c.rerr = 0, e
	}
	return true
}

// readMsg reads one datagram into rbuf and oob.
func (c *Conn) readMsg() (n, oobn, flags int, err error) {
	if c.rc == nil {
		return 0, 0, 0, c.rerr
	}
	if err := c.rc.Read(c.readFn); err != nil {
		return 0, 0, 0, err
	}
	if c.rerr != nil {
		return 0, 0, 0, c.rerr
	}
	return c.rn, int(c.rmsg.Controllen), c.rflags, nil
}

// UnixConn returns the underlying connection.
func (c *Conn) UnixConn() *net.UnixConn { return c.uc }

// Close closes the connection; blocked reads and writes return.
func (c *Conn) Close() error { return c.uc.Close() }

// Write sends hdr (a record of HeaderLen bytes whose fields are set) with
// the concatenation of body as its body, in as many records as MaxBody
// requires. Records of concurrent writers never interleave.
func (c *Conn) Write(hdr Record, body ...[]byte) error {
	return c.WriteFD(hdr, -1, body...)
}

// WriteFD is Write passing descriptor fd (if >= 0) with the first record.
func (c *Conn) WriteFD(hdr Record, fd int, body ...[]byte) error {
	total := 0
	for _, b := range body {
		total += len(b)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	flags := hdr.Flags() &^ FlagMore
	bi, bo := 0, 0 // position in body
	for first := true; first || total > 0; first = false {
		n := min(total, MaxBody)
		w := c.wbuf[:HeaderLen+n]
		copy(w, hdr[:HeaderLen])
		for p := w[HeaderLen:]; len(p) > 0; {
			k := copy(p, body[bi][bo:])
			p, bo = p[k:], bo+k
			if bo == len(body[bi]) {
				bi, bo = bi+1, 0
			}
		}
		total -= n
		f := flags
		if total > 0 {
			f |= FlagMore
		}
		Record(w).SetFlags(f)
		var oob []byte
		if first && fd >= 0 {
			oob = unix.UnixRights(fd)
		}
		if _, _, err := c.uc.WriteMsgUnix(w, oob, nil); err != nil {
			return err
		}
	}
	return nil
}

// Read reads one request or reply whole: its first record's header and
// the reassembled body, in *buf (grown as needed, up to
// HeaderLen+MaxMessage). fd is a descriptor that came with it, or -1;
// the caller owns it. Descriptors on any record but the first are
// closed, and a malformed sequence is an error after which the
// connection must be closed.
func (c *Conn) Read(buf *[]byte) (r Record, fd int, err error) {
	fd = -1
	defer func() {
		if err != nil && fd >= 0 {
			unix.Close(fd)
			fd = -1
		}
	}()
	out := (*buf)[:0]
	for first := true; ; first = false {
		n, oobn, mflags, err := c.readMsg()
		if err != nil {
			return nil, fd, err
		}
		if oobn > 0 {
			fds := parseRights(c.oob[:oobn])
			for i, f := range fds {
				if first && i == 0 {
					fd = f
				} else {
					unix.Close(f)
				}
			}
		}
		if n == 0 {
			return nil, fd, net.ErrClosed // orderly shutdown of a seqpacket peer
		}
		if mflags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			return nil, fd, fmt.Errorf("%w: truncated datagram", ErrLong)
		}
		rec, err := Parse(c.rbuf[:n])
		if err != nil {
			return nil, fd, err
		}
		if first {
			out = append(out, rec...)
		} else {
			h := Record(out)
			if rec.ID() != h.ID() || rec.Op() != h.Op() || rec.Flags()&FlagReply != h.Flags()&FlagReply {
				return nil, fd, fmt.Errorf("%w: continuation of another request", ErrBody)
			}
			if len(out)+len(rec.Body()) > HeaderLen+MaxMessage {
				return nil, fd, fmt.Errorf("%w: body above MaxMessage", ErrLong)
			}
			out = append(out, rec.Body()...)
		}
		if rec.Flags()&FlagMore == 0 {
			*buf = out
			Record(out).SetFlags(Record(out).Flags() &^ FlagMore)
			return Record(out), fd, nil
		}
	}
}

// parseRights returns the descriptors of SCM_RIGHTS messages in oob.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}
