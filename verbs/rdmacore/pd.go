//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

type pd struct {
	d *Device
	p *C.struct_ibv_pd

	mu      sync.Mutex
	dead    bool
	mrs     map[*mr]struct{}
	mws     map[*mw]struct{}
	qps     int
	srqs    int
	srqList map[*srq]struct{}
}

func (p *pd) Dealloc() error {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return verbs.ErrClosed
	}
	if len(p.mrs) > 0 || len(p.mws) > 0 || p.qps > 0 || p.srqs > 0 {
		p.mu.Unlock()
		return fmt.Errorf("rdmacore: dealloc PD: %w", verbs.ErrInUse)
	}
	p.mu.Unlock()
	return p.dealloc(false)
}

// dealloc frees the PD; with force (device close) it frees its MRs and
// MWs first.
func (p *pd) dealloc(force bool) error {
	p.mu.Lock()
	if p.dead {
		p.mu.Unlock()
		return verbs.ErrClosed
	}
	mws := make([]*mw, 0, len(p.mws))
	for w := range p.mws {
		mws = append(mws, w)
	}
	mrs := make([]*mr, 0, len(p.mrs))
	for m := range p.mrs {
		mrs = append(mrs, m)
	}
	p.mu.Unlock()
	if force {
		for _, w := range mws {
			w.Dealloc()
		}
		for _, m := range mrs {
			m.dereg(true)
		}
	}
	p.mu.Lock()
	p.dead = true
	p.mu.Unlock()
	rc := C.ibv_dealloc_pd(p.p)
	p.d.mu.Lock()
	delete(p.d.pds, p)
	p.d.mu.Unlock()
	if rc != 0 {
		return errnoErr("ibv_dealloc_pd", syscall.Errno(rc))
	}
	return nil
}

func (p *pd) alive() error {
	if p.d.isClosed() {
		return verbs.ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return verbs.ErrClosed
	}
	return nil
}

func ibvAccess(a verbs.Access) C.int {
	var r C.int
	if a&verbs.AccessLocalWrite != 0 {
		r |= C.IBV_ACCESS_LOCAL_WRITE
	}
	if a&verbs.AccessRemoteWrite != 0 {
		r |= C.IBV_ACCESS_REMOTE_WRITE
	}
	if a&verbs.AccessRemoteRead != 0 {
		r |= C.IBV_ACCESS_REMOTE_READ
	}
	if a&verbs.AccessMWBind != 0 {
		r |= C.IBV_ACCESS_MW_BIND
	}
	return r
}

type mr struct {
	pd     *pd
	m      *C.struct_ibv_mr
	buf    []byte
	iova   uint64 // the address of buf[0] in the MR's address space
	access verbs.Access
	pin    runtime.Pinner

	lkey, rkey uint32

	mu          sync.Mutex
	dead        bool
	invalidated bool
	mws         int
}

// RegMR registers buf. Go memory is pinned until Dereg, so that the
// garbage collector never moves or frees what the device may access;
// memory from verbs.AllocMem is outside the Go heap and needs no pin.
func (p *pd) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	return p.regMR(buf, verbs.AddrOf(buf), access)
}

// RegMRAt registers buf at iova (ibv_reg_mr_iova2). The kernel's verbs
// refuse an iova whose page offset differs from the memory's, which is
// checked here first to give the same error on every device.
func (p *pd) RegMRAt(buf []byte, iova uint64, access verbs.Access) (verbs.MR, error) {
	if !verbs.IOVAValid(buf, iova) {
		if err := p.alive(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("rdmacore: RegMRAt %#x: not at the memory's page offset %#x: %w", iova, verbs.ZeroBased(buf), verbs.ErrInvalidArgument)
	}
	return p.regMR(buf, iova, access)
}

func (p *pd) regMR(buf []byte, iova uint64, access verbs.Access) (verbs.MR, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	if !access.Valid() {
		return nil, fmt.Errorf("rdmacore: RegMR access %v: %w", access, verbs.ErrInvalidArgument)
	}
	if len(buf) == 0 {
		return nil, fmt.Errorf("rdmacore: RegMR of an empty buffer: %w", verbs.ErrInvalidArgument)
	}
	m := &mr{pd: p, buf: buf, iova: iova, access: access}
	ptr := unsafe.Pointer(unsafe.SliceData(buf))
	m.pin.Pin(ptr)
	m.m = C.ibv_reg_mr_iova2(p.p, ptr, C.size_t(len(buf)), C.uint64_t(iova), C.uint(ibvAccess(access)))
	if m.m == nil {
		errno := errnoOf()
		m.pin.Unpin()
		if errno == syscall.EFAULT {
			return nil, fmt.Errorf("rdmacore: RegMR: the device cannot pin this memory (use verbs.AllocMem or Go heap memory): %w", verbs.ErrInvalidArgument)
		}
		return nil, errnoErr("ibv_reg_mr_iova2", errno)
	}
	m.lkey, m.rkey = uint32(m.m.lkey), uint32(m.m.rkey)
	if m.rkey == 0 {
		m.rkey = m.lkey
	}
	p.mu.Lock()
	p.mrs[m] = struct{}{}
	p.mu.Unlock()
	return m, nil
}

// checkLocal checks that sge names memory of an MR of the PD.
func (p *pd) checkLocal(sge *verbs.SGE) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for m := range p.mrs {
		if m.lkey != sge.LKey {
			continue
		}
		if m.invalidated {
			return verbs.ErrInvalidKey
		}
		start := m.iova
		if sge.Addr < start || sge.Addr+uint64(sge.Length) < sge.Addr || sge.Addr+uint64(sge.Length) > start+uint64(len(m.buf)) {
			return verbs.ErrBounds
		}
		return nil
	}
	return verbs.ErrInvalidKey
}

