package core

import (
	"errors"
	"sync"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// LMR is a local memory region: a verbs MR plus the DAT view of it
// (privileges, contexts, the memory it owns if the provider allocated it).
type LMR struct {
	Object
	ia      *IA
	pz      *PZ
	mr      verbs.MR
	mem     *verbs.Mem // set when the LMR allocated its memory
	buf     []byte
	priv    dat.MemPriv
	memType dat.MemType
	va      dat.VAType
	ctx     dat.LMRContext
	rctx    dat.RMRContext // 0 without remote privileges
	addr    dat.VAddr      // the MR's address, fixed at registration: a triplet asks no interface
	mu      sync.Mutex     // serialises Free
}

// LMRParam is what lmr_query reports.
type LMRParam struct {
	MemType           dat.MemType
	Length            uint64
	PZ                *PZ
	Privileges        dat.MemPriv
	VAType            dat.VAType
	LMRContext        dat.LMRContext
	RMRContext        dat.RMRContext
	RegisteredSize    uint64
	RegisteredAddress dat.VAddr
}

// access maps DAT privileges to verbs access rights. verbs grants local
// read always and needs local write for remote write; for LMRs whose
// privileges verbs therefore cannot enforce (verbsEnforces), the DAT
// checks in CheckLocal enforce them exactly as asked. Every LMR may have
// windows bound to it when the device has them.
func (ia *IA) access(p dat.MemPriv) verbs.Access {
	var a verbs.Access
	if p&(dat.MemPrivLocalWrite|dat.MemPrivRemoteWrite) != 0 {
		a |= verbs.AccessLocalWrite
	}
	if p&dat.MemPrivRemoteWrite != 0 {
		a |= verbs.AccessRemoteWrite
	}
	if p&dat.MemPrivRemoteRead != 0 {
		a |= verbs.AccessRemoteRead
	}
	if ia.dattr.MaxMW > 0 {
		a |= verbs.AccessMWBind
	}
	return a
}

// verbsEnforces reports whether an MR registered with access(p) refuses
// every local use of its memory that p does not allow: p grants local
// read, which verbs cannot take away, and grants local write if it grants
// remote write, which in verbs implies it. Only then may a post leave the
// LMR's checks to a provider that checks SGLs (fastpath.SGLChecker).
func verbsEnforces(p dat.MemPriv) bool {
	return p&dat.MemPrivLocalRead != 0 && (p&dat.MemPrivRemoteWrite == 0 || p&dat.MemPrivLocalWrite != 0)
}

// CreateLMR registers buf (lmr_create with DAT_MEM_TYPE_VIRTUAL). mem, if
// set, is the allocation buf came from, freed with the LMR. With
// dat.VATypeVA triplets and peers name buf's bytes by their virtual
// address; with dat.VATypeZB by their offset from the start of buf's
// first page.
func CreateLMR(ia *IA, pz *PZ, buf []byte, mem *verbs.Mem, memType dat.MemType, priv dat.MemPriv, va dat.VAType) (*LMR, error) {
	const op = "lmr_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if err := pz.live(op); err != nil {
		return nil, err
	}
	if pz.ia != ia {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg5)
	}
	if len(buf) == 0 {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	if priv&^dat.MemPrivAll != 0 {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg6)
	}
	if va != dat.VATypeVA && va != dat.VATypeZB {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg7)
	}
	// Counted before verbs knows the MR, so that no post trusts the
	// provider with it.
	loose := !verbsEnforces(priv)
	if loose {
		pz.loose.Add(1)
	}
	var mr verbs.MR
	var err error
	if va == dat.VATypeZB {
		// Zero-based from the start of buf's first page, as the kernel's
		// fast registrations are (and as verbs lets every device do):
		// buf[0] is at its offset in that page.
		mr, err = pz.pd.RegMRAt(buf, verbs.ZeroBased(buf), ia.access(priv))
	} else {
		mr, err = pz.pd.RegMR(buf, ia.access(priv))
	}
	if err != nil {
		if loose {
			pz.loose.Add(-1)
		}
		code, sub := dat.InsufficientResources, dat.ResourceMemoryRegion
		if errors.Is(err, verbs.ErrInvalidArgument) {
			code, sub = dat.InvalidParameter, dat.InvalidArg4
		}
		return nil, dat.Wrap(op, code, sub, err)
	}
	l := &LMR{ia: ia, pz: pz, mr: mr, mem: mem, buf: buf, priv: priv, memType: memType, va: va, ctx: dat.LMRContext(mr.LKey()), addr: dat.VAddr(mr.Addr())}
	if priv&(dat.MemPrivRemoteRead|dat.MemPrivRemoteWrite) != 0 {
		l.rctx = dat.RMRContext(mr.RKey())
	}
	l.init(dat.HandleTypeLMR)
	if err := ia.adopt(op, &l.Object, rankLMR, l.destroy); err != nil {
		mr.Dereg()
		if loose {
			pz.loose.Add(-1)
		}
		return nil, err
	}
	pz.Use()
	ia.memMu.Lock()
	ia.lmrs.grow(stagIndex(l.ctx)).Store(l)
	ia.memMu.Unlock()
	return l, nil
}

func (l *LMR) live(op string) error {
	if l == nil {
		return InvalidHandle(op, dat.HandleTypeLMR)
	}
	return l.Live(op)
}

// LiveLMR returns DAT_INVALID_HANDLE for a nil or freed LMR.
func (l *LMR) LiveLMR(op string) error { return l.live(op) }

// Bytes returns the registered memory.
func (l *LMR) Bytes() []byte { return l.buf }

