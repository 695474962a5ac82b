package siw

import (
	"net"

	"github.com/godapl/godapl/verbs"
)

// conn implements verbs.Conn for one stream.
type conn struct {
	s        *stream
	pdata    []byte // what the peer sent with its Request or Reply
	ird, ord int
}

func (c *conn) QP() verbs.QP            { return c.s.qp }
func (c *conn) LocalAddr() net.Addr     { return c.s.nc.LocalAddr() }
func (c *conn) RemoteAddr() net.Addr    { return c.s.nc.RemoteAddr() }
func (c *conn) PrivateData() []byte     { return c.pdata }
func (c *conn) ResponderResources() int { return c.ird }
func (c *conn) InitiatorDepth() int     { return c.ord }
func (c *conn) Done() <-chan struct{}   { return c.s.done }

// Err implements verbs.Conn.
func (c *conn) Err() error {
	select {
	case <-c.s.done:
	default:
		return nil
	}
	cause, _, _ := c.s.ending()
	return cause
}

// Disconnect implements verbs.Conn: like siw, it simply closes the TCP
// connection (no Terminate); the peer sees the close as a disconnect. It
// returns when the QP has been moved to ERROR and flushed, and fails with
// ErrClosed if the connection had already ended.
func (c *conn) Disconnect() error {
	if !c.s.end(nil, nil, false) {
		<-c.s.done
		return verbs.ErrClosed
	}
	<-c.s.done
	return nil
}

var _ verbs.Conn = (*conn)(nil)
