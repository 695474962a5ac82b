//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

// Device is an opened RDMA device. It implements verbs.Device.
type Device struct {
	p     *Provider
	name  string
	ctx   *C.struct_ibv_context
	attr  verbs.DeviceAttr
	ports []Port
	// cqFixed: the device cannot resize CQs, so they are made with room
	// to grow (fixedCQDepth) and Resize moves only the verbs depth.
	cqFixed bool
	// busyPoll is the provider's BusyPoll option.
	busyPoll int

	cmCh   *C.struct_rdma_event_channel
	asyncF *pollFD
	cmFD   *pollFD
	loops  sync.WaitGroup
	bg     sync.WaitGroup // rdma_cm ids being destroyed

	events chan verbs.AsyncEvent

	mu      sync.Mutex
	closed  bool
	pds     map[*pd]struct{}
	cqs     map[*C.struct_ibv_cq]*cq
	qps     map[uint32]*qp
	srqs    map[*C.struct_ibv_srq]*srq
	cmIDs   map[uintptr]cmOwner // rdma_cm ids by handle
	nextID  uintptr
	closing chan struct{}

	st struct {
		qpsCreated, connsEstablished, connsRejected atomic.Uint64
		protErrs, cqOverflows, asyncDropped         atomic.Uint64
		bytesSent, bytesReceived                    atomic.Uint64
	}
}

// Port describes one port of a device.
type Port struct {
	Num       int
	State     PortState
	LinkLayer string // "InfiniBand" or "Ethernet"
	MTU       int    // active MTU in bytes
	GIDs      []netip.Addr
}

// PortState is ibv_port_state.
type PortState uint8

// Port states, as libibverbs numbers them.
const (
	PortNop         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

func (s PortState) String() string {
	switch s {
	case PortDown:
		return "DOWN"
	case PortInit:
		return "INIT"
	case PortArmed:
		return "ARMED"
	case PortActive:
		return "ACTIVE"
	case PortActiveDefer:
		return "ACTIVE_DEFER"
	}
	return "NOP"
}

var _ verbs.Device = (*Device)(nil)

func errnoOf() syscall.Errno { return syscall.Errno(C.gd_errno()) }

func newDevice(p *Provider, name string, ctx *C.struct_ibv_context) (*Device, error) {
	d := &Device{
		p: p, name: name, ctx: ctx, busyPoll: p.busyPoll,
		events:  make(chan verbs.AsyncEvent, verbs.AsyncEventQueueLen),
		pds:     make(map[*pd]struct{}),
		cqs:     make(map[*C.struct_ibv_cq]*cq),
		qps:     make(map[uint32]*qp),
		srqs:    make(map[*C.struct_ibv_srq]*srq),
		cmIDs:   make(map[uintptr]cmOwner),
		closing: make(chan struct{}),
	}
	if err := d.query(); err != nil {
		C.ibv_close_device(ctx)
		return nil, err
	}
	if err := d.startLoops(); err != nil {
		d.stopLoops()
		C.ibv_close_device(ctx)
		return nil, err
	}
	return d, nil
}

func (d *Device) query() error {
	var a C.struct_ibv_device_attr
	if rc := C.ibv_query_device(d.ctx, &a); rc != 0 {
		return errnoErr("ibv_query_device("+d.name+")", syscall.Errno(rc))
	}
	tr := verbs.TransportIB
	if d.ctx.device.transport_type == C.IBV_TRANSPORT_IWARP {
		tr = verbs.TransportIWARP
	}
	for i := 1; i <= int(a.phys_port_cnt); i++ {
		var pa C.struct_ibv_port_attr
		if rc := C.gd_query_port(d.ctx, C.uint8_t(i), &pa); rc != 0 {
			return errnoErr(fmt.Sprintf("ibv_query_port(%s, %d)", d.name, i), syscall.Errno(rc))
		}
		port := Port{Num: i, State: PortState(pa.state), LinkLayer: "InfiniBand", MTU: 128 << int(pa.active_mtu)}
		if pa.link_layer == C.IBV_LINK_LAYER_ETHERNET {
			port.LinkLayer = "Ethernet"
			if tr == verbs.TransportIB {
				tr = verbs.TransportRoCE
			}
		}
		n := min(int(pa.gid_tbl_len), 16)
		if n > 0 {
			gids := make([]C.union_ibv_gid, n)
			got := int(C.gd_query_port_gids(d.ctx, C.uint8_t(i), &gids[0], C.int(n)))
			for _, g := range gids[:got] {
				raw := *(*[16]byte)(unsafe.Pointer(&g))
				if raw == ([16]byte{}) {
					continue // an empty slot of the GID table
				}
				port.GIDs = append(port.GIDs, netip.AddrFrom16(raw))
			}
		}
		d.ports = append(d.ports, port)
	}
	privData := privLimit(tr, privRequest)
	d.attr = verbs.DeviceAttr{
		Name:        d.name,
		Provider:    ProviderName,
		Transport:   tr,
		FWVersion:   C.GoString(&a.fw_ver[0]),
		VendorID:    uint32(a.vendor_id),
		MaxMRSize:   uint64(a.max_mr_size),
		MaxQP:       int(a.max_qp),
		MaxQPWR:     int(a.max_qp_wr),
		MaxSGE:      min(int(a.max_sge), verbs.MaxSGE),
		MaxSGERead:  min(int(a.max_sge_rd), int(a.max_sge), verbs.MaxSGE),
		MaxCQ:       int(a.max_cq),
		MaxCQE:      int(a.max_cqe),
		MaxMR:       int(a.max_mr),
		MaxMW:       int(a.max_mw),
		MaxPD:       int(a.max_pd),
		MaxSRQ:      int(a.max_srq),
		MaxSRQWR:    int(a.max_srq_wr),
		MaxSRQSGE:   min(int(a.max_srq_sge), verbs.MaxSGE),
		MaxIRD:      int(a.max_qp_rd_atom),
		MaxORD:      int(a.max_qp_init_rd_atom),
		MaxInline:   int(C.gd_probe_inline(d.ctx)),
		MaxPrivData: privData,
	}
	d.cqFixed = C.gd_probe_resize(d.ctx) == 0
	if d.attr.MaxSGERead == 0 {
		d.attr.MaxSGERead = 1
	}
	return nil
}

// Name returns the device's name (rxe0, mlx5_0, ...).
func (d *Device) Name() string { return d.name }

// Query returns the device's attributes.
func (d *Device) Query() verbs.DeviceAttr { return d.attr }

// Ports describes the device's ports as they were when it was opened,
// with each State kept current by the port events (EventPortActive,
// EventPortErr).
func (d *Device) Ports() []Port {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.ports)
}