// Addr is the address of the first byte, as triplets name it.
func (l *LMR) Addr() dat.VAddr { return l.addr }

// Context returns the lmr_context.
func (l *LMR) Context() dat.LMRContext { return l.ctx }

// RMRContext returns the rmr_context (0 without remote privileges).
func (l *LMR) RMRContext() dat.RMRContext { return l.rctx }

// PZ returns the LMR's PZ.
func (l *LMR) PZ() *PZ { return l.pz }

// Privileges returns the LMR's privileges.
func (l *LMR) Privileges() dat.MemPriv { return l.priv }

// Query reports the LMR (lmr_query).
func (l *LMR) Query() (LMRParam, error) {
	if err := l.live("lmr_query"); err != nil {
		return LMRParam{}, err
	}
	n := uint64(len(l.buf))
	return LMRParam{
		MemType: l.memType, Length: n, PZ: l.pz, Privileges: l.priv, VAType: l.va,
		LMRContext: l.ctx, RMRContext: l.rctx, RegisteredSize: n, RegisteredAddress: l.Addr(),
	}, nil
}

// Free deregisters the LMR (lmr_free): DAT_INVALID_STATE / LMR_IN_USE
// while an RMR is bound to it.
func (l *LMR) Free() error {
	const op = "lmr_free"
	if err := l.live(op); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freed.Load() {
		return InvalidHandle(op, dat.HandleTypeLMR)
	}
	if err := l.mr.Dereg(); err != nil {
		if errors.Is(err, verbs.ErrInUse) {
			return dat.Wrap(op, dat.InvalidState, dat.InvalidStateLMRInUse, err)
		}
		return dat.Wrap(op, dat.InternalError, dat.NoSubtype, err)
	}
	l.finish()
	l.ia.release(&l.Object)
	return nil
}

func (l *LMR) finish() {
	l.freed.Store(true)
	l.ia.memMu.Lock()
	if e := l.ia.lmrs.at(stagIndex(l.ctx)); e != nil && e.Load() == l {
		e.Store(nil)
	}
	l.ia.memMu.Unlock()
	if !verbsEnforces(l.priv) {
		l.pz.loose.Add(-1)
	}
	l.pz.Unuse()
	if l.mem != nil {
		l.mem.Free()
	}
}

func (l *LMR) destroy() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freed.Load() {
		return
	}
	l.mr.Dereg() // RMRs went first in the cascade
	l.finish()
}

// lookupLMR returns the live LMR with context c.
func (ia *IA) lookupLMR(c dat.LMRContext) *LMR {
	e := ia.lmrs.at(stagIndex(c))
	if e == nil {
		return nil
	}
	if l := e.Load(); l != nil && l.ctx == c {
		return l
	}
	return nil
}

// stagIndex is the STag index of an LMR context: the verbs lkey without
// its 8-bit key.
func stagIndex(c dat.LMRContext) uint64 { return uint64(c) >> 8 }

// CheckLocal validates one local triplet of a DTO on an EP in pz and
// returns the SGE it stands for. need is MemPrivLocalRead for data that
// is sent or written, MemPrivLocalWrite for data that is received or read.
// An unknown context or a missing privilege is DAT_PRIVILEGES_VIOLATION,
// an LMR of another PZ DAT_PROTECTION_VIOLATION, a segment outside its LMR
// DAT_INVALID_PARAMETER, as the dat_ep_post_* man pages say. Over a
// provider that checks SGLs itself (fastpath.SGLChecker) the post paths call
// it only for a post that is refused, to name the fault the DAT way.
func (ia *IA) CheckLocal(op string, pz *PZ, t *dat.LMRTriplet, need dat.MemPriv, sge *verbs.SGE) error {
	l := ia.lookupLMR(t.LMRContext)
	if l == nil {
		return dat.NewError(op, dat.PrivilegesViolation, privSub(need))
	}
	if l.pz != pz {
		return dat.NewError(op, dat.ProtectionViolation, protSub(need))
	}
	if l.priv&need != need {
		return dat.NewError(op, dat.PrivilegesViolation, privSub(need))
	}
	base := uint64(l.mr.Addr())
	va := uint64(t.VirtualAddress)
	end := va + uint64(t.SegmentLength)
	if va < base || end < va || end > base+uint64(len(l.buf)) {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	}
	*sge = verbs.SGE{Addr: va, Length: t.SegmentLength, LKey: uint32(t.LMRContext)}
	return nil
}

func privSub(need dat.MemPriv) dat.Subtype {
	if need&dat.MemPrivLocalWrite != 0 {
		return dat.PrivilegesWrite
	}
	return dat.PrivilegesRead
}

func protSub(need dat.MemPriv) dat.Subtype {
	if need&dat.MemPrivLocalWrite != 0 {
		return dat.ProtectionWrite
	}
	return dat.ProtectionRead
}

// SyncCheck validates the triplets of lmr_sync_rdma_read/write: each must
// name memory of a live LMR of this IA. Nothing needs flushing.
func (ia *IA) SyncCheck(op string, iov []dat.LMRTriplet) error {
	if err := ia.live(op); err != nil {
		return err
	}
	if len(iov) == 0 {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	}
	for i := range iov {
		t := &iov[i]
		l := ia.lookupLMR(t.LMRContext)
		if l == nil {
			return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
		}
		base := uint64(l.mr.Addr())
		va, end := uint64(t.VirtualAddress), uint64(t.VirtualAddress)+uint64(t.SegmentLength)
		if va < base || end < va || end > base+uint64(len(l.buf)) {
			return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
		}
	}
	return nil
}
