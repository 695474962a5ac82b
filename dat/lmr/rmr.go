package lmr

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/internal/core"
)

// RMR is a remote memory region (DAT_RMR_HANDLE), a memory window.
type RMR core.RMR

// RMRParam is what RMR.Query reports (DAT_RMR_PARAM).
type RMRParam struct {
	PZ         *ia.PZ
	LMR        *LMR // the LMR it is bound to, nil while unbound
	LMRTriplet dat.LMRTriplet
	Privileges dat.MemPriv
	RMRContext dat.RMRContext
	VAType     dat.VAType
}

func (r *RMR) c() *core.RMR { return (*core.RMR)(r) }

// CreateRMR creates an unbound RMR in pz (dat_rmr_create).
func CreateRMR(pz *ia.PZ) (*RMR, error) {
	c, err := core.CreateRMR((*core.PZ)(pz))
	if err != nil {
		return nil, err
	}
	r := (*RMR)(c)
	c.SetHandle(r)
	return r, nil
}

// Bind binds the RMR to the range t of l with remote privileges priv,
// posting the bind on e's request queue (dat_rmr_bind), and returns the
// new rmr_context. The old context dies; requests posted on e afterwards
// may carry the new one to the peer at once. Completion is a
// DAT_RMR_BIND_COMPLETION_EVENT with cookie on e's request EVD. A t with
// SegmentLength 0 unbinds (l may then be nil).
func (r *RMR) Bind(l *LMR, t dat.LMRTriplet, priv dat.MemPriv, e *ep.EP, cookie dat.DTOCookie, flags dat.CompletionFlags) (dat.RMRContext, error) {
	return (*core.EP)(e).BindRMR(r.c(), (*core.LMR)(l), t, priv, cookie, flags)
}

// Unbind unbinds the RMR through e (a Bind of an empty range).
func (r *RMR) Unbind(e *ep.EP, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	_, err := r.Bind(nil, dat.LMRTriplet{}, 0, e, cookie, flags)
	return err
}

// Context returns the current rmr_context (0 while unbound).
func (r *RMR) Context() dat.RMRContext { return r.c().Context() }

// Query reports the RMR (dat_rmr_query).
func (r *RMR) Query() (RMRParam, error) {
	p, err := r.c().Query()
	if err != nil {
		return RMRParam{}, err
	}
	var l *LMR
	if p.LMR != nil {
		l = (*LMR)(p.LMR)
	}
	return RMRParam{PZ: (*ia.PZ)(p.PZ), LMR: l, LMRTriplet: p.LMRTriplet, Privileges: p.Privileges, RMRContext: p.RMRContext, VAType: p.VAType}, nil
}

// Triplet names n bytes at offset off of the bound range for a peer.
func (r *RMR) Triplet(off, n int) dat.RMRTriplet {
	p, _ := r.c().Query()
	return dat.RMRTriplet{VirtualAddress: p.LMRTriplet.VirtualAddress + dat.VAddr(off), SegmentLength: uint32(n), RMRContext: p.RMRContext}
}

// Free frees the RMR, unbinding it (dat_rmr_free).
func (r *RMR) Free() error { return r.c().Free() }

// HandleType implements dat.Handle.
func (r *RMR) HandleType() dat.HandleType { return dat.HandleTypeRMR }

// SetConsumerContext implements dat.Handle.
func (r *RMR) SetConsumerContext(ctx any) error {
	if err := r.c().LiveRMR("set_consumer_context"); err != nil {
		return err
	}
	return r.c().SetConsumerContext(ctx)
}

// ConsumerContext implements dat.Handle.
func (r *RMR) ConsumerContext() (any, error) {
	if err := r.c().LiveRMR("get_consumer_context"); err != nil {
		return nil, err
	}
	return r.c().ConsumerContext()
}

var _ dat.Handle = (*RMR)(nil)
