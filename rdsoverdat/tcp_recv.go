package rdsoverdat

import (
	"bufio"
	"errors"
	"io"

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
	br := bufio.NewReaderSize(c.nc, tcpBufSize)
	var hdr [wire.HeaderLen]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			c.shutdown(err, true)
			return
		}
		m, err := p.NewRxMessage(wire.Header(hdr[:]))
		if err != nil {
			c.shutdown(err, false)
			return
		}
		if _, err := io.ReadFull(br, m.buf); err != nil {
			m.release()
			c.shutdown(err, true)
			return
		}
		p.Receive(m)
	}
}

var _ = errors.New
