package soft

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
)

// SRQ implements verbs.SRQ: one FIFO of receives shared by its QPs.
//
// The limit event follows siw and the dat_srq man pages: armed by Modify
// with SRQLimit, it fires once — when a receive is taken and fewer than
// Limit remain posted, or at once if fewer are posted when it is armed —
// and then disarms until armed again.
type SRQ struct {
	pd    *PD
	dev   *Device
	users atomic.Int64

	mu     sync.Mutex
	ring   recvRing // guarded by mu
	maxSGE int      // guarded by mu
	limit  int      // 0: disarmed; guarded by mu
	closed bool     // guarded by mu
}

func newSRQ(pd *PD, attr verbs.SRQAttr) *SRQ {
	maxSGE := attr.MaxSGE
	if maxSGE == 0 {
		maxSGE = 1
	}
	s := &SRQ{pd: pd, dev: pd.dev, maxSGE: maxSGE, limit: attr.Limit}
	s.ring.resize(attr.MaxWR)
	return s
}

// PostRecv implements verbs.SRQ.
func (s *SRQ) PostRecv(wrs []verbs.RecvWR) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, verbs.ErrClosed
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > s.maxSGE {
			return i, verbs.ErrTooManySGE
		}
		if s.ring.full() {
			return i, verbs.ErrQueueFull
		}
		if err := checkRecvSGL(s.dev, s.pd, wr.SGL); err != nil {
			return i, err
		}
		s.ring.push(wr)
	}
	return len(wrs), nil
}

// take dequeues the oldest receive for a QP and fires the limit event if
// that leaves the SRQ below its armed limit.
func (s *SRQ) take(w *RecvWQE) bool {
	s.mu.Lock()
	ok := s.ring.pop(w)
	fire := ok && s.limit > 0 && s.ring.n < s.limit
	if fire {
		s.limit = 0
	}
	s.mu.Unlock()
	if fire {
		s.dev.Event(verbs.AsyncEvent{Type: verbs.EventSRQLimitReached, SRQ: s})
	}
	return ok
}

// Modify implements verbs.SRQ.
func (s *SRQ) Modify(attr verbs.SRQAttr, mask verbs.SRQAttrMask) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return verbs.ErrClosed
	}
	if mask&verbs.SRQMaxWR != 0 && (attr.MaxWR < s.ring.n || attr.MaxWR <= 0 || attr.MaxWR > s.dev.attr.MaxSRQWR) {
		s.mu.Unlock()
		return verbs.ErrInvalidArgument
	}
	maxWR := s.ring.depth
	if mask&verbs.SRQMaxWR != 0 {
		maxWR = attr.MaxWR
	}
	if mask&verbs.SRQLimit != 0 && (attr.Limit < 0 || attr.Limit > maxWR) {
		s.mu.Unlock()
		return verbs.ErrInvalidArgument
	}
	if mask&verbs.SRQMaxWR != 0 && attr.MaxWR != s.ring.depth {
		s.ring.resize(attr.MaxWR)
	}
	fire := false
	if mask&verbs.SRQLimit != 0 {
		s.limit = attr.Limit
		if s.limit > 0 && s.ring.n < s.limit {
			s.limit, fire = 0, true
		}
	}
	s.mu.Unlock()
	if fire {
		s.dev.Event(verbs.AsyncEvent{Type: verbs.EventSRQLimitReached, SRQ: s})
	}
	return nil
}

// Query implements verbs.SRQ.
func (s *SRQ) Query() verbs.SRQAttr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return verbs.SRQAttr{MaxWR: s.ring.depth, MaxSGE: s.maxSGE, Limit: s.limit}
}

// Posted implements verbs.SRQ.
func (s *SRQ) Posted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.n
}

// Destroy implements verbs.SRQ.
func (s *SRQ) Destroy() error {
	if s.users.Load() != 0 {
		return verbs.ErrInUse
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return verbs.ErrClosed
	}
	s.mu.Unlock()
	s.close()
	s.dev.mu.Lock()
	delete(s.dev.srqs, s)
	s.dev.mu.Unlock()
	s.pd.users.Add(-1)
	return nil
}

func (s *SRQ) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}
