//go:build rdmacore

package rdmacore

// #include "shim.h"
// #include <stdlib.h>
import "C"

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

// cmTimeout bounds address and route resolution and the passive side's
// wait for ESTABLISHED, which have no context of their own.
const cmTimeout = 10 * time.Second

type listener struct {
	d    *Device
	id   *C.struct_rdma_cm_id
	h    uintptr
	addr *net.TCPAddr

	mu     sync.Mutex
	closed bool
	reqs   chan *connReq
	done   chan struct{}
}

func (d *Device) listen(addr string, backlog int) (*listener, error) {
	ap, err := parseAddr(addr, true)
	if err != nil {
		return nil, err
	}
	if backlog <= 0 {
		backlog = 1
	}
	l := &listener{d: d, reqs: make(chan *connReq, backlog), done: make(chan struct{})}
	if l.h, err = d.register(l); err != nil {
		return nil, err
	}
	if rc := C.rdma_create_id(d.cmCh, &l.id, nil, C.RDMA_PS_TCP); rc != 0 {
		d.unregister(l.h)
		return nil, errnoErr("rdma_create_id", errnoOf())
	}
	C.gd_set_handle(l.id, C.uintptr_t(l.h))
	sa := sockaddr(ap)
	fail := func(what string, errno syscall.Errno) (*listener, error) {
		C.rdma_destroy_id(l.id)
		d.unregister(l.h)
		if errno == syscall.EADDRINUSE {
			return nil, fmt.Errorf("rdmacore: %s %v: %w", what, ap, errno)
		}
		return nil, errnoErr(what+" "+ap.String(), errno)
	}
	if C.rdma_bind_addr(l.id, sockaddrPtr(&sa)) != 0 {
		return fail("rdma_bind_addr", errnoOf())
	}
	if dev := idDevice(l.id); dev != "" && dev != d.name {
		C.rdma_destroy_id(l.id)
		d.unregister(l.h)
		return nil, fmt.Errorf("rdmacore: listen on %v: the address belongs to device %s, not %s: %w", ap, dev, d.name, verbs.ErrInvalidArgument)
	}
	// The backlog is kept here, where a request beyond it is rejected at
	// once; the kernel's may only drop requests, which the peer's
	// connection manager then retries until it times out.
	if C.rdma_listen(l.id, C.int(max(backlog, 128))) != 0 {
		return fail("rdma_listen", errnoOf())
	}
	l.addr = tcpAddrOf(C.rdma_get_local_addr(l.id))
	return l, nil
}

func (l *listener) cmEvent(ev *cmEvent) {
	if ev.typ != C.RDMA_CM_EVENT_CONNECT_REQUEST {
		return
	}
	if dev := idDevice(ev.id); dev != "" && dev != l.d.name {
		// A wildcard listener hears requests for every device.
		C.rdma_reject(ev.id, nil, 0)
		C.rdma_destroy_id(ev.id)
		return
	}
	r := &connReq{l: l, c: newConn(l.d, ev.id)}
	r.priv, r.respRes, r.initDepth = ev.privData, ev.respRes, ev.initDepth
	r.local, r.remote = tcpAddrOf(C.rdma_get_local_addr(ev.id)), tcpAddrOf(C.rdma_get_peer_addr(ev.id))
	h, err := l.d.register(r.c)
	if err != nil {
		C.rdma_reject(ev.id, nil, 0)
		C.rdma_destroy_id(ev.id)
		return
	}
	r.c.h = h
	C.gd_set_handle(ev.id, C.uintptr_t(h))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		r.Reject(nil)
		return
	}
	select {
	case l.reqs <- r:
	default:
		r.Reject(nil) // beyond the backlog
	}
}

func (l *listener) shutdown() { l.Close() }

func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	select {
	case r := <-l.reqs:
		return r, nil
	default:
	}
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.done:
		return nil, verbs.ErrClosed
	case <-l.d.closing:
		return nil, verbs.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *listener) Addr() net.Addr { return l.addr }

