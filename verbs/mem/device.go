package mem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// Device is a mem device: the engine's objects plus a connection manager
// on the provider's fabric.
type Device struct {
	*soft.Device
	fabric *Provider

	mu        sync.Mutex
	listeners map[*listener]struct{}
	conns     map[*conn]struct{}
}

func newDevice(p *Provider) *Device {
	d := &Device{
		Device:    soft.NewDevice(attr),
		fabric:    p,
		listeners: make(map[*listener]struct{}),
		conns:     make(map[*conn]struct{}),
	}
	d.Device.Owner = d
	return d
}

// Listen implements verbs.Device.
func (d *Device) Listen(addr string, backlog int) (verbs.Listener, error) {
	if d.Closed() {
		return nil, verbs.ErrClosed
	}
	host, port, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	l := &listener{dev: d}
	l.Init(backlog)
	if err := d.fabric.bind(l, host, port); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.listeners[l] = struct{}{}
	d.mu.Unlock()
	return l, nil
}

// Connect implements verbs.Device.
func (d *Device) Connect(ctx context.Context, qp verbs.QP, addr string, p verbs.ConnParam) (verbs.Conn, error) {
	if d.Closed() {
		return nil, verbs.ErrClosed
	}
	sqp, ok := qp.(*soft.QP)
	if !ok || sqp.Device() != d.Device {
		return nil, verbs.ErrInvalidArgument
	}
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, verbs.ErrInvalidArgument
	}
	if st := sqp.State(); st != verbs.QPStateReset && st != verbs.QPStateInit {
		return nil, verbs.ErrInvalidState
	}
	host, port, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	lhost := host
	if p.LocalAddr != "" {
		lhost = p.LocalAddr
		if h, _, err := parseAddr(p.LocalAddr); err == nil {
			lhost = h
		}
	}
	req := &request{
		from:  d,
		qp:    sqp,
		pdata: append([]byte(nil), p.PrivateData...),
		ird:   orDefault(p.ResponderResources, attr.MaxIRD),
		ord:   orDefault(p.InitiatorDepth, attr.MaxORD),
		laddr: Addr{Host: lhost, Port: d.fabric.ephemeral()},
		raddr: Addr{Host: host, Port: port},
		reply: make(chan reply, 1),
	}
	l := d.fabric.lookup(host, port)
	if l == nil || !l.enqueue(req) {
		// Nobody listens, or the backlog is full: the fabric refuses the
		// connection as TCP would (ECONNREFUSED), which rdma_cm reports as
		// REJECTED. The reject is wrapped, so that it stays apart from a
		// peer's own reject (a bare *RejectError).
		d.Counters.ConnsRejected.Add(1)
		return nil, fmt.Errorf("mem: connect %s: %w", addr, errors.Join(&verbs.RejectError{}, syscall.ECONNREFUSED))
	}
	select {
	case r := <-req.reply:
		if r.err != nil {
			return nil, r.err
		}
		return r.conn, nil
	case <-ctx.Done():
		if req.state.CompareAndSwap(reqPending, reqAbandoned) {
			return nil, context.Cause(ctx)
		}
		r := <-req.reply // answered concurrently: honour the answer
		if r.err != nil {
			return nil, r.err
		}
		return r.conn, nil
	}
}

// orDefault maps a requested depth to the one used: 0 means 1, and no
// more than max.
func orDefault(v, max int) int {
	if v <= 0 {
		return 1
	}
	if v > max {
		return max
	}
	return v
}

// Close implements verbs.Device.
func (d *Device) Close() error {
	if d.Closed() {
		return nil
	}
	d.mu.Lock()
	ls := make([]*listener, 0, len(d.listeners))
	for l := range d.listeners {
		ls = append(ls, l)
	}
	cs := make([]*conn, 0, len(d.conns))
	for c := range d.conns {
		cs = append(cs, c)
	}
	d.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	for _, c := range cs {
		c.abort()
	}
	d.CloseObjects()
	return nil
}

func (d *Device) track(c *conn) {
	d.mu.Lock()
	d.conns[c] = struct{}{}
	d.mu.Unlock()
}

func (d *Device) untrack(c *conn) {
	d.mu.Lock()
	delete(d.conns, c)
	d.mu.Unlock()
}

var _ verbs.Device = (*Device)(nil)
