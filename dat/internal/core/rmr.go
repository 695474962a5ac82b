package core

import (
	"sync"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// RMR is a remote memory region: a verbs memory window. A bind gives it a
// fresh context granting exactly the bound range and rights; an unbind, a
// rebind or the peer's Send with Invalidate kills the old one.
type RMR struct {
	Object
	ia *IA
	pz *PZ
	mw verbs.MW

	mu      sync.Mutex
	lmr     *LMR           // guarded by mu
	triplet dat.LMRTriplet // guarded by mu
	priv    dat.MemPriv    // guarded by mu
	ctx     dat.RMRContext // guarded by mu
}

// RMRParam is what rmr_query reports.
type RMRParam struct {
	PZ         *PZ
	LMR        *LMR
	LMRTriplet dat.LMRTriplet
	Privileges dat.MemPriv
	RMRContext dat.RMRContext
	VAType     dat.VAType
}

// CreateRMR creates an unbound RMR in pz (rmr_create). Without memory
// windows in the verbs device it fails with DAT_MODEL_NOT_SUPPORTED.
func CreateRMR(pz *PZ) (*RMR, error) {
	const op = "rmr_create"
	if err := pz.live(op); err != nil {
		return nil, err
	}
	ia := pz.ia
	if ia.dattr.MaxMW == 0 {
		return nil, dat.NewError(op, dat.ModelNotSupported, dat.NoSubtype)
	}
	mw, err := pz.pd.AllocMW()
	if err != nil {
		return nil, dat.Wrap(op, dat.InsufficientResources, dat.ResourceMemoryRegion, err)
	}
	r := &RMR{ia: ia, pz: pz, mw: mw}
	r.init(dat.HandleTypeRMR)
	if err := ia.adopt(op, &r.Object, rankRMR, r.destroy); err != nil {
		mw.Dealloc()
		return nil, err
	}
	pz.Use()
	return r, nil
}

func (r *RMR) live(op string) error {
	if r == nil {
		return InvalidHandle(op, dat.HandleTypeRMR)
	}
	return r.Live(op)
}

// LiveRMR returns DAT_INVALID_HANDLE for a nil or freed RMR.
func (r *RMR) LiveRMR(op string) error { return r.live(op) }

// setBinding records a posted bind or unbind; r.mu is held.
func (r *RMR) setBinding(lmr *LMR, t dat.LMRTriplet, priv dat.MemPriv, unbind bool) {
	r.ia.memMu.Lock()
	if r.ctx != 0 && r.ia.rmrs[r.ctx] == r {
		delete(r.ia.rmrs, r.ctx)
	}
	if unbind {
		r.lmr, r.triplet, r.priv, r.ctx = nil, dat.LMRTriplet{}, 0, 0
	} else {
		r.lmr, r.triplet, r.priv, r.ctx = lmr, t, priv, dat.RMRContext(r.mw.RKey())
		if r.ctx != 0 {
			r.ia.rmrs[r.ctx] = r
		}
	}
	r.ia.memMu.Unlock()
}

// Context returns the current rmr_context (0 while unbound).
func (r *RMR) Context() dat.RMRContext {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctx
}

// Query reports the RMR (rmr_query).
func (r *RMR) Query() (RMRParam, error) {
	if err := r.live("rmr_query"); err != nil {
		return RMRParam{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx := r.ctx
	if ctx != 0 && dat.RMRContext(r.mw.RKey()) != ctx {
		ctx = 0 // invalidated by the peer
	}
	return RMRParam{PZ: r.pz, LMR: r.lmr, LMRTriplet: r.triplet, Privileges: r.priv, RMRContext: ctx, VAType: dat.VATypeVA}, nil
}

// Free frees the RMR, unbinding it first (rmr_free).
func (r *RMR) Free() error {
	const op = "rmr_free"
	if err := r.live(op); err != nil {
		return err
	}
	if !r.destroyRMR() {
		return InvalidHandle(op, dat.HandleTypeRMR)
	}
	r.ia.release(&r.Object)
	return nil
}

func (r *RMR) destroy() { r.destroyRMR() }

func (r *RMR) destroyRMR() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.freed.CompareAndSwap(false, true) {
		return false
	}
	r.setBinding(nil, dat.LMRTriplet{}, 0, true)
	r.mw.Dealloc()
	r.pz.Unuse()
	return true
}

// rmrSink resolves the local RMR triplet of a read-to-RMR into an SGE of
// the LMR the RMR is bound to. The RMR must be live, bound, of the EP's
// PZ, cover the segment and allow remote write (the peer's data lands in
// it, as an iWARP Read's sink STag would let it).
func (ia *IA) rmrSink(op string, pz *PZ, t *dat.RMRTriplet, sge *verbs.SGE) error {
	ia.memMu.RLock()
	r := ia.rmrs[t.RMRContext]
	ia.memMu.RUnlock()
	if r == nil {
		return dat.NewError(op, dat.PrivilegesViolation, dat.PrivilegesWrite)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pz != pz {
		return dat.NewError(op, dat.ProtectionViolation, dat.ProtectionWrite)
	}
	if r.priv&dat.MemPrivRemoteWrite == 0 || r.lmr == nil {
		return dat.NewError(op, dat.PrivilegesViolation, dat.PrivilegesWrite)
	}
	va, end := uint64(t.VirtualAddress), uint64(t.VirtualAddress)+uint64(t.SegmentLength)
	base := uint64(r.triplet.VirtualAddress)
	if va < base || end < va || end > base+uint64(r.triplet.SegmentLength) {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	*sge = verbs.SGE{Addr: va, Length: t.SegmentLength, LKey: uint32(r.lmr.ctx)}
	return nil
}
