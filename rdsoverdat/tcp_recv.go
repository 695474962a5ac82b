package rdsoverdat

import (
	"io"
	"net"

	"github.com/godapl/godapl/rdsoverdat/wire"
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
	p := c.tp.p
	rd := tcpReader{nc: c.nc, buf: make([]byte, tcpBufSize)}
	var hdr [wire.HeaderLen]byte
	for {
		if err := rd.readFull(hdr[:]); err != nil {
			c.shutdown(err, true)
			return
		}
		c.heard.Store(true)
		m, err := p.NewRxMessage(wire.Header(hdr[:]))
		if err != nil {
			c.shutdown(err, false)
			return
		}
		if err := rd.readFull(m.buf); err != nil {
			m.release()
			c.shutdown(err, true)
			return
		}
		rd.big = len(m.buf) >= tcpDirectReadMin
		p.Receive(m)
	}
}

// tcpReader reads the stream through a staging buffer, except that the
// bulk of a large payload is read straight into the message: one copy
// (out of the socket) instead of two. While the peer sends large
// messages (big), a header is read on its own, so that the staging
// buffer does not swallow the next payload only to copy it again.
type tcpReader struct {
	nc   net.Conn
	buf  []byte // staging, holding buf[r:w] not yet consumed
	r, w int
	big  bool // the last payload was at least tcpDirectReadMin bytes
}

// readFull fills p from the stream; a stream ending inside p is
// io.ErrUnexpectedEOF, one ending before it io.EOF.
func (rd *tcpReader) readFull(p []byte) error {
	n := copy(p, rd.buf[rd.r:rd.w])
	rd.r += n
	for n < len(p) {
		var k int
		var err error
		if len(p)-n >= tcpDirectReadMin {
			k, err = rd.nc.Read(p[n:])
			n += k
		} else {
			want := len(rd.buf)
			if rd.big && len(p) == wire.HeaderLen {
				want = wire.HeaderLen - n
			}
			k, err = rd.nc.Read(rd.buf[:want])
			rd.r, rd.w = 0, k
			c := copy(p[n:], rd.buf[:k])
			rd.r, n = c, n+c
		}
		if err != nil && n < len(p) {
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}
