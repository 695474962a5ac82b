package core

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// DefaultAsyncQLen is the queue length of the async EVD ia_open creates.
const DefaultAsyncQLen = 64

// Destroy ranks: an abrupt ia_close destroys children in ascending rank,
// so that users go before what they use (DAT's cascade order).
const (
	rankSP = iota
	rankCR
	rankEP
	rankRMR
	rankLMR
	rankSRQ
	rankEVD
	rankCNO
	rankPZ
)

type child struct {
	rank    int
	destroy func()
}

// IA is an open interface adapter: a verbs device, its address, the
// objects created on it and its async event stream.
type IA struct {
	Object
	entry dat.Entry
	dev   verbs.Device
	dattr verbs.DeviceAttr

	async *EVD
	// asyncHandle sets async's handle, once (AsyncEVD).
	asyncHandle sync.Once

	mu       sync.Mutex
	closed   bool
	children map[*Object]child // guarded by mu
	nullCQ   verbs.CQ          // CQ of queues without an EVD; created on first use; guarded by mu
	psps     map[*SP]struct{}  // guarded by mu

	owners ownerTable

	ownMu sync.RWMutex
	byQPN map[uint32]*EP // guarded by ownMu
	// byQPNGen counts the changes of byQPN, made under ownMu: an EVD's
	// answer from byQPN stands while it has not moved (EVD.epByQPN).
	byQPNGen atomic.Uint64

	memMu sync.RWMutex
	// lmrs finds an LMR by the STag index of its context (the context's
	// upper 24 bits: the verbs key byte is the low 8) without a lock, as
	// every DTO segment does; entries are written under memMu.
	lmrs atomicTable[LMR]
	rmrs map[dat.RMRContext]*RMR // guarded by memMu

	hookMu sync.Mutex
	hooks  map[any]func(verbs.AsyncEvent) // verbs object → handler; guarded by hookMu

	asyncDone chan struct{}
}

// OpenIA opens the IA of entry on dev (already opened) with an async EVD
// of at least asyncQLen events, and starts the goroutine that turns the
// device's async events into DAT ones.
func OpenIA(entry dat.Entry, dev verbs.Device, asyncQLen int) (*IA, error) {
	if asyncQLen <= 0 {
		asyncQLen = DefaultAsyncQLen
	}
	ia := &IA{
		entry: entry, dev: dev, dattr: dev.Query(),
		children:  make(map[*Object]child),
		psps:      make(map[*SP]struct{}),
		byQPN:     make(map[uint32]*EP),
		rmrs:      make(map[dat.RMRContext]*RMR),
		hooks:     make(map[any]func(verbs.AsyncEvent)),
		asyncDone: make(chan struct{}),
	}
	ia.init(dat.HandleTypeIA)
	ia.owners.init()
	async, err := newEVD(ia, asyncQLen, nil, dat.EVDAsync, false)
	if err != nil {
		dev.Close()
		return nil, err
	}
	ia.async = async
	go ia.routineAsync()
	return ia, nil
}

func (ia *IA) live(op string) error {
	if ia == nil {
		return InvalidHandle(op, dat.HandleTypeIA)
	}
	return ia.Live(op)
}

// Live returns DAT_INVALID_HANDLE for a nil or closed IA.
func (ia *IA) LiveIA(op string) error { return ia.live(op) }

// Entry returns the registry entry the IA was opened from.
func (ia *IA) Entry() dat.Entry { return ia.entry }

// Device returns the verbs device.
func (ia *IA) Device() verbs.Device { return ia.dev }

// DeviceAttr returns the verbs device's attributes.
func (ia *IA) DeviceAttr() verbs.DeviceAttr { return ia.dattr }

// AsyncEVD returns the EVD that receives the IA's async events. The
// package of the EVD type (dat/evd, which builds on IAs and so cannot be
// called from ia_open) makes its handle with mk, the first time: events
// carry it (Event.EVD), as every other EVD's.
func (ia *IA) AsyncEVD(mk func(*EVD) dat.Handle) *EVD {
	ia.asyncHandle.Do(func() { ia.async.SetHandle(mk(ia.async)) })
	return ia.async
}

// adopt records a child so that an abrupt close destroys it; it fails
// once the IA is closed.
func (ia *IA) adopt(op string, o *Object, rank int, destroy func()) error {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if ia.closed {
		return InvalidHandle(op, dat.HandleTypeIA)
	}
	ia.children[o] = child{rank: rank, destroy: destroy}
	return nil
}

// release forgets a freed child.
func (ia *IA) release(o *Object) {
	ia.mu.Lock()
	delete(ia.children, o)
	ia.mu.Unlock()
}

// hook routes the device's async events about obj (a QP, CQ or SRQ) to fn.
func (ia *IA) hook(obj any, fn func(verbs.AsyncEvent)) {
	ia.hookMu.Lock()
	if fn == nil {
		delete(ia.hooks, obj)
	} else {
		ia.hooks[obj] = fn
	}
	ia.hookMu.Unlock()
}

// NullCQ returns the CQ that backs an EP queue without an EVD: nothing is
// ever posted to such a queue, so the CQ stays empty.
func (ia *IA) NullCQ() (verbs.CQ, error) {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	if ia.nullCQ == nil {
		cq, err := ia.dev.CreateCQ(verbs.CQAttr{Depth: 1})
		if err != nil {
			return nil, err
		}
		ia.nullCQ = cq
	}
	return ia.nullCQ, nil
}