// setPortState records the state a port event reported.
func (d *Device) setPortState(num int, st PortState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.ports {
		if d.ports[i].Num == num {
			d.ports[i].State = st
		}
	}
}

// Stats returns the counters kept by this process for the device.
func (d *Device) Stats() verbs.DeviceStats {
	return verbs.DeviceStats{
		QPsCreated:         d.st.qpsCreated.Load(),
		ConnsEstablished:   d.st.connsEstablished.Load(),
		ConnsRejected:      d.st.connsRejected.Load(),
		ProtectionErrors:   d.st.protErrs.Load(),
		CQOverflows:        d.st.cqOverflows.Load(),
		AsyncEventsDropped: d.st.asyncDropped.Load(),
		BytesSent:          d.st.bytesSent.Load(),
		BytesReceived:      d.st.bytesReceived.Load(),
	}
}

// AsyncEvents delivers the device's asynchronous events.
func (d *Device) AsyncEvents() <-chan verbs.AsyncEvent { return d.events }

// postEvent queues ev, or counts it as dropped when nobody reads them.
func (d *Device) postEvent(ev verbs.AsyncEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	select {
	case d.events <- ev:
	default:
		d.st.asyncDropped.Add(1)
	}
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() (verbs.PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, verbs.ErrClosed
	}
	p := C.ibv_alloc_pd(d.ctx)
	if p == nil {
		return nil, errnoErr("ibv_alloc_pd", errnoOf())
	}
	pd := &pd{d: d, p: p, mrs: make(map[*mr]struct{}), mws: make(map[*mw]struct{})}
	d.pds[pd] = struct{}{}
	return pd, nil
}

// Listen starts a passive endpoint on addr.
func (d *Device) Listen(addr string, backlog int) (verbs.Listener, error) {
	return d.listen(addr, backlog)
}

// Connect connects qp to a listener at addr.
func (d *Device) Connect(ctx context.Context, qp verbs.QP, addr string, p verbs.ConnParam) (verbs.Conn, error) {
	return d.connect(ctx, qp, addr, p)
}

// Close tears down every object of the device and closes it.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return verbs.ErrClosed
	}
	d.closed = true
	close(d.closing)
	owners := make([]cmOwner, 0, len(d.cmIDs))
	for _, o := range d.cmIDs {
		owners = append(owners, o)
	}
	waited := make([]*cq, 0, len(d.cqs))
	for _, c := range d.cqs {
		waited = append(waited, c)
	}
	d.mu.Unlock()

	// A CQ's waiters return ErrClosed now, not when the CQ is destroyed.
	for _, c := range waited {
		c.mu.Lock()
		c.kickLocked(false)
		c.mu.Unlock()
	}

	for _, o := range owners {
		o.shutdown()
	}
	d.mu.Lock()
	qps := make([]*qp, 0, len(d.qps))
	for _, q := range d.qps {
		qps = append(qps, q)
	}
	d.mu.Unlock()
	for _, q := range qps {
		q.destroy(true)
	}
	d.mu.Lock()
	srqs := make([]*srq, 0, len(d.srqs))
	for _, s := range d.srqs {
		srqs = append(srqs, s)
	}
	cqs := make([]*cq, 0, len(d.cqs))
	for _, c := range d.cqs {
		cqs = append(cqs, c)
	}
	pds := make([]*pd, 0, len(d.pds))
	for p := range d.pds {
		pds = append(pds, p)
	}
	d.mu.Unlock()
	for _, s := range srqs {
		s.destroy(true)
	}
	for _, p := range pds {
		p.dealloc(true)
	}
	d.bg.Wait()
	d.stopLoops()
	for _, c := range cqs {
		c.destroy(true)
	}
	if d.cmCh != nil {
		C.rdma_destroy_event_channel(d.cmCh)
	}
	C.ibv_close_device(d.ctx)
	d.mu.Lock()
	close(d.events)
	d.mu.Unlock()
	return nil
}

// isClosed reports whether Close has begun.
func (d *Device) isClosed() bool {
	select {
	case <-d.closing:
		return true
	default:
		return false
	}
}
