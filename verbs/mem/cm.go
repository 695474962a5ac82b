package mem

import (
	"context"
	"net"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// listener implements verbs.Listener: a ListenQueue bound to an address
// of the fabric.
type listener struct {
	soft.ListenQueue[*request]
	dev  *Device
	host string
	port int
}

func (l *listener) key() string    { return Addr{Host: l.host, Port: l.port}.String() }
func (l *listener) Addr() net.Addr { return Addr{Host: l.host, Port: l.port} }

// enqueue offers a request; false when the backlog is full or l closed.
func (l *listener) enqueue(r *request) bool {
	queued, _ := l.Offer(r, nil)
	return queued
}

// Accept implements verbs.Listener.
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.ListenQueue.Accept(ctx, (*request).abandoned)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close implements verbs.Listener; requests still queued are rejected.
func (l *listener) Close() error {
	if !l.ListenQueue.Close() {
		return verbs.ErrClosed
	}
	l.dev.fabric.unbind(l)
	l.dev.mu.Lock()
	delete(l.dev.listeners, l)
	l.dev.mu.Unlock()
	return nil
}

const (
	reqPending int32 = iota
	reqAnswered
	reqAbandoned
)

type reply struct {
	conn verbs.Conn
	err  error
}

// request implements verbs.ConnRequest.
type request struct {
	from         *Device
	qp           *soft.QP
	pdata        []byte
	ird, ord     int // the active side's
	laddr, raddr Addr
	reply        chan reply
	state        atomic.Int32
}

func (r *request) PrivateData() []byte     { return r.pdata }
func (r *request) LocalAddr() net.Addr     { return r.raddr }
func (r *request) RemoteAddr() net.Addr    { return r.laddr }
func (r *request) ResponderResources() int { return r.ord }
func (r *request) InitiatorDepth() int     { return r.ird }

// abandoned reports that the connecting side gave up while r was queued.
func (r *request) abandoned() bool { return r.state.Load() == reqAbandoned }

// Accept implements verbs.ConnRequest. IRD and ORD are negotiated the way
// siw relaxes them: the passive side serves at least as many reads as the
// active side will issue, and issues no more than the active side serves.
func (r *request) Accept(qp verbs.QP, p verbs.ConnParam) (verbs.Conn, error) {
	pqp, ok := qp.(*soft.QP)
	if !ok {
		return nil, verbs.ErrInvalidArgument
	}
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, verbs.ErrInvalidArgument
	}
	if st := pqp.State(); st != verbs.QPStateReset && st != verbs.QPStateInit {
		return nil, verbs.ErrInvalidState
	}
	if !r.state.CompareAndSwap(reqPending, reqAnswered) {
		return nil, verbs.ErrDisconnected // the active side gave up
	}
	// Zero takes the request's values (rdma_accept with the CONNECT_REQUEST
	// event's parameters).
	pird, pord := p.ResponderResources, p.InitiatorDepth
	if pird <= 0 {
		pird = r.ord
	}
	if pord <= 0 {
		pord = r.ird
	}
	pird = max(orDefault(pird, attr.MaxIRD), r.ord)
	pord = min(orDefault(pord, attr.MaxORD), r.ird)
	aird, aord := r.ird, min(r.ord, pird)

	var pdev *Device
	if d, ok := devOf(pqp); ok {
		pdev = d
	}
	if pdev == nil {
		r.reply <- reply{err: verbs.ErrUnreachable}
		return nil, verbs.ErrInvalidArgument
	}
	active := &conn{dev: r.from, qp: r.qp, laddr: r.laddr, raddr: r.raddr, pdata: append([]byte(nil), p.PrivateData...), ird: aird, ord: aord, done: make(chan struct{})}
	passive := &conn{dev: pdev, qp: pqp, laddr: r.raddr, raddr: r.laddr, pdata: r.pdata, ird: pird, ord: pord, done: make(chan struct{})}
	active.peer, passive.peer = passive, active
	active.link = &link{c: active}
	passive.link = &link{c: passive}
	if err := r.qp.Connect(active.link, aird, aord); err != nil {
		r.reply <- reply{err: err}
		return nil, verbs.ErrDisconnected
	}
	if err := pqp.Connect(passive.link, pird, pord); err != nil {
		r.qp.Fail(verbs.ErrDisconnected)
		r.reply <- reply{err: &verbs.RejectError{}}
		return nil, err
	}
	r.from.track(active)
	pdev.track(passive)
	r.from.Counters.ConnsEstablished.Add(1)
	pdev.Counters.ConnsEstablished.Add(1)
	r.reply <- reply{conn: active}
	return passive, nil
}

// Reject implements verbs.ConnRequest.
func (r *request) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxPrivateData {
		return verbs.ErrInvalidArgument
	}
	if !r.state.CompareAndSwap(reqPending, reqAnswered) {
		return verbs.ErrDisconnected
	}
	r.from.Counters.ConnsRejected.Add(1)
	r.reply <- reply{err: &verbs.RejectError{PrivateData: append([]byte(nil), privateData...)}}
	return nil
}

// devOf returns the mem device that owns qp.
func devOf(qp *soft.QP) (*Device, bool) {
	d, ok := qp.Device().Owner.(*Device)
	return d, ok
}

// conn implements verbs.Conn. The two conns of a connection point at each
// other; whichever side ends first ends both.
type conn struct {
	dev          *Device
	qp           *soft.QP
	link         *link
	peer         *conn
	laddr, raddr Addr
	pdata        []byte
	ird, ord     int

	done     chan struct{}
	endOnce  sync.Once
	mu       sync.Mutex
	err      error
	disconnd atomic.Bool
}

func (c *conn) QP() verbs.QP            { return c.qp }
func (c *conn) LocalAddr() net.Addr     { return c.laddr }
func (c *conn) RemoteAddr() net.Addr    { return c.raddr }
func (c *conn) PrivateData() []byte     { return c.pdata }
func (c *conn) ResponderResources() int { return c.ird }
func (c *conn) InitiatorDepth() int     { return c.ord }
func (c *conn) Done() <-chan struct{}   { return c.done }

func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// end records why the connection ended, after the QP was failed.
func (c *conn) end(err error) {
	c.endOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
		c.dev.untrack(c)
	})
}

// Disconnect implements verbs.Conn.
func (c *conn) Disconnect() error {
	if !c.disconnd.CompareAndSwap(false, true) {
		return verbs.ErrClosed
	}
	c.shutdown(nil, verbs.ErrDisconnected)
	return nil
}

// abort ends the connection on behalf of this side without a Terminate:
// the QP left the connected states or the device closed.
func (c *conn) abort() { c.shutdown(nil, verbs.ErrDisconnected) }

// terminate ends the connection because this side detected t.
func (c *conn) terminate(t *verbs.TerminateError) {
	c.dev.Counters.TerminatesSent.Add(1)
	c.peer.dev.Counters.TerminatesReceived.Add(1)
	c.shutdown(t, soft.Remote(t))
}

// shutdown fails both QPs and ends both conns: this side with local, the
// peer with remote.
func (c *conn) shutdown(local, remote error) {
	c.qp.Fail(local)
	c.peer.qp.Fail(remote)
	c.end(local)
	c.peer.end(remote)
}
