package soft

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// PD implements verbs.PD. It counts the objects created in it so that
// Dealloc can refuse while any remain.
type PD struct {
	dev    *Device
	users  atomic.Int64
	closed atomic.Bool
}

// Device returns the PD's device.
func (pd *PD) Device() *Device { return pd.dev }

func (pd *PD) live() error {
	if pd.closed.Load() {
		return verbs.ErrClosed
	}
	return nil
}

// RegMR implements verbs.PD.
func (pd *PD) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	return pd.regMR(buf, verbs.AddrOf(buf), access)
}

// RegMRAt implements verbs.PD. Every check of a region works on its
// extent's base, so an MR at another address needs nothing else; the
// page rule is checked all the same, so that code written against a
// soft provider also runs on a kernel device.
func (pd *PD) RegMRAt(buf []byte, iova uint64, access verbs.Access) (verbs.MR, error) {
	if !verbs.IOVAValid(buf, iova) {
		if err := pd.live(); err != nil {
			return nil, err
		}
		return nil, verbs.ErrInvalidArgument
	}
	return pd.regMR(buf, iova, access)
}

func (pd *PD) regMR(buf []byte, base uint64, access verbs.Access) (verbs.MR, error) {
	if err := pd.live(); err != nil {
		return nil, err
	}
	if !access.Valid() || uint64(len(buf)) > pd.dev.attr.MaxMRSize {
		return nil, verbs.ErrInvalidArgument
	}
	mr := &MR{pd: pd, ext: extent{base: base, buf: buf, access: access}}
	mr.region.pd = pd
	mr.region.ext.Store(&mr.ext)
	stag, err := pd.dev.stags.add(&mr.region)
	if err != nil {
		return nil, err
	}
	mr.stag = stag
	pd.users.Add(1)
	return mr, nil
}

// AllocMW implements verbs.PD.
func (pd *PD) AllocMW() (verbs.MW, error) {
	if err := pd.live(); err != nil {
		return nil, err
	}
	mw := &MW{pd: pd}
	mw.region.pd = pd
	mw.region.mw = mw
	if _, err := pd.dev.stags.add(&mw.region); err != nil {
		return nil, err
	}
	mw.region.valid.Store(false) // unbound until OpBindMW
	pd.users.Add(1)
	return mw, nil
}

// CreateSRQ implements verbs.PD.
func (pd *PD) CreateSRQ(attr verbs.SRQAttr) (verbs.SRQ, error) {
	if err := pd.live(); err != nil {
		return nil, err
	}
	a := &pd.dev.attr
	if attr.MaxWR <= 0 || attr.MaxWR > a.MaxSRQWR || attr.MaxSGE < 0 || attr.MaxSGE > a.MaxSRQSGE || attr.Limit < 0 || attr.Limit > attr.MaxWR {
		return nil, verbs.ErrInvalidArgument
	}
	srq := newSRQ(pd, attr)
	d := pd.dev
	d.mu.Lock()
	if len(d.srqs) >= a.MaxSRQ {
		d.mu.Unlock()
		return nil, verbs.ErrNoResources
	}
	d.srqs[srq] = struct{}{}
	d.mu.Unlock()
	pd.users.Add(1)
	return srq, nil
}

// Dealloc implements verbs.PD.
func (pd *PD) Dealloc() error {
	if pd.users.Load() != 0 {
		return verbs.ErrInUse
	}
	if !pd.closed.CompareAndSwap(false, true) {
		return verbs.ErrClosed
	}
	pd.dev.mu.Lock()
	delete(pd.dev.pds, pd)
	pd.dev.mu.Unlock()
	return nil
}

// MR implements verbs.MR.
type MR struct {
	region
	ext     extent
	pd      *PD
	stag    uint32 // fixed for an MR
	mu      sync.Mutex
	windows int // memory windows bound into this MR
	dereg   bool
}

func (mr *MR) LKey() uint32         { return mr.stag }
func (mr *MR) RKey() uint32         { return mr.stag }
func (mr *MR) Addr() uint64         { return mr.ext.base }
func (mr *MR) Bytes() []byte        { return mr.ext.buf }
func (mr *MR) Access() verbs.Access { return mr.ext.access }
func (mr *MR) PD() verbs.PD         { return mr.pd }

// Invalidate implements verbs.MR.
func (mr *MR) Invalidate() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.dereg {
		return verbs.ErrClosed
	}
	mr.region.invalidate()
	return nil
}

// Dereg implements verbs.MR.
func (mr *MR) Dereg() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.dereg {
		return verbs.ErrClosed
	}
	if mr.windows > 0 {
		return verbs.ErrInUse
	}
	mr.dereg = true
	mr.pd.dev.stags.remove(&mr.region)
	mr.pd.users.Add(-1)
	return nil
}

// MW implements verbs.MW: a region whose range, rights and key change with
// every bind.
type MW struct {
	region
	pd     *PD
	mu     sync.Mutex // serialises bind, invalidate and dealloc
	freed  bool
	parent *MR // the MR the window is bound into, while bound
}

// RKey implements verbs.MW.
func (mw *MW) RKey() uint32 {
	if !mw.region.valid.Load() {
		return 0
	}
	return mw.region.stag.Load()
}

func (mw *MW) PD() verbs.PD { return mw.pd }

// Dealloc implements verbs.MW.
func (mw *MW) Dealloc() error {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.freed {
		return verbs.ErrClosed
	}
	mw.freed = true
	mw.unbindLocked()
	mw.pd.dev.stags.remove(&mw.region)
	mw.pd.users.Add(-1)
	return nil
}

// unbindLocked ends the current binding and waits for accesses through it.
func (mw *MW) unbindLocked() {
	mw.region.invalidate()
	if p := mw.parent; p != nil {
		p.mu.Lock()
		p.windows--
		p.mu.Unlock()
		mw.parent = nil
	}
}

// bind binds the window per b; it runs when OpBindMW is posted so that the
// new key is known to the caller before any later Send carries it.
func (mw *MW) bind(pd *PD, b *verbs.MWBind) verbs.WCStatus {
	mr, ok := b.MR.(*MR)
	if !ok || mr.pd != pd || mw.pd != pd {
		return verbs.WCMWBindErr
	}
	me := &mr.ext
	if me.access&verbs.AccessMWBind == 0 || !b.Access.Valid() || b.Access&verbs.AccessMWBind != 0 {
		return verbs.WCMWBindErr
	}
	// A window may grant remote write only over memory the MR lets be written.
	if b.Access&verbs.AccessRemoteWrite != 0 && me.access&verbs.AccessLocalWrite == 0 {
		return verbs.WCMWBindErr
	}
	if b.Addr+b.Length < b.Addr || b.Addr < me.base || b.Addr+b.Length > me.base+uint64(len(me.buf)) {
		return verbs.WCMWBindErr
	}
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.freed {
		return verbs.WCMWBindErr
	}
	mr.mu.Lock()
	if mr.dereg || !mr.region.valid.Load() {
		mr.mu.Unlock()
		return verbs.WCMWBindErr
	}
	mr.windows++
	mr.mu.Unlock()
	mw.unbindLocked()
	off := b.Addr - me.base
	mw.region.ext.Store(&extent{base: b.Addr, buf: me.buf[off : off+b.Length : off+b.Length], access: b.Access})
	mw.parent = mr
	mw.pd.dev.stags.rekey(&mw.region)
	return verbs.WCSuccess
}

// invalidate kills the window's current key (OpLocalInv or a peer's
// Send with Invalidate).
func (mw *MW) invalidate() {
	mw.mu.Lock()
	mw.unbindLocked()
	mw.mu.Unlock()
}
