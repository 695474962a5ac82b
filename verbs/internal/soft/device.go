package soft

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// Stats are the device counters, updated atomically by the engine and the
// provider.
type Stats struct {
	QPsCreated, ConnsEstablished, ConnsRejected  atomic.Uint64
	TerminatesSent, TerminatesReceived           atomic.Uint64
	MalformedFrames, CRCErrors, ProtectionErrors atomic.Uint64
	CQOverflows, AsyncEventsDropped              atomic.Uint64
	BytesSent, BytesReceived                     atomic.Uint64
	InlineFrames, InlineSends                    atomic.Uint64
}

// Device is the provider-independent part of a software device. Providers
// embed it and add Listen, Connect and Close.
type Device struct {
	// Owner is the provider's device embedding this one, so that a
	// provider can get from an engine object back to its own.
	Owner any

	attr  verbs.DeviceAttr
	stags *stagTable
	// Counters are updated by the engine and the provider.
	Counters Stats

	evMu      sync.RWMutex // held for writing only to close events
	events    chan verbs.AsyncEvent
	closeOnce sync.Once
	closed    atomic.Bool

	mu      sync.Mutex
	nextQPN uint32
	qps     map[*QP]struct{}
	cqs     map[*CQ]struct{}
	pds     map[*PD]struct{}
	srqs    map[*SRQ]struct{}
}

// NewDevice returns a device with the given attributes.
func NewDevice(attr verbs.DeviceAttr) *Device {
	return &Device{
		attr:    attr,
		stags:   newSTagTable(),
		events:  make(chan verbs.AsyncEvent, verbs.AsyncEventQueueLen),
		nextQPN: 1,
		qps:     make(map[*QP]struct{}),
		cqs:     make(map[*CQ]struct{}),
		pds:     make(map[*PD]struct{}),
		srqs:    make(map[*SRQ]struct{}),
	}
}

func (d *Device) Name() string                         { return d.attr.Name }
func (d *Device) Query() verbs.DeviceAttr              { return d.attr }
func (d *Device) AsyncEvents() <-chan verbs.AsyncEvent { return d.events }

// Closed reports whether CloseObjects has run.
func (d *Device) Closed() bool { return d.closed.Load() }

// Stats implements verbs.Device: a snapshot of the counters.
func (d *Device) Stats() verbs.DeviceStats {
	s := &d.Counters
	return verbs.DeviceStats{
		QPsCreated: s.QPsCreated.Load(), ConnsEstablished: s.ConnsEstablished.Load(),
		ConnsRejected: s.ConnsRejected.Load(), TerminatesSent: s.TerminatesSent.Load(),
		TerminatesReceived: s.TerminatesReceived.Load(), MalformedFrames: s.MalformedFrames.Load(),
		CRCErrors: s.CRCErrors.Load(), ProtectionErrors: s.ProtectionErrors.Load(),
		CQOverflows: s.CQOverflows.Load(), AsyncEventsDropped: s.AsyncEventsDropped.Load(),
		BytesSent: s.BytesSent.Load(), BytesReceived: s.BytesReceived.Load(),
		InlineFrames: s.InlineFrames.Load(), InlineSends: s.InlineSends.Load(),
	}
}

// Event queues an async event without blocking; a full queue drops it and
// counts the drop.
func (d *Device) Event(ev verbs.AsyncEvent) {
	d.evMu.RLock()
	defer d.evMu.RUnlock()
	if d.closed.Load() {
		return
	}
	select {
	case d.events <- ev:
	default:
		d.Counters.AsyncEventsDropped.Add(1)
	}
}

// AllocPD implements verbs.Device.
func (d *Device) AllocPD() (verbs.PD, error) {
	if d.closed.Load() {
		return nil, verbs.ErrClosed
	}
	pd := &PD{dev: d}
	d.mu.Lock()
	if len(d.pds) >= d.attr.MaxPD {
		d.mu.Unlock()
		return nil, verbs.ErrNoResources
	}
	d.pds[pd] = struct{}{}
	d.mu.Unlock()
	return pd, nil
}

// CreateCQ implements verbs.Device.
func (d *Device) CreateCQ(attr verbs.CQAttr) (verbs.CQ, error) {
	if d.closed.Load() {
		return nil, verbs.ErrClosed
	}
	if attr.Depth <= 0 || attr.Depth > d.attr.MaxCQE {
		return nil, verbs.ErrInvalidArgument
	}
	cq := newCQ(d, attr.Depth)
	d.mu.Lock()
	if len(d.cqs) >= d.attr.MaxCQ {
		d.mu.Unlock()
		return nil, verbs.ErrNoResources
	}
	d.cqs[cq] = struct{}{}
	d.mu.Unlock()
	return cq, nil
}

// ResolveRemote checks a peer's access to [addr, addr+n) under stag for a
// QP of pd and returns the memory. need is AccessRemoteRead or
// AccessRemoteWrite. A fault is counted in Stats.ProtectionErrors. The
// caller releases the Hold as soon as its copy is done.
func (d *Device) ResolveRemote(stag uint32, pd *PD, addr, n uint64, need verbs.Access) ([]byte, Hold, Fault) {
	b, h, f := d.stags.check(stag, pd, addr, n, need)
	if f != FaultNone {
		d.Counters.ProtectionErrors.Add(1)
	}
	return b, h, f
}

// InvalidateRemote invalidates stag on behalf of a peer's Send with
// Invalidate. It fails for unknown STags, other PDs, and MRs not
// registered for remote access (RFC 5040 lets only remotely accessible
// STags be invalidated by the peer). Like every invalidation it waits for
// accesses in progress, so the caller must hold none to this STag.
func (d *Device) InvalidateRemote(stag uint32, pd *PD) Fault {
	r := d.stags.lookup(stag)
	switch {
	case r == nil:
		return FaultSTag
	case r.pd != pd:
		return FaultPD
	case r.ext.Load().access&(verbs.AccessRemoteRead|verbs.AccessRemoteWrite) == 0:
		return FaultAccess
	}
	if r.mw != nil {
		r.mw.invalidate()
	} else {
		r.invalidate()
	}
	return FaultNone
}

// CloseObjects destroys every QP, SRQ, CQ and PD of the device and closes
// the async event channel. Providers call it from their Close after
// stopping their listeners. It is idempotent.
func (d *Device) CloseObjects() {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		qps := make([]*QP, 0, len(d.qps))
		for qp := range d.qps {
			qps = append(qps, qp)
		}
		d.mu.Unlock()
		for _, qp := range qps {
			qp.Destroy()
		}
		d.evMu.Lock()
		d.closed.Store(true)
		close(d.events)
		d.evMu.Unlock()
		d.mu.Lock()
		for srq := range d.srqs {
			srq.close()
		}
		for cq := range d.cqs {
			cq.close()
		}
		for pd := range d.pds {
			pd.closed.Store(true)
		}
		d.mu.Unlock()
	})
}