// Close closes the IA (ia_close). Graceful fails with DAT_INVALID_STATE /
// IA_IN_USE while objects other than the async EVD exist; abrupt destroys
// them all (waiters get DAT_ABORT), then the device.
func (ia *IA) Close(flags dat.CloseFlags) error {
	const op = "ia_close"
	if err := ia.live(op); err != nil {
		return err
	}
	if flags != dat.CloseAbrupt && flags != dat.CloseGraceful {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	ia.mu.Lock()
	if ia.closed {
		ia.mu.Unlock()
		return InvalidHandle(op, dat.HandleTypeIA)
	}
	if flags == dat.CloseGraceful && len(ia.children) > 0 {
		ia.mu.Unlock()
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateIAInUse)
	}
	ia.closed = true
	kids := make([]child, 0, len(ia.children))
	for _, c := range ia.children {
		kids = append(kids, c)
	}
	ia.children = map[*Object]child{}
	ia.mu.Unlock()
	ia.freed.Store(true)
	slices.SortStableFunc(kids, func(a, b child) int { return a.rank - b.rank })
	for _, c := range kids {
		c.destroy()
	}
	ia.async.destroy()
	ia.dev.Close() // closes the async event channel: routineAsync ends
	<-ia.asyncDone
	return nil
}

// Query returns the IA's attributes (ia_query).
func (ia *IA) Query() (dat.IAAttr, dat.ProviderAttr, error) {
	if err := ia.live("ia_query"); err != nil {
		return dat.IAAttr{}, dat.ProviderAttr{}, err
	}
	a := &ia.dattr
	maxMsg := uint64(1<<32 - 1)
	iaAttr := dat.IAAttr{
		AdapterName: a.Name, VendorName: a.Provider, HardwareVersion: a.FWVersion,
		Address: ia.entry.Addr, MaxEPs: a.MaxQP, MaxDTOPerEP: a.MaxQPWR,
		MaxRDMAReadPerEPIn: a.MaxIRD, MaxRDMAReadPerEPOut: a.MaxORD,
		MaxEVDs: a.MaxCQ, MaxEVDQLen: a.MaxCQE, MaxIOVSegmentsPerDTO: a.MaxSGE,
		MaxLMRs: a.MaxMR, MaxLMRBlockSize: a.MaxMRSize, MaxLMRVirtualAddress: ^uint64(0),
		MaxPZs: a.MaxPD, MaxMessageSize: maxMsg, MaxRDMASize: maxMsg, MaxRMRs: a.MaxMW,
		MaxRMRTargetAddress: ^uint64(0), MaxSRQs: a.MaxSRQ, MaxEPPerSRQ: a.MaxQP,
		MaxRecvPerSRQ: a.MaxSRQWR, MaxIOVSegmentsPerRead: a.MaxSGERead,
		MaxIOVSegmentsPerWrite: a.MaxSGE, MaxRDMAReadIn: a.MaxIRD, MaxRDMAReadOut: a.MaxORD,
		ZBSupported: true,
	}
	pattr := dat.ProviderAttr{
		ProviderName: ia.entry.Provider, ProviderVersionMajor: 1, DAPLVersionMajor: dat.VersionMajor,
		DAPLVersionMinor: dat.VersionMinor, LMRMemTypes: []dat.MemType{dat.MemTypeVirtual, dat.MemTypeLMR},
		CompletionFlagsSupported: dat.CompletionSuppress | dat.CompletionSolicitedWait | dat.CompletionUnsignalled |
			dat.CompletionBarrierFence | dat.CompletionEVDThreshold,
		IsThreadSafe: true, MaxPrivateDataSize: min(a.MaxPrivData, verbs.MaxPrivateData),
		OptimalBufferAlignment: dat.OptimalAlignment, SRQSupported: a.MaxSRQ > 0,
		RDMAReadLMRRMRContextExposure: a.Transport == verbs.TransportIWARP,
		RMRSupported:                  a.MaxMW > 0,
		// TRANSPORT names the device's wire (verbs.Transport): a
		// consumer that must speak like the kernel on IB and RoCE, whose
		// conventions differ from iWARP's, tells them apart by it.
		Specific: map[string]string{"DAT_IB_RDMA_READ": "TRUE", "DEVICE": a.Name, "TRANSPORT": a.Transport.String()},
	}
	return iaAttr, pattr, nil
}

// routineAsync turns the device's async events into DAT events until the
// device closes its channel.
func (ia *IA) routineAsync() {
	defer close(ia.asyncDone)
	for ev := range ia.dev.AsyncEvents() {
		var key any
		switch {
		case ev.QP != nil:
			key = ev.QP
		case ev.CQ != nil:
			key = ev.CQ
		case ev.SRQ != nil:
			key = ev.SRQ
		}
		if key == nil {
			if ev.Type == verbs.EventDeviceFatal {
				ia.PostAsync(dat.Event{Number: dat.AsyncErrorIACatastrophic, Async: dat.AsyncErrorData{Handle: ia.handle, Reason: dat.ReasonCatastrophic, Err: ev.Err}})
			}
			continue
		}
		ia.hookMu.Lock()
		fn := ia.hooks[key]
		ia.hookMu.Unlock()
		if fn != nil {
			fn(ev)
		}
	}
}

// PostAsync queues an async event on the IA's async EVD; a full async EVD
// loses it (there is nowhere left to report the overflow).
func (ia *IA) PostAsync(ev dat.Event) {
	ia.async.pushSoft(&ev, false)
}
