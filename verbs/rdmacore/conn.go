//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/godapl/godapl/verbs"
)

// conn is one rdma_cm id with the QP it connects: a connection being set
// up (events go to the goroutine in Connect or Accept) and then an
// established one (the device's event loop ends it on DISCONNECTED).
type conn struct {
	d  *Device
	id *C.struct_rdma_cm_id
	h  uintptr
	qp *qp

	evs chan *cmEvent

	mu       sync.Mutex
	up       bool
	ended    bool
	released bool
	err      error
	done     chan struct{}

	priv          []byte
	local, remote *net.TCPAddr
	ird, ord      int
}

var _ verbs.Conn = (*conn)(nil)

func newConn(d *Device, id *C.struct_rdma_cm_id) *conn {
	return &conn{d: d, id: id, evs: make(chan *cmEvent, 16), done: make(chan struct{})}
}

func (c *conn) cmEvent(ev *cmEvent) {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	if !up {
		select {
		case c.evs <- ev:
		default:
		}
		return
	}
	switch ev.typ {
	case C.RDMA_CM_EVENT_DISCONNECTED, C.RDMA_CM_EVENT_DEVICE_REMOVAL:
		c.end(verbs.ErrDisconnected)
	}
}

// next waits for the next event of a connection being set up.
func (c *conn) next(ctx context.Context) (*cmEvent, error) {
	select {
	case ev := <-c.evs:
		return ev, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("rdmacore: connection setup: %w (%w)", verbs.ErrUnreachable, ctx.Err())
	case <-c.d.closing:
		return nil, verbs.ErrClosed
	}
}

// expect waits for an event of type want; any other ends the setup.
func (c *conn) expect(ctx context.Context, want int) error {
	ev, err := c.next(ctx)
	if err != nil {
		return err
	}
	if ev.typ != want {
		return fmt.Errorf("rdmacore: %s (status %d) while waiting for %s: %w", cmEventName(ev.typ), ev.status, cmEventName(want), verbs.ErrUnreachable)
	}
	return nil
}

// moveQP moves the QP to s with the attributes rdma_cm computed.
func (c *conn) moveQP(s C.enum_ibv_qp_state, ird, ord int) error {
	q := c.qp
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return verbs.ErrClosed
	}
	if s == C.IBV_QPS_RTR {
		// The access rights rdma_cm gives in INIT depend on the
		// responder resources, known only once the request is sent or
		// received: apply INIT again, as librdmacm does.
		if rc := C.gd_cm_modify(c.id, q.q, C.IBV_QPS_INIT, 0, 0); rc != 0 {
			return errnoErr("modify QP for the connection", syscall.Errno(rc))
		}
	}
	if rc := C.gd_cm_modify(c.id, q.q, s, C.int(ird), C.int(ord)); rc != 0 {
		return errnoErr("modify QP for the connection", syscall.Errno(rc))
	}
	if s == C.IBV_QPS_INIT {
		q.hwState = verbs.QPStateInit
		q.setState(verbs.QPStateInit)
	}
	return nil
}

// established records a connection that is up: the QP is in RTS.
func (c *conn) established(ird, ord int) {
	c.local = tcpAddrOf(C.rdma_get_local_addr(c.id))
	c.remote = tcpAddrOf(C.rdma_get_peer_addr(c.id))
	c.ird, c.ord = ird, ord
	q := c.qp
	q.mu.Lock()
	q.conn = c
	q.ird, q.ord = ird, ord
	q.hwState = verbs.QPStateRTS
	q.setState(verbs.QPStateRTS)
	q.connected.Store(true)
	q.mu.Unlock()
	c.mu.Lock()
	c.up = true
	c.mu.Unlock()
	c.d.st.connsEstablished.Add(1)
	// An event queued before the connection was up (the peer may
	// already have gone) is handled now.
	for {
		select {
		case ev := <-c.evs:
			c.cmEvent(ev)
		default:
			return
		}
	}
}

// end records that the connection ended with err (nil: this side
// disconnected): the QP goes to ERROR, which flushes its queues.
func (c *conn) end(err error) bool {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.ended = true
	c.err = err
	c.mu.Unlock()
	if q := c.qp; q != nil {
		q.mu.Lock()
		if q.conn == c {
			q.conn = nil
			q.connected.Store(false)
			if !q.dead {
				if q.hwState != verbs.QPStateError && q.hwState != verbs.QPStateReset {
					q.hwModify(verbs.QPStateError)
				}
				q.setState(verbs.QPStateError)
			}
		}
		q.mu.Unlock()
		// The flushed requests complete before the connection is seen
		// to end, as DAT reports them before the disconnect event.
		q.awaitFlush()
	}
	close(c.done)
	if err != nil {
		// Complete the peer's disconnect, as librdmacm users do.
		c.disconnectID()
	}
	return true
}

// disconnectID calls rdma_disconnect unless the id is already being
// destroyed: release waits for c.mu, so the id outlives the call.
func (c *conn) disconnectID() C.int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released || c.id == nil {
		return 0
	}
	return C.rdma_disconnect(c.id)
}

// release destroys the rdma_cm id. The kernel may hold the caller for
// as long as the transport takes to give up a connection in progress
// (siw waits out its MPA timeout), so the id is destroyed in the
// background, and Device.Close waits for it.
func (c *conn) release() {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return
	}
	c.released = true
	c.mu.Unlock()
	c.d.unregister(c.h)
	if c.id == nil {
		return
	}
	c.d.bg.Add(1)
	go func() {
		defer c.d.bg.Done()
		C.rdma_destroy_id(c.id)
	}()
}

// abort ends the connection from this side and frees its id: a QP moved
// to ERROR or RESET, a destroyed QP, a closed device.
func (c *conn) abort() {
	c.mu.Lock()
	up, ended := c.up, c.ended
	c.mu.Unlock()
	if up && !ended {
		c.end(nil)
		c.disconnectID()
	}
	c.release()
}

func (c *conn) shutdown() {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	if up {
		c.abort()
	}
	// A connection still being set up is ended by its goroutine, which
	// sees the device closing.
}

func (c *conn) QP() verbs.QP            { return c.qp }
func (c *conn) LocalAddr() net.Addr     { return c.local }
func (c *conn) RemoteAddr() net.Addr    { return c.remote }
func (c *conn) PrivateData() []byte     { return c.priv }
func (c *conn) ResponderResources() int { return c.ird }
func (c *conn) InitiatorDepth() int     { return c.ord }
func (c *conn) Done() <-chan struct{}   { return c.done }

func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Disconnect flushes this side and tells the peer.
func (c *conn) Disconnect() error {
	if !c.end(nil) {
		return nil
	}
	if c.disconnectID() != 0 {
		return errnoErr("rdma_disconnect", errnoOf())
	}
	return nil
}

// markError moves the QP of a failed connection setup to ERROR.
func (q *qp) markError() {
	q.mu.Lock()
	if !q.dead && q.hwState != verbs.QPStateReset && q.hwState != verbs.QPStateError {
		q.hwModify(verbs.QPStateError)
	}
	if !q.dead {
		q.setState(verbs.QPStateError)
	}
	q.mu.Unlock()
}
