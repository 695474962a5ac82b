package rdsdproto

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
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
	resv []byte // the ring record TryReserve began (under wmu)

	rbuf []byte // one datagram (reader side; one reader at a time)
	oob  []byte

	// After UseRings, records without descriptors travel in shared
	// memory: tx is the ring this side writes, rx the one it reads.
	tx, rx *shmring.Ring
	ringMu sync.Mutex // UseRings against Close and ShutdownRings
}

// MaxFDs is the most descriptors one record carries (OpRings: two rings
// of three files).
const MaxFDs = 8

// RingCapacity is the data area of each ring of a connection: room for
// a few records of MaxBody, and for the sends a client posts ahead.
const RingCapacity = 1 << 20

// UseRings moves the connection's records to shared memory: Write puts
// records without a descriptor in tx, Read takes records from rx. The
// socket stays for descriptors (ReadSocket) and to tell that the peer
// is gone: when it ends, Shutdown the rings. Call it when no record is
// in flight on the socket.
func (c *Conn) UseRings(tx, rx *shmring.Ring) {
	c.wmu.Lock()
	c.ringMu.Lock()
	c.tx, c.rx = tx, rx
	c.ringMu.Unlock()
	c.wmu.Unlock()
}

// RingStats returns the wake-up counts of this end's rings (zero
// without rings).
func (c *Conn) RingStats() (tx, rx shmring.Stats) {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	if c.rx == nil {
		return
	}
	return c.tx.Stats(), c.rx.Stats()
}

// RingPending reports whether the rx ring holds a record not read yet
// (false without rings): a hint any goroutine may take, to skip reading
// a ring that is empty. Like Rings, it reads what UseRings set without
// a lock: call it only where UseRings happened before.
func (c *Conn) RingPending() bool {
	return c.rx != nil && c.rx.Pending()
}

// PublishAck stores this end's count of what it read from rx in rx's
// shared memory, for the peer to read (PeerAck) with no record; true if
// the peer asked to be told of it (WantAck), which the caller then does
// with a record. False without rings.
func (c *Conn) PublishAck(v uint64) bool {
	return c != nil && c.rx != nil && c.rx.PublishAck(v)
}

// PeerAck returns the count the peer published for what it read from
// tx (0 without rings): the peer's word, to be bounded by the caller.
func (c *Conn) PeerAck() uint64 {
	if c.tx == nil {
		return 0
	}
	return c.tx.Ack()
}

// WantAck asks the peer (on true) to tell of its next published count
// with a record, or withdraws the request; read PeerAck after asking.
func (c *Conn) WantAck(on bool) {
	if c.tx != nil {
		c.tx.WantAck(on)
	}
}

// Rings reports whether UseRings was called.
func (c *Conn) Rings() bool { return c.rx != nil }

// ShutdownRings tells the rings the peer is gone: blocked reads and
// writes return.
func (c *Conn) ShutdownRings() {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	if c.rx != nil {
		c.rx.Shutdown()
		c.tx.Shutdown()
	}
}