func (m *mr) LKey() uint32 { return m.lkey }

// RKey is the device's rkey; devices that give an MR without remote
// rights none (0) get its lkey, as godapl's STags are one key, and a peer
// using it is refused all the same.
func (m *mr) RKey() uint32         { return m.rkey }
func (m *mr) Addr() uint64         { return m.iova }
func (m *mr) Bytes() []byte        { return m.buf }
func (m *mr) Access() verbs.Access { return m.access }
func (m *mr) PD() verbs.PD         { return m.pd }

// Invalidate makes the MR's keys invalid. libibverbs can invalidate only
// the keys of fast-registration MRs, so the device registration is
// released here; the memory stays pinned and the MR counts as
// registered until Dereg.
func (m *mr) Invalidate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return verbs.ErrClosed
	}
	if m.invalidated {
		return nil
	}
	if m.mws > 0 {
		return fmt.Errorf("rdmacore: invalidate MR: %d memory windows bound: %w", m.mws, verbs.ErrInUse)
	}
	if rc := C.ibv_dereg_mr(m.m); rc != 0 {
		return errnoErr("ibv_dereg_mr", syscall.Errno(rc))
	}
	m.invalidated = true
	return nil
}

func (m *mr) Dereg() error { return m.dereg(false) }

func (m *mr) dereg(force bool) error {
	m.mu.Lock()
	if m.dead {
		m.mu.Unlock()
		return verbs.ErrClosed
	}
	if m.mws > 0 && !force {
		m.mu.Unlock()
		return fmt.Errorf("rdmacore: dereg MR: %d memory windows bound: %w", m.mws, verbs.ErrInUse)
	}
	m.dead = true
	inv := m.invalidated
	m.mu.Unlock()
	var rc C.int
	if !inv {
		rc = C.ibv_dereg_mr(m.m)
	}
	m.pin.Unpin()
	m.pd.mu.Lock()
	delete(m.pd.mrs, m)
	m.pd.mu.Unlock()
	if rc != 0 {
		return errnoErr("ibv_dereg_mr", syscall.Errno(rc))
	}
	return nil
}

type mw struct {
	pd *pd
	w  *C.struct_ibv_mw

	mu    sync.Mutex
	dead  bool
	bound *mr
	rkey  uint32 // the key of the last bind posted
}

// AllocMW allocates a type 2 memory window, bound by OpBindMW.
func (p *pd) AllocMW() (verbs.MW, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	if p.d.attr.MaxMW == 0 {
		return nil, fmt.Errorf("rdmacore: %s has no memory windows: %w", p.d.name, verbs.ErrNotSupported)
	}
	w := C.ibv_alloc_mw(p.p, C.IBV_MW_TYPE_2)
	if w == nil {
		return nil, errnoErr("ibv_alloc_mw", errnoOf())
	}
	m := &mw{pd: p, w: w}
	p.mu.Lock()
	p.mws[m] = struct{}{}
	p.mu.Unlock()
	return m, nil
}

func (w *mw) RKey() uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bound == nil {
		return 0
	}
	return w.rkey
}

func (w *mw) PD() verbs.PD { return w.pd }

func (w *mw) Dealloc() error {
	w.mu.Lock()
	if w.dead {
		w.mu.Unlock()
		return verbs.ErrClosed
	}
	w.dead = true
	w.setBound(nil)
	w.mu.Unlock()
	rc := C.ibv_dealloc_mw(w.w)
	w.pd.mu.Lock()
	delete(w.pd.mws, w)
	w.pd.mu.Unlock()
	if rc != 0 {
		return errnoErr("ibv_dealloc_mw", syscall.Errno(rc))
	}
	return nil
}

// unbindKey records that a Local Invalidate of rkey unbinds the window
// that holds it, if one of the PD does.
func (p *pd) unbindKey(rkey uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.mws {
		w.mu.Lock()
		if w.bound != nil && w.rkey == rkey {
			w.setBound(nil)
		}
		w.mu.Unlock()
	}
}

// setBound records the MR the window is bound to; w.mu is held.
func (w *mw) setBound(m *mr) {
	if w.bound != nil {
		w.bound.mu.Lock()
		w.bound.mws--
		w.bound.mu.Unlock()
	}
	w.bound = m
	if m != nil {
		m.mu.Lock()
		m.mws++
		m.mu.Unlock()
	}
}
