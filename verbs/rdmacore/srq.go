//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

type srq struct {
	d  *Device
	pd *pd
	s  *C.struct_ibv_srq

	mu     sync.Mutex
	dead   bool
	users  int
	cqs    map[*cq]int // receive CQs of the QPs using the SRQ
	maxWR  int
	maxSGE int
	limit  int
	posted atomic.Int64

	postMu sync.Mutex
	rq     *C.struct_gd_rq // C memory: s and the records a post fills
}

var _ verbs.SRQ = (*srq)(nil)

func (p *pd) CreateSRQ(attr verbs.SRQAttr) (verbs.SRQ, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	a := p.d.attr
	if attr.MaxWR <= 0 || attr.MaxSGE <= 0 || attr.MaxWR > a.MaxSRQWR || attr.MaxSGE > a.MaxSRQSGE || attr.Limit < 0 || attr.Limit > attr.MaxWR {
		return nil, fmt.Errorf("rdmacore: CreateSRQ %+v (device: %d WRs, %d SGEs): %w", attr, a.MaxSRQWR, a.MaxSRQSGE, verbs.ErrInvalidArgument)
	}
	var ia C.struct_ibv_srq_init_attr
	ia.attr.max_wr = C.uint32_t(attr.MaxWR)
	ia.attr.max_sge = C.uint32_t(attr.MaxSGE)
	ia.attr.srq_limit = C.uint32_t(attr.Limit)
	hs := C.ibv_create_srq(p.p, &ia)
	if hs == nil {
		return nil, errnoErr("ibv_create_srq", errnoOf())
	}
	s := &srq{
		d: p.d, pd: p, s: hs, maxWR: int(ia.attr.max_wr), maxSGE: min(int(ia.attr.max_sge), verbs.MaxSGE), limit: attr.Limit,
		rq: (*C.struct_gd_rq)(C.calloc(1, C.sizeof_struct_gd_rq)),
	}
	s.rq.srq = hs
	// Some devices take a limit only through ibv_modify_srq.
	if attr.Limit > 0 {
		s.armLimit(attr.Limit)
	}
	p.mu.Lock()
	p.srqs++
	p.mu.Unlock()
	p.d.mu.Lock()
	p.d.srqs[hs] = s
	p.d.mu.Unlock()
	return s, nil
}

func (s *srq) armLimit(limit int) error {
	var a C.struct_ibv_srq_attr
	a.srq_limit = C.uint32_t(limit)
	if rc := C.ibv_modify_srq(s.s, &a, C.IBV_SRQ_LIMIT); rc != 0 {
		return errnoErr("ibv_modify_srq(limit)", syscall.Errno(rc))
	}
	return nil
}

func (s *srq) PostRecv(wrs []verbs.RecvWR) (int, error) {
	if s.d.isClosed() {
		return 0, verbs.ErrClosed
	}
	s.postMu.Lock()
	defer s.postMu.Unlock()
	s.mu.Lock()
	dead := s.dead
	s.mu.Unlock()
	if dead {
		return 0, verbs.ErrClosed
	}
	s.mu.Lock()
	room := s.maxWR - int(s.posted.Load())
	s.mu.Unlock()
	take := wrs[:min(len(wrs), max(room, 0))]
	// Counted before the post, as a receive may complete before it
	// returns; what the device refused is taken back.
	s.posted.Add(int64(len(take)))
	n, err := postRecvs(take, s.maxSGE, s.rq)
	s.posted.Add(-int64(len(take) - n))
	if err == nil && n < len(wrs) {
		err = verbs.ErrQueueFull
	}
	return n, err
}