// NewConn wraps a unixpacket connection.
func NewConn(uc *net.UnixConn) *Conn {
	c := &Conn{uc: uc, wbuf: make([]byte, MaxRecord), rbuf: make([]byte, MaxRecord+1),
		oob: make([]byte, unix.CmsgSpace(MaxFDs*4))}
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

// Close closes the connection and its rings; blocked reads and writes
// return.
func (c *Conn) Close() error {
	c.ringMu.Lock()
	if c.rx != nil {
		// tx first: once a reader sees rx closed, nothing it does
		// may still reach the peer.
		c.tx.Close()
		c.rx.Close()
	}
	c.ringMu.Unlock()
	return c.uc.Close()
}

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
	if c.tx != nil && fd < 0 {
		return c.writeRing(hdr, total, body)
	}
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

// writeRing puts hdr and body in tx as records as long as the ring
// allows, built in place (one copy of the body), waiting for room.
func (c *Conn) writeRing(hdr Record, total int, body [][]byte) error {
	chunk := min(c.tx.MaxRecord(), MaxRingRecord) - HeaderLen
	flags := hdr.Flags() &^ FlagMore
	bi, bo := 0, 0 // position in body
	for first := true; first || total > 0; first = false {
		n := min(total, chunk)
		w, err := c.tx.Reserve(context.Background(), HeaderLen+n)
		if err != nil {
			return err
		}
		w = w[:HeaderLen+n]
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
		if err := c.tx.Commit(HeaderLen + n); err != nil {
			return err
		}
	}
	return nil
}

// TryReserve begins, without waiting, one ring record of at most n
// body bytes: the body's room (length 0, capacity n) if no other writer
// is under way and the ring has room now, for a writer that must not
// sleep behind a peer that stopped reading. The caller fills it and
// ends the record with CommitReserved or AbortReserved; no other record
// is written in between.
func (c *Conn) TryReserve(n int) ([]byte, bool) {
	if !c.wmu.TryLock() {
		return nil, false
	}
	if c.tx == nil || HeaderLen+n > min(c.tx.MaxRecord(), MaxRingRecord) {
		c.wmu.Unlock()
		return nil, false
	}
	w, ok, _ := c.tx.TryReserve(HeaderLen + n)
	if !ok {
		c.wmu.Unlock()
		return nil, false
	}
	c.resv = w
	return w[HeaderLen:HeaderLen:len(w)], true
}

// CommitReserved publishes the record TryReserve began, with header hdr
// and the first n bytes of its body room as its body.
func (c *Conn) CommitReserved(hdr Record, n int) error {
	w := c.resv[:HeaderLen+n]
	copy(w, hdr[:HeaderLen])
	Record(w).SetFlags(hdr.Flags() &^ FlagMore)
	c.resv = nil
	err := c.tx.Commit(HeaderLen + n)
	c.wmu.Unlock()
	return err
}

// AbortReserved drops the record TryReserve began: nothing is written.
func (c *Conn) AbortReserved() {
	c.tx.Abort()
	c.resv = nil
	c.wmu.Unlock()
}

// WriteFDs sends hdr with no body and the descriptors fds on the socket
// (the rings of a connection), whatever UseRings said.
func (c *Conn) WriteFDs(hdr Record, fds []int) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _, err := c.uc.WriteMsgUnix(hdr[:HeaderLen], unix.UnixRights(fds...), nil)
	return err
}

// Read reads one request or reply whole: its first record's header and
// the reassembled body, in *buf (grown as needed, up to
// HeaderLen+MaxMessage). fds are the descriptors that came with it (nil
// almost always); the caller owns them. Descriptors on any record but
// the first are closed, and a malformed sequence is an error after
// which the connection must be closed. After UseRings it reads the rx
// ring.
func (c *Conn) Read(buf *[]byte) (r Record, fds []int, err error) {
	if c.rx != nil {
		return c.readRing(context.Background(), buf, false)
	}
	return c.readRecords(buf)
}

// ReadRing is Read after UseRings, waiting for the first record of a
// request or reply until ctx ends (then it returns ctx's error); once
// that record is there it reads the rest of the request whatever ctx
// does, so that no request is ever taken in part.
func (c *Conn) ReadRing(ctx context.Context, buf *[]byte) (Record, error) {
	r, _, err := c.readRing(ctx, buf, false)
	return r, err
}

// TryReadRing is ReadRing for a record that is there now: nil (and no
// error) when the ring is empty, or when it cannot be read now for a
// reason ReadRing would report.
func (c *Conn) TryReadRing(buf *[]byte) (Record, error) {
	r, _, err := c.readRing(context.Background(), buf, true)
	return r, err
}

// ReadInPlace is Read after UseRings for a caller that can use some
// bodies where they lie in shared memory: a single record whose header
// (copied into *buf and checked as Parse checks it) inPlace accepts is
// returned as that header alone and its body as a slice of the ring,
// which the caller must give back with ReleaseInPlace before the next
// read; it saves copying a body that the caller copies anyway. The peer
// can change the body at any time: inPlace must accept only bodies that
// are data to pass on, never ones to parse. Any other record is read as
// Read reads it, with a nil body slice.
func (c *Conn) ReadInPlace(buf *[]byte, inPlace func(Record) bool) (Record, []byte, error) {
	rec, err := c.rx.Peek(context.Background())
	if err != nil {
		return nil, nil, err
	}
	if len(rec) >= HeaderLen {
		out := append((*buf)[:0], rec[:HeaderLen]...)
		*buf = out
		if h, err := Parse(out); err == nil && h.Flags()&FlagMore == 0 && inPlace(h) {
			return h, rec[HeaderLen:], nil
		}
	}
	r, _, err := c.readRing(context.Background(), buf, false) // the same record, peeked again
	return r, nil, err
}

