package core

import (
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// PZ is a protection zone: a verbs PD plus a count of the EPs, LMRs, RMRs
// and SRQs created in it, so that pz_free can refuse while it is in use.
type PZ struct {
	Object
	ia    *IA
	pd    verbs.PD
	users atomic.Int64
	// loose counts the live LMRs of the PZ whose privileges verbs cannot
	// enforce (see verbsEnforces). While there are none, a provider that
	// checks SGLs at post time makes the same checks as DAT's CheckLocal,
	// and the post paths leave them to it.
	loose atomic.Int32
}

// CreatePZ creates a PZ (pz_create).
func CreatePZ(ia *IA) (*PZ, error) {
	const op = "pz_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	pd, err := ia.dev.AllocPD()
	if err != nil {
		return nil, dat.Wrap(op, dat.InsufficientResources, dat.ResourceProtectionDomain, err)
	}
	pz := &PZ{ia: ia, pd: pd}
	pz.init(dat.HandleTypePZ)
	if err := ia.adopt(op, &pz.Object, rankPZ, pz.destroy); err != nil {
		pd.Dealloc()
		return nil, err
	}
	return pz, nil
}

func (pz *PZ) live(op string) error {
	if pz == nil {
		return InvalidHandle(op, dat.HandleTypePZ)
	}
	return pz.Live(op)
}

// LivePZ returns DAT_INVALID_HANDLE for a nil or freed PZ.
func (pz *PZ) LivePZ(op string) error { return pz.live(op) }

// IA returns the PZ's IA.
func (pz *PZ) IA() *IA { return pz.ia }

// PD returns the verbs PD.
func (pz *PZ) PD() verbs.PD { return pz.pd }

// Use and Unuse count an object created in the PZ.
func (pz *PZ) Use()   { pz.users.Add(1) }
func (pz *PZ) Unuse() { pz.users.Add(-1) }

// Free frees the PZ (pz_free).
func (pz *PZ) Free() error {
	const op = "pz_free"
	if err := pz.live(op); err != nil {
		return err
	}
	if pz.users.Load() > 0 {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStatePZInUse)
	}
	if !pz.freed.CompareAndSwap(false, true) {
		return InvalidHandle(op, dat.HandleTypePZ)
	}
	pz.ia.release(&pz.Object)
	if err := pz.pd.Dealloc(); err != nil {
		return dat.Wrap(op, dat.InvalidState, dat.InvalidStatePZInUse, err)
	}
	return nil
}

func (pz *PZ) destroy() {
	if pz.freed.CompareAndSwap(false, true) {
		pz.pd.Dealloc() // the device close frees what is still in use
	}
}