func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return verbs.ErrClosed
	}
	l.closed = true
	close(l.done)
	l.mu.Unlock()
	l.d.unregister(l.h)
	C.rdma_destroy_id(l.id)
	for {
		select {
		case r := <-l.reqs:
			r.Reject(nil)
		default:
			return nil
		}
	}
}

type connReq struct {
	l                  *listener
	c                  *conn
	priv               []byte
	respRes, initDepth int
	local, remote      *net.TCPAddr

	mu   sync.Mutex
	used bool
}

func (r *connReq) PrivateData() []byte     { return r.priv }
func (r *connReq) LocalAddr() net.Addr     { return r.local }
func (r *connReq) RemoteAddr() net.Addr    { return r.remote }
func (r *connReq) ResponderResources() int { return r.respRes }
func (r *connReq) InitiatorDepth() int     { return r.initDepth }

func (r *connReq) take() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return fmt.Errorf("rdmacore: connection request already answered: %w", verbs.ErrInvalidState)
	}
	r.used = true
	return nil
}

func (r *connReq) Reject(priv []byte) error {
	if err := r.l.d.checkPriv(privReject, priv); err != nil {
		return err
	}
	if err := r.take(); err != nil {
		return err
	}
	cp, n := cBytes(priv)
	rc := C.rdma_reject(r.c.id, cp, n)
	errno := errnoOf()
	C.free(cp)
	r.c.release()
	if rc != 0 {
		return errnoErr("rdma_reject", errno)
	}
	return nil
}

func (r *connReq) Accept(vqp verbs.QP, p verbs.ConnParam) (verbs.Conn, error) {
	d := r.l.d
	q, err := d.ownQP(vqp, p, privReply)
	if err != nil {
		return nil, err
	}
	if err := r.take(); err != nil {
		return nil, err
	}
	c := r.c
	c.qp = q
	ird, ord := p.ResponderResources, p.InitiatorDepth
	if ird == 0 {
		ird = r.respRes
	}
	if ord == 0 {
		ord = r.initDepth
	}
	ird, ord = clampRD(d, max(ird, 1)), clampRD(d, max(ord, 1))
	if err := c.moveQP(C.IBV_QPS_INIT, 0, 0); err == nil {
		if err = c.moveQP(C.IBV_QPS_RTR, ird, 0); err == nil {
			err = c.moveQP(C.IBV_QPS_RTS, 0, ord)
		}
		if err != nil {
			C.rdma_reject(c.id, nil, 0)
			c.release()
			return nil, err
		}
	} else {
		C.rdma_reject(c.id, nil, 0)
		c.release()
		return nil, err
	}
	param, free := connParam(q, p.PrivateData, ird, ord)
	defer free()
	if C.rdma_accept(c.id, param) != 0 {
		errno := errnoOf()
		c.release()
		return nil, errnoErr("rdma_accept", errno)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmTimeout)
	defer cancel()
	for {
		ev, err := c.next(ctx)
		if err != nil {
			c.release()
			q.markError()
			return nil, fmt.Errorf("rdmacore: accept: %w", verbs.ErrUnreachable)
		}
		switch ev.typ {
		case C.RDMA_CM_EVENT_ESTABLISHED:
			c.priv = r.priv
			c.established(ird, ord)
			return c, nil
		case C.RDMA_CM_EVENT_REJECTED, C.RDMA_CM_EVENT_CONNECT_ERROR, C.RDMA_CM_EVENT_UNREACHABLE, C.RDMA_CM_EVENT_DISCONNECTED:
			c.release()
			q.markError()
			return nil, fmt.Errorf("rdmacore: accept: %s (status %d): %w", cmEventName(ev.typ), ev.status, verbs.ErrUnreachable)
		}
	}
}