// ReleaseInPlace frees the record whose body ReadInPlace returned.
func (c *Conn) ReleaseInPlace() { c.rx.Release() }

// ReadSocket reads one request or reply from the socket, as Read did
// before UseRings: after it, only records that carry descriptors come
// there.
func (c *Conn) ReadSocket(buf *[]byte) (r Record, fds []int, err error) {
	return c.readRecords(buf)
}

// readRecords reads a request or reply from the socket.
func (c *Conn) readRecords(buf *[]byte) (r Record, fds []int, err error) {
	defer func() {
		if err != nil {
			CloseFDs(fds)
			fds = nil
		}
	}()
	out := (*buf)[:0]
	for first := true; ; first = false {
		n, oobn, mflags, err := c.readMsg()
		data := c.rbuf
		if err != nil {
			return nil, fds, err
		}
		if oobn > 0 {
			got := parseRights(c.oob[:oobn])
			if first {
				fds = got
			} else {
				CloseFDs(got)
			}
		}
		if n == 0 {
			return nil, fds, net.ErrClosed // orderly shutdown of a seqpacket peer
		}
		if mflags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			return nil, fds, fmt.Errorf("%w: truncated datagram", ErrLong)
		}
		rec, err := Parse(data[:n])
		if err != nil {
			return nil, fds, err
		}
		if first {
			out = append(out, rec...)
		} else {
			h := Record(out)
			if rec.ID() != h.ID() || rec.Op() != h.Op() || rec.Flags()&FlagReply != h.Flags()&FlagReply {
				return nil, fds, fmt.Errorf("%w: continuation of another request", ErrBody)
			}
			if len(out)+len(rec.Body()) > HeaderLen+MaxMessage {
				return nil, fds, fmt.Errorf("%w: body above MaxMessage", ErrLong)
			}
			out = append(out, rec.Body()...)
		}
		if rec.Flags()&FlagMore == 0 {
			*buf = out
			Record(out).SetFlags(Record(out).Flags() &^ FlagMore)
			return Record(out), fds, nil
		}
	}
}

// readRing reads a request or reply from rx: each record is copied out
// of shared memory before it is checked (the peer may change it at any
// time), straight into *buf. ctx bounds the wait for the first record;
// try takes a first record only if it is there now (nil if not).
func (c *Conn) readRing(ctx context.Context, buf *[]byte, try bool) (Record, []int, error) {
	out := (*buf)[:0]
	for first := true; ; first = false {
		var rec []byte
		var err error
		switch {
		case first && try:
			var ok bool
			if rec, ok = c.rx.TryPeek(); !ok {
				return nil, nil, nil
			}
		case first:
			rec, err = c.rx.Peek(ctx)
		default:
			rec, err = c.rx.Peek(context.Background())
		}
		if err != nil {
			return nil, nil, err
		}
		start := len(out)
		if start+len(rec) > HeaderLen+MaxMessage+HeaderLen {
			return nil, nil, fmt.Errorf("%w: body above MaxMessage", ErrLong)
		}
		out = append(out, rec...)
		c.rx.Release()
		r, err := Parse(out[start:])
		if err != nil {
			return nil, nil, err
		}
		more := r.Flags()&FlagMore != 0
		if !first {
			h := Record(out)
			if r.ID() != h.ID() || r.Op() != h.Op() || r.Flags()&FlagReply != h.Flags()&FlagReply {
				return nil, nil, fmt.Errorf("%w: continuation of another request", ErrBody)
			}
			n := copy(out[start:], out[start+HeaderLen:]) // the body over its header
			out = out[:start+n]
			if len(out) > HeaderLen+MaxMessage {
				return nil, nil, fmt.Errorf("%w: body above MaxMessage", ErrLong)
			}
		}
		if !more {
			*buf = out
			Record(out).SetFlags(Record(out).Flags() &^ FlagMore)
			return Record(out), nil, nil
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

// CloseFDs closes descriptors a record brought that nobody takes.
func CloseFDs(fds []int) {
	for _, f := range fds {
		unix.Close(f)
	}
}
