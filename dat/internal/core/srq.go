package core

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// SRQ is a shared receive queue: a verbs SRQ plus a cookie table that is
// an owner of its own in the IA's owner table, so that a receive
// completion names the SRQ's cookie slot by its work request ID and the
// EP that consumed the buffer by its QPN.
//
// Counts, as dat_srq_query reports them: available is what the verbs SRQ
// holds posted; outstanding is the cookie table's slots in use, which
// covers buffers posted, taken by an EP and completed but not yet
// dequeued from a recv EVD (a slot is freed when its event is handed out).
// So available <= outstanding <= max_recv_dtos holds at every moment, and
// bounding outstanding by the table's limit is also what keeps the CQs of
// the recv EVDs from overflowing: each such EVD is grown by the table's
// size once, however many EPs of the SRQ complete to it.
//
// The low watermark is the verbs SRQ limit: armed by create and SetLW, it
// fires once when taking a buffer leaves fewer than LW posted, or at once
// when fewer are posted as it is armed, and then disarms until SetLW. The
// device reports it asynchronously; onAsync turns it into an
// AsyncSRQLowWatermark event on the IA's async EVD.
//
// Lock order: SRQ.mu before postMu, EVD.mu and the verbs SRQ's lock;
// postMu before EVD.mu, the verbs SRQ's lock and cookieTable.mu.
type SRQ struct {
	Object
	ia    *IA
	pz    *PZ
	vsrq  verbs.SRQ
	own   *owner
	state atomic.Uint32 // dat.SRQState

	mu    sync.Mutex
	lw    int              // low watermark as last set (reported even once fired); guarded by mu
	iov   int              // max_recv_iov; guarded by mu
	eps   map[*EP]struct{} // EPs created with the SRQ and not yet freed; guarded by mu
	evds  map[*EVD]int     // recv EVDs of those EPs, with the EP count; guarded by mu
	evdSz int              // capacity added to each of evds: the table size; guarded by mu

	// checksSGL: the verbs SRQ checks SGLs at post time
	// (fastpath.SGLChecker), and PostRecv leaves the checks to it as the EP
	// post paths do.
	checksSGL bool

	// Post scratch, as for EPs: guarded by postMu. The l* arrays hold
	// one chunk of a PostRecvList.
	postMu sync.Mutex
	rwr    [1]verbs.RecvWR
	rsgl   [verbs.MaxSGE]verbs.SGE
	lwr    [srqListChunk]verbs.RecvWR
	lsgl   [srqListChunk][verbs.MaxSGE]verbs.SGE
	lslot  [srqListChunk]uint32
	maxIOV atomic.Int32 // max_recv_iov, read by posts without mu
}

// SRQParam is what srq_query reports.
type SRQParam struct {
	State        dat.SRQState
	PZ           *PZ
	MaxRecvDTOs  int
	MaxRecvIOV   int
	LowWatermark int
	Available    int
	Outstanding  int
}

// Preallocated errors of srq_post_recv for callers that hit them in a loop.
var (
	errSRQFreed = InvalidHandle("srq_post_recv", dat.HandleTypeSRQ)
	errSRQFull  = dat.NewError("srq_post_recv", dat.InsufficientResources, dat.ResourceSRQ)
)