func (s *srq) Modify(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	posted := -1
	if mask&verbs.SRQLimit != 0 {
		posted = s.Posted() // before s.mu: it takes it
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead || s.d.isClosed() {
		return verbs.ErrClosed
	}
	if mask&^(verbs.SRQMaxWR|verbs.SRQLimit) != 0 {
		return fmt.Errorf("rdmacore: SRQ modify mask %#x: %w", mask, verbs.ErrInvalidArgument)
	}
	if mask&verbs.SRQMaxWR != 0 {
		if attr.MaxWR <= 0 || attr.MaxWR > s.d.attr.MaxSRQWR || int64(attr.MaxWR) < s.posted.Load() {
			return fmt.Errorf("rdmacore: resize SRQ to %d with %d posted: %w", attr.MaxWR, s.posted.Load(), verbs.ErrInvalidArgument)
		}
		var a C.struct_ibv_srq_attr
		a.max_wr = C.uint32_t(attr.MaxWR)
		if rc := C.ibv_modify_srq(s.s, &a, C.IBV_SRQ_MAX_WR); rc != 0 {
			return errnoErr("ibv_modify_srq(max_wr)", syscall.Errno(rc))
		}
		var q C.struct_ibv_srq_attr
		if C.ibv_query_srq(s.s, &q) == 0 {
			s.maxWR = int(q.max_wr)
		} else {
			s.maxWR = attr.MaxWR
		}
	}
	if mask&verbs.SRQLimit != 0 {
		max := s.maxWR
		if mask&verbs.SRQMaxWR != 0 {
			max = attr.MaxWR
		}
		if attr.Limit < 0 || attr.Limit > max {
			return fmt.Errorf("rdmacore: SRQ limit %d of %d: %w", attr.Limit, max, verbs.ErrInvalidArgument)
		}
		if attr.Limit > 0 && posted < attr.Limit {
			// Already below: the event fires at once and the limit
			// stays disarmed, as the verbs contract has it; a device
			// armed here would wait for a receive to be taken.
			s.limit = 0
			s.d.postEvent(verbs.AsyncEvent{Type: verbs.EventSRQLimitReached, SRQ: s})
			return nil
		}
		if err := s.armLimit(attr.Limit); err != nil {
			return err
		}
		s.limit = attr.Limit
	}
	return nil
}

func (s *srq) Query() verbs.SRQAttr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return verbs.SRQAttr{MaxWR: s.maxWR, MaxSGE: s.maxSGE, Limit: s.limit}
}

// Posted counts the receives not yet taken. The device says a receive
// was taken only with its completion, so what the QPs' CQs hold is
// accounted first (skipping a CQ whose lock its consumer holds).
func (s *srq) Posted() int {
	s.mu.Lock()
	cqs := make([]*cq, 0, len(s.cqs))
	for c := range s.cqs {
		cqs = append(cqs, c)
	}
	s.mu.Unlock()
	for _, c := range cqs {
		if c.mu.TryLock() {
			if !c.dead {
				c.fill()
			}
			c.mu.Unlock()
		}
	}
	return int(s.posted.Load())
}

func (s *srq) limitReached() {
	s.mu.Lock()
	s.limit = 0
	s.mu.Unlock()
}

func (s *srq) Destroy() error {
	s.mu.Lock()
	if s.users > 0 {
		s.mu.Unlock()
		return fmt.Errorf("rdmacore: destroy SRQ: %d QPs use it: %w", s.users, verbs.ErrInUse)
	}
	s.mu.Unlock()
	return s.destroy(false)
}

func (s *srq) destroy(force bool) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return verbs.ErrClosed
	}
	s.dead = true
	s.mu.Unlock()
	s.postMu.Lock()
	rc := C.ibv_destroy_srq(s.s)
	C.free(unsafe.Pointer(s.rq))
	s.postMu.Unlock()
	s.d.mu.Lock()
	delete(s.d.srqs, s.s)
	s.d.mu.Unlock()
	s.pd.mu.Lock()
	s.pd.srqs--
	s.pd.mu.Unlock()
	if rc != 0 {
		return errnoErr("ibv_destroy_srq", syscall.Errno(rc))
	}
	return nil
}