// ownQP checks that vqp is a QP of d that may be connected with p.
func (d *Device) ownQP(vqp verbs.QP, p verbs.ConnParam, kind privKind) (*qp, error) {
	if d.isClosed() {
		return nil, verbs.ErrClosed
	}
	q, ok := vqp.(*qp)
	if !ok || q.d != d {
		return nil, fmt.Errorf("rdmacore: a QP of another device or provider: %w", verbs.ErrInvalidArgument)
	}
	if err := d.checkPriv(kind, p.PrivateData); err != nil {
		return nil, err
	}
	if p.ResponderResources < 0 || p.InitiatorDepth < 0 {
		return nil, fmt.Errorf("rdmacore: negative IRD/ORD: %w", verbs.ErrInvalidArgument)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return nil, verbs.ErrClosed
	}
	if s := q.State(); q.conn != nil || (s != verbs.QPStateReset && s != verbs.QPStateInit) {
		return nil, fmt.Errorf("rdmacore: connect a QP in %v: %w", s, verbs.ErrInvalidState)
	}
	return q, nil
}

func clampRD(d *Device, n int) int {
	return min(n, d.attr.MaxIRD, d.attr.MaxORD, 255)
}

// cBytes copies b into C memory (nil for none) for librdmacm.
func cBytes(b []byte) (unsafe.Pointer, C.uint8_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return C.CBytes(b), C.uint8_t(len(b))
}

// retryCount is the transport retry count of connected QPs, the peer's
// included: the passive side's QP takes it from the REQ. 7 would be 7
// retries to the IB spec but retries without end to rxe, whose
// completer never counts 7 down: an op whose response or ACK stops
// coming would then end on neither side, with no error to report. 6
// ends it with IB_WC_RETRY_EXC_ERR (the kernel's RDS asks for 1).
const retryCount = 6

// connParam builds an rdma_conn_param in C memory.
func connParam(q *qp, priv []byte, ird, ord int) (*C.struct_rdma_conn_param, func()) {
	p := (*C.struct_rdma_conn_param)(C.calloc(1, C.sizeof_struct_rdma_conn_param))
	pd, n := cBytes(priv)
	p.private_data = pd
	p.private_data_len = n
	p.responder_resources = C.uint8_t(ird)
	p.initiator_depth = C.uint8_t(ord)
	p.retry_count = retryCount
	p.rnr_retry_count = 7
	p.qp_num = C.uint32_t(q.qpn)
	if q.srq != nil {
		p.srq = 1
	}
	return p, func() {
		C.free(pd)
		C.free(unsafe.Pointer(p))
	}
}