// CreateSRQ creates an SRQ in pz (srq_create). maxDTOs must be positive;
// maxIOV 0 means 1; lw 0 (DAT_SRQ_LW_DEFAULT) leaves the watermark
// disarmed, any other value arms it, and since a new SRQ is empty it
// fires at once.
func CreateSRQ(ia *IA, pz *PZ, maxDTOs, maxIOV, lw int) (*SRQ, error) {
	const op = "srq_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if err := pz.live(op); err != nil {
		return nil, err
	}
	if pz.ia != ia {
		return nil, dat.NewError(op, dat.InvalidHandle, dat.InvalidHandlePZ)
	}
	d := &ia.dattr
	if d.MaxSRQ == 0 {
		return nil, dat.NewError(op, dat.ModelNotSupported, dat.NoSubtype)
	}
	if maxIOV == 0 {
		maxIOV = 1
	}
	switch {
	case maxDTOs <= 0 || maxDTOs > d.MaxSRQWR:
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	case maxIOV < 0 || maxIOV > d.MaxSRQSGE || maxIOV > verbs.MaxSGE:
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	case lw < 0 || lw > maxDTOs:
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	}
	vsrq, err := pz.pd.CreateSRQ(verbs.SRQAttr{MaxWR: maxDTOs, MaxSGE: maxIOV})
	if err != nil {
		return nil, dat.Wrap(op, dat.InsufficientResources, dat.ResourceSRQ, err)
	}
	s := &SRQ{ia: ia, pz: pz, vsrq: vsrq, lw: lw, iov: maxIOV, eps: make(map[*EP]struct{}), evds: make(map[*EVD]int), evdSz: maxDTOs}
	s.init(dat.HandleTypeSRQ)
	s.state.Store(uint32(dat.SRQStateOperational))
	s.maxIOV.Store(int32(maxIOV))
	sc, ok := vsrq.(fastpath.SGLChecker)
	s.checksSGL = ok && sc.ChecksSGL()
	s.own = &owner{srq: s}
	s.own.table.init(maxDTOs)
	if err := ia.addOwnerOp(op, s.own); err != nil {
		vsrq.Destroy()
		return nil, err
	}
	if err := ia.adopt(op, &s.Object, rankSRQ, s.destroy); err != nil {
		ia.removeOwner(s.own)
		vsrq.Destroy()
		ia.reuseOwnerIndex(s.own)
		return nil, err
	}
	pz.Use()
	ia.hook(vsrq, s.onAsync)
	return s, nil
}

// Arm arms the watermark given at creation; the creating package calls it
// once the public handle is set, so that an event at once carries it.
func (s *SRQ) Arm() {
	s.mu.Lock()
	lw := s.lw
	s.mu.Unlock()
	if lw > 0 {
		s.vsrq.Modify(verbs.SRQAttr{Limit: lw}, verbs.SRQLimit)
	}
}

func (s *SRQ) live(op string) error {
	if s == nil {
		return InvalidHandle(op, dat.HandleTypeSRQ)
	}
	return s.Live(op)
}

// LiveSRQ returns DAT_INVALID_HANDLE for a nil or freed SRQ.
func (s *SRQ) LiveSRQ(op string) error { return s.live(op) }

// IA returns the SRQ's IA.
func (s *SRQ) IA() *IA { return s.ia }

// PostRecv posts a receive buffer (srq_post_recv). Zero-length segments
// name no memory, so a nil iov receives a zero-size message. It allocates
// nothing and never waits for anything but the short post lock.
func (s *SRQ) PostRecv(iov []dat.LMRTriplet, cookie dat.DTOCookie) error {
	const op = "srq_post_recv"
	if s == nil || s.freed.Load() {
		return errSRQFreed
	}
	if len(iov) > int(s.maxIOV.Load()) {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	// As on an EP (EP.PostRecv): a provider that checks the SGL makes
	// DAT's checks of the same memory, unless the PZ holds an LMR whose
	// privileges verbs cannot enforce; a refused post runs DAT's own
	// checks (IA.refused), so every return code stays DAT's.
	trust := s.checksSGL && s.pz.loose.Load() == 0
	s.postMu.Lock()
	defer s.postMu.Unlock()
	k, err := s.sgl(op, trust, iov, &s.rsgl)
	if err != nil {
		return err
	}
	slot, ok := s.own.table.get(cookieSlot{cookie: cookie, op: dat.DTOReceive})
	if !ok {
		return s.ia.refused(trust, op, s.pz, iov, dat.MemPrivLocalWrite, errSRQFull)
	}
	w := &s.rwr[0]
	*w = verbs.RecvWR{ID: s.own.id | wrRecvBit | uint64(slot), SGL: s.rsgl[:k]}
	_, err = s.vsrq.PostRecv(s.rwr[:])
	w.SGL = nil
	if err != nil {
		s.own.table.put(slot)
		if errors.Is(err, verbs.ErrQueueFull) {
			err = errSRQFull
		} else {
			err = postErr(op, err)
		}
		return s.ia.refused(trust, op, s.pz, iov, dat.MemPrivLocalWrite, err)
	}
	return nil
}

// Query reports the SRQ (srq_query). Available and outstanding are one
// consistent snapshot: posts are held off and completions cannot be
// dequeued while they are read, and buffers only leave "available"
// towards states that stay counted as outstanding.
func (s *SRQ) Query() (SRQParam, error) {
	if err := s.live("srq_query"); err != nil {
		return SRQParam{}, err
	}
	s.mu.Lock()
	p := SRQParam{State: dat.SRQState(s.state.Load()), PZ: s.pz, MaxRecvIOV: s.iov, LowWatermark: s.lw}
	s.mu.Unlock()
	s.postMu.Lock()
	t := &s.own.table
	t.mu.Lock()
	p.MaxRecvDTOs = t.limit
	p.Outstanding = t.usedLocked()
	p.Available = s.vsrq.Posted()
	t.mu.Unlock()
	s.postMu.Unlock()
	return p, nil
}

// Resize changes max_recv_dtos (srq_resize): never below the outstanding
// buffers or the low watermark (DAT_INVALID_STATE, SRQ unchanged). Growing
// grows the verbs SRQ and the recv EVDs first, so that no post can find
// a slot without room behind it; shrinking lowers the table's limit first,
// so that the verbs SRQ never holds more than it may shrink to.
func (s *SRQ) Resize(n int) error {
	const op = "srq_resize"
	if err := s.live(op); err != nil {
		return err
	}
	if n <= 0 {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if n > s.ia.dattr.MaxSRQWR {
		return dat.NewError(op, dat.InsufficientResources, dat.ResourceSRQ)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < s.lw {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQInUse)
	}
	if n < s.tableInUse() {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQInUse)
	}
	if n > s.evdSz {
		grown := make([]*EVD, 0, len(s.evds))
		for e := range s.evds {
			if err := e.Grow(op, n-s.evdSz); err != nil {
				for _, g := range grown {
					g.Grow(op, s.evdSz-n)
				}
				return err
			}
			grown = append(grown, e)
		}
		s.evdSz = n
	}
	if n > s.vsrq.Query().MaxWR {
		if err := s.vsrq.Modify(verbs.SRQAttr{MaxWR: n}, verbs.SRQMaxWR); err != nil {
			return dat.Wrap(op, dat.InsufficientResources, dat.ResourceSRQ, err)
		}
		if !s.setTableLimit(n) {
			return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQInUse)
		}
		return nil
	}
	if !s.setTableLimit(n) {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQInUse)
	}
	// Best effort, as DAT allows: a verbs SRQ that cannot shrink (a post
	// raced in between) keeps its size, the table's limit still holds.
	s.vsrq.Modify(verbs.SRQAttr{MaxWR: n}, verbs.SRQMaxWR)
	return nil
}

// tableInUse is the cookie table's inUse, under postMu as it needs.
func (s *SRQ) tableInUse() int {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	return s.own.table.inUse()
}

// setTableLimit is the cookie table's setLimit, under postMu as it needs.
func (s *SRQ) setTableLimit(n int) bool {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	return s.own.table.setLimit(n)
}

// SetLW sets the low watermark and arms its event (srq_set_lw); 0 disarms.
// The event fires at once when fewer than lw buffers are posted now.
func (s *SRQ) SetLW(lw int) error {
	const op = "srq_set_lw"
	if err := s.live(op); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if lw < 0 || lw > s.own.table.limitNow() {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if err := s.vsrq.Modify(verbs.SRQAttr{Limit: lw}, verbs.SRQLimit); err != nil {
		return dat.Wrap(op, dat.InvalidParameter, dat.InvalidArg2, err)
	}
	s.lw = lw
	return nil
}

// Free frees the SRQ (srq_free): DAT_INVALID_STATE / SRQ_IN_USE while an
// EP created with it exists.
func (s *SRQ) Free() error {
	const op = "srq_free"
	if err := s.live(op); err != nil {
		return err
	}
	s.mu.Lock()
	if len(s.eps) > 0 {
		s.mu.Unlock()
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQInUse)
	}
	if !s.freed.CompareAndSwap(false, true) {
		s.mu.Unlock()
		return InvalidHandle(op, dat.HandleTypeSRQ)
	}
	s.mu.Unlock()
	s.ia.release(&s.Object)
	s.teardown()
	return nil
}