func (d *Device) connect(ctx context.Context, vqp verbs.QP, addr string, p verbs.ConnParam) (verbs.Conn, error) {
	q, err := d.ownQP(vqp, p, privRequest)
	if err != nil {
		return nil, err
	}
	dst, err := parseAddr(addr, false)
	if err != nil {
		return nil, err
	}
	var src *C.struct_sockaddr
	var srcSA C.struct_sockaddr_in
	if p.LocalAddr != "" {
		ap, err := parseAddr(p.LocalAddr, true)
		if err != nil {
			return nil, err
		}
		srcSA = sockaddr(ap)
		src = sockaddrPtr(&srcSA)
	}
	c := newConn(d, nil)
	c.qp = q
	if c.h, err = d.register(c); err != nil {
		return nil, err
	}
	if rc := C.rdma_create_id(d.cmCh, &c.id, nil, C.RDMA_PS_TCP); rc != 0 {
		d.unregister(c.h)
		return nil, errnoErr("rdma_create_id", errnoOf())
	}
	C.gd_set_handle(c.id, C.uintptr_t(c.h))
	fail := func(err error) (verbs.Conn, error) {
		c.release()
		return nil, err
	}
	dstSA := sockaddr(dst)
	timeoutMS := C.int(cmTimeout / time.Millisecond)
	if dl, ok := ctx.Deadline(); ok {
		timeoutMS = C.int(max(min(time.Until(dl), cmTimeout)/time.Millisecond, 1))
	}
	if C.rdma_resolve_addr(c.id, src, sockaddrPtr(&dstSA), timeoutMS) != 0 {
		return fail(errnoErr("rdma_resolve_addr "+addr, errnoOf()))
	}
	if err := c.expect(ctx, C.RDMA_CM_EVENT_ADDR_RESOLVED); err != nil {
		return fail(err)
	}
	if dev := idDevice(c.id); dev != d.name {
		return fail(fmt.Errorf("rdmacore: %s is reached through device %s, not %s: %w", addr, dev, d.name, verbs.ErrUnreachable))
	}
	if C.rdma_resolve_route(c.id, timeoutMS) != 0 {
		return fail(errnoErr("rdma_resolve_route "+addr, errnoOf()))
	}
	if err := c.expect(ctx, C.RDMA_CM_EVENT_ROUTE_RESOLVED); err != nil {
		return fail(err)
	}
	if err := c.moveQP(C.IBV_QPS_INIT, 0, 0); err != nil {
		return fail(err)
	}
	ird, ord := clampRD(d, max(p.ResponderResources, 1)), clampRD(d, max(p.InitiatorDepth, 1))
	param, free := connParam(q, p.PrivateData, ird, ord)
	rc := C.rdma_connect(c.id, param)
	errno := errnoOf()
	free()
	if rc != 0 {
		q.markError()
		if errno == syscall.ECONNREFUSED || errno == syscall.ECONNRESET {
			// Nobody listens (iWARP connects its TCP socket here): a
			// reject by the transport, not by the peer's consumer.
			return fail(fmt.Errorf("rdmacore: connect %s: %w (%w)", addr, &verbs.RejectError{}, errno))
		}
		return fail(errnoErr("rdma_connect "+addr, errno))
	}
	for {
		ev, err := c.next(ctx)
		if err != nil {
			q.markError()
			return fail(err)
		}
		switch ev.typ {
		case C.RDMA_CM_EVENT_CONNECT_RESPONSE:
			// An IB or RoCE connection of a QP librdmacm did not
			// create: move it to RTS and send the RTU.
			if err := c.moveQP(C.IBV_QPS_RTR, ird, 0); err != nil {
				return fail(err)
			}
			if err := c.moveQP(C.IBV_QPS_RTS, 0, ord); err != nil {
				return fail(err)
			}
			if C.rdma_establish(c.id) != 0 {
				return fail(errnoErr("rdma_establish", errnoOf()))
			}
			c.priv = ev.privData
			c.established(ird, ord)
			return c, nil
		case C.RDMA_CM_EVENT_ESTABLISHED:
			c.priv = ev.privData
			c.established(ird, ord)
			return c, nil
		case C.RDMA_CM_EVENT_REJECTED:
			q.markError()
			if isConsumerReject(d, ev) {
				d.st.connsRejected.Add(1)
				return fail(&verbs.RejectError{PrivateData: ev.privData})
			}
			// The peer's CM refused (no listener: IB REJ reason 8,
			// invalid service ID): a reject, but not by a consumer.
			return fail(fmt.Errorf("rdmacore: connect %s: rejected by the transport (status %d): %w", addr, ev.status, &verbs.RejectError{}))
		case C.RDMA_CM_EVENT_UNREACHABLE, C.RDMA_CM_EVENT_CONNECT_ERROR:
			q.markError()
			return fail(fmt.Errorf("rdmacore: connect %s: %s (status %d): %w", addr, cmEventName(ev.typ), ev.status, verbs.ErrUnreachable))
		}
	}
}

// isConsumerReject tells a peer's rdma_reject from a transport refusal:
// IB CM reason 28 (consumer defined); on iWARP every REJECTED is an MPA
// reject, as a missing listener fails rdma_connect itself.
func isConsumerReject(d *Device, ev *cmEvent) bool {
	if d.attr.Transport == verbs.TransportIWARP {
		return true
	}
	return ev.status == 28
}

func cmEventName(t int) string {
	return C.GoString(C.rdma_event_str(C.enum_rdma_cm_event_type(t)))
}