func (s *SRQ) destroy() {
	if s.freed.CompareAndSwap(false, true) {
		s.teardown()
	}
}

func (s *SRQ) teardown() {
	s.ia.hook(s.vsrq, nil)
	s.ia.removeOwner(s.own)
	s.postMu.Lock() // a post in flight finishes first
	s.vsrq.Destroy()
	s.postMu.Unlock()
	s.ia.reuseOwnerIndex(s.own)
	s.pz.Unuse()
}

// onAsync turns the verbs SRQ's events into DAT async events.
func (s *SRQ) onAsync(ev verbs.AsyncEvent) {
	switch ev.Type {
	case verbs.EventSRQLimitReached:
		s.ia.PostAsync(dat.Event{Number: dat.AsyncSRQLowWatermark, Async: dat.AsyncErrorData{Handle: s.handle, Reason: dat.ReasonSRQWatermark}})
	case verbs.EventSRQErr:
		s.state.Store(uint32(dat.SRQStateError))
		s.ia.PostAsync(dat.Event{Number: dat.AsyncErrorProviderInternalError, Async: dat.AsyncErrorData{Handle: s.handle, Reason: dat.ReasonCatastrophic, Err: ev.Err}})
	}
}

// attachEP accounts for an EP created with the SRQ.
func (s *SRQ) attachEP(op string, pz *PZ, ep *EP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed.Load() {
		return InvalidHandle(op, dat.HandleTypeSRQ)
	}
	if dat.SRQState(s.state.Load()) != dat.SRQStateOperational {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateSRQError)
	}
	if pz != s.pz {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	s.eps[ep] = struct{}{}
	return nil
}

func (s *SRQ) detachEP(ep *EP) {
	s.mu.Lock()
	delete(s.eps, ep)
	s.mu.Unlock()
}

// soleReceiver reports whether ep is the only EP of the SRQ that can take
// buffers now (CONNECTED or DISCONNECT_PENDING).
func (s *SRQ) soleReceiver(ep *EP) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for o := range s.eps {
		if o != ep && canTake.has(o.State()) {
			return false
		}
	}
	return true
}

// feed records that an EP of the SRQ completes to e, growing e's CQ by
// the SRQ's size the first time.
func (s *SRQ) feed(op string, e *EVD) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.evds[e] == 0 {
		if err := e.Grow(op, s.evdSz); err != nil {
			return err
		}
	}
	s.evds[e]++
	return nil
}

// unfeed undoes feed.
func (s *SRQ) unfeed(e *EVD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evds[e]--
	if s.evds[e] <= 0 {
		delete(s.evds, e)
		e.Grow("ep_free", -s.evdSz)
	}
}

// inProgress returns the buffers taken from the SRQ whose completions
// were not generated yet (ep_recv_query).
func (s *SRQ) inProgress() int {
	s.mu.Lock()
	evds := make([]*EVD, 0, len(s.evds))
	for e := range s.evds {
		evds = append(evds, e)
	}
	s.mu.Unlock()
	s.postMu.Lock()
	defer s.postMu.Unlock()
	t := &s.own.table
	generated := 0
	for _, e := range evds {
		all := e.countHeld(t, nil)
		generated += all
	}
	n := t.inUse() - s.vsrq.Posted() - generated
	return max(n, 0)
}

// epByQPN returns the EP whose QP has number qpn, for the SRQ receives
// of e, under cql: the EPs of
// an SRQ's receives come mostly one after another from one QP, and while
// byQPN has not changed the last answer stands, without the read lock
// and the map of every receive.
func (e *EVD) epByQPN(qpn uint32) *EP {
	ia := e.ia
	if qpn == e.qpnN && e.qpnEP != nil && ia.byQPNGen.Load() == e.qpnGen {
		return e.qpnEP
	}
	ia.ownMu.RLock()
	ep := ia.byQPN[qpn]
	gen := ia.byQPNGen.Load()
	ia.ownMu.RUnlock()
	e.qpnN, e.qpnGen, e.qpnEP = qpn, gen, ep
	return ep
}
