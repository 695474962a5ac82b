package core

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// ringEntry is a queued event. DTO and RMR-bind events keep their cookie
// slot until they are handed out, so that the number of such events an EVD
// holds never exceeds the queue sizes of the EPs attached to it.
type ringEntry struct {
	ev    dat.Event
	hold  hold
	quiet bool // UNSIGNALLED: queued, but wakes neither waiter nor CNO
}

// EVD is an event dispatcher.
//
// DTO and RMR-bind completions arrive on a verbs CQ that the EVD owns;
// connection, CR, async and software events are pushed by the provider's
// goroutines. They are handed out in arrival order:
//
//   - While the ring holds nothing, a dequeue (or a wait that need not
//     block) takes a completion straight from the CQ and translates it
//     into the caller's event: one copy, and the slot it held retires at
//     once (the DTO hot path). It holds only the CQ's own lock (cql), not
//     mu. Completions are polled in small batches into wcs ("raw": polled,
//     not yet translated), which hand out first.
//   - A push first drains the raw completions and the CQ into the ring and
//     queues its event behind them, so a DISCONNECTED event never
//     overtakes the flushed completions that preceded it; while the ring
//     holds events, dequeues take them from it under mu, and everything
//     arriving meanwhile stays raw or in the CQ, behind them. The hot path
//     sees the ring's count (queued) under cql: a drain publishes it
//     before it lets go of cql, so no completion that came after those in
//     the ring can pass them.
//
// Sizes: the consumer's qlen bounds the events the EVD holds for the
// purpose of overflow (a connection or CR event that finds qlen events
// queued is lost and reported as DAT_ASYNC_ERROR_EVD_OVERFLOW; a software
// event gets DAT_QUEUE_FULL). The CQ is qlen deep plus the sizes of the
// EP queues attached to it, and every EP queue has a cookie slot per
// outstanding DTO, so the CQ cannot overflow: the EVD is "larger than
// requested" exactly by what its EPs can have in flight, as DAT allows.
//
// Blocking: a waiter sleeps on wake. CQ arrivals reach it through
// routineCQWatch, which blocks in CQ.Wait only while a waiter or a CNO has
// armed it, and is the EVD's only goroutine.
type EVD struct {
	Object
	ia    *IA
	flags dat.EVDFlags
	cq    verbs.CQ // nil without DTO or RMR-bind streams

	mu      sync.Mutex
	qlen    int         // guarded by mu
	ring    []ringEntry // guarded by mu
	head, n int         // guarded by mu
	loud    int         // entries not quiet; guarded by mu
	// gate holds the gate* bits: whether a waiter owns the EVD, whether
	// it is unwaitable, whether it is being freed. Written under mu (but
	// gateFreed), read by the hot path without it, in one load.
	gate     atomic.Uint32
	enabled  bool  // guarded by mu
	cno      *CNO  // guarded by mu
	users    int   // EPs, PSPs, RSPs feeding it; guarded by mu
	capDTO   int   // sizes of attached EP queues; guarded by mu
	nSolicit int   // attached recv queues with SOLICITED_WAIT; guarded by mu
	nUnsig   int   // attached queues with UNSIGNALLED; guarded by mu
	cqErr    error // the CQ failed (closed, overflowed); guarded by mu

	// A waiter blocks in CQ.Wait itself rather than through
	// routineCQWatch: one wake-up per completion instead of two, and
	// siw's inline receive runs in the waiter. dctx interrupts it for a
	// pushed event, SetUnwaitable, destroy or the end of the waiter's own
	// context, and carries that context's deadline; it is reused until it
	// has ended.
	dctx     *directCtx // guarded by mu
	inDirect bool       // the waiter is in CQ.Wait on dctx; guarded by mu
	// A waiter's context that can end is watched by a callback
	// (context.AfterFunc, onWaiterCtxDone) that interrupts the waiter.
	// The registration is kept for the next wait on the same context
	// (the same Done channel, wdone), as a consumer's loop mostly waits
	// with one: registering allocates.
	// wwatch says that the waiter in CQ.Wait waits with that context: a
	// registration outlives its wait, and the callback of a context that
	// ends later must leave alone a waiter that waits with another.
	wdone  <-chan struct{} // guarded by mu
	wstop  func() bool     // ends the registration; guarded by mu
	wwatch bool            // guarded by mu
	onWCtx func()          // onWaiterCtxDone, made once

	// queued is n, published for the hot path: stored under mu, and by a
	// drain before it lets go of the CQ's lock (see Take).
	queued atomic.Int32

	// cql is the CQ's lock (lent by the provider, or DAT's own around the
	// CQ's Poll). It guards the raw completions and the heads of the
	// slot rings of the queues completing here, so that the hot path
	// hands a completion out under one lock. Lock order: mu before cql.
	cql     fastpath.CQLocker
	cqMu    *sync.Mutex        // what cql locks, when the provider lends it (fastpath.CQMutexer)
	cqRing  *fastpath.CQRing   // the CQ's completions, when the provider lends them (fastpath.CQRinger)
	cqYield fastpath.CQYielder // the CQ, when its provider asks spinning pollers to yield
	wcs     [16]verbs.WC       // completions polled from the CQ; guarded by cql
	wcHead  int                // wcs[wcHead:wcN] are raw: polled, not translated; guarded by cql
	wcN     int                // guarded by cql
	// lastQ is the EP queue of the last DTO Take handed out, which the
	// next one most likely shares, and lastKey the bits of its work
	// request IDs above the slot (owner index, generation, receive bit;
	// noQueue with lastQ noRing): one comparison finds a completion of
	// the queue's oldest request. Only a queue that completes to this
	// EVD is kept, and its owner's removal clears it (slotRing.forget).
	lastKey uint64    // guarded by cql
	lastQ   *slotRing // guarded by cql
	// The EP of the QP numbered qpnN as IA.byQPN said at its generation
	// qpnGen: the EP of an SRQ receive, most likely the last one's
	// (epByQPN). Guarded by cql.
	qpnN   uint32
	qpnGen uint64
	qpnEP  *EP
	// srqOwn is the SRQ owner of the last receive takeSlow translated
	// the usual way, and srqKey its work request IDs' bits above the
	// slot (noQueue without one): the receives that follow it are taken
	// by takeSRQLocked without the owner table's lookup or a poll.
	// Guarded by cql.
	srqKey uint64
	srqOwn *owner

	// spin is the wait spin (see evd_spin.go): spinMax the budget set,
	// spinCur what the next wait may spend.
	spinMax, spinCur atomic.Int64

	wake      chan struct{} // capacity 1
	arm       chan struct{} // capacity 1
	stopCtx   context.Context
	stop      context.CancelFunc
	watchDone chan struct{}
}

// Bits of EVD.gate: each sends a dequeue or a wait down the full path.
const (
	gateFreed  uint32 = 1 << iota // destroy has begun (as Object.freed)
	gateWaiter                    // a waiter owns the EVD
	gateUnwait                    // the EVD is unwaitable
)

// waiting reports whether a waiter owns the EVD.
func (e *EVD) waiting() bool { return e.gate.Load()&gateWaiter != 0 }

// unwaitable reports whether the EVD is unwaitable.
func (e *EVD) unwaitable() bool { return e.gate.Load()&gateUnwait != 0 }

// setGate sets or clears a bit of gate.
func (e *EVD) setGate(bit uint32, on bool) {
	if on {
		e.gate.Or(bit)
	} else {
		e.gate.And(^bit)
	}
}

// CreateEVD creates an EVD (evd_create).
func CreateEVD(ia *IA, qlen int, cno *CNO, flags dat.EVDFlags) (*EVD, error) {
	const op = "evd_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if qlen <= 0 || qlen > ia.dattr.MaxCQE {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if !flags.Valid() {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	if cno != nil {
		if err := cno.live(op); err != nil {
			return nil, err
		}
	}
	return newEVD(ia, qlen, cno, flags, true)
}

func newEVD(ia *IA, qlen int, cno *CNO, flags dat.EVDFlags, adopt bool) (*EVD, error) {
	e := &EVD{ia: ia, flags: flags, qlen: qlen, enabled: true, wake: make(chan struct{}, 1), arm: make(chan struct{}, 1), lastKey: noQueue, lastQ: &noRing, srqKey: noQueue}
	e.onWCtx = e.onWaiterCtxDone
	e.init(dat.HandleTypeEVD)
	depth := qlen
	if flags&(dat.EVDDTO|dat.EVDRMRBind) != 0 {
		cq, err := ia.dev.CreateCQ(verbs.CQAttr{Depth: qlen})
		if err != nil {
			return nil, dat.Wrap("evd_create", dat.InsufficientResources, dat.ResourceTEVD, err)
		}
		e.cq, e.cql = cq, cqLocker(cq)
		if m, ok := cq.(fastpath.CQMutexer); ok {
			e.cqMu = m.CQMutex()
		}
		if r, ok := cq.(fastpath.CQRinger); ok {
			e.cqRing = r.CQRing()
		}
		if y, ok := cq.(fastpath.CQYielder); ok {
			e.cqYield = y
		}
		depth += qlen
	}
	e.ring = make([]ringEntry, depth)
	if adopt {
		if err := ia.adopt("evd_create", &e.Object, rankEVD, e.destroy); err != nil {
			if e.cq != nil {
				e.cq.Destroy()
			}
			return nil, err
		}
	}
	if e.cq != nil {
		e.stopCtx, e.stop = context.WithCancel(context.Background())
		e.watchDone = make(chan struct{})
		ia.hook(e.cq, e.onAsync)
		go e.routineCQWatch()
	}
	if cno != nil {
		cno.attach(e)
		e.cno = cno
	}
	return e, nil
}

func (e *EVD) live(op string) error {
	if e == nil {
		return InvalidHandle(op, dat.HandleTypeEVD)
	}
	return e.Live(op)
}

// LiveEVD returns DAT_INVALID_HANDLE for a nil or freed EVD.
func (e *EVD) LiveEVD(op string) error { return e.live(op) }

// IA returns the EVD's IA.
func (e *EVD) IA() *IA { return e.ia }

// Flags returns the streams the EVD accepts.
func (e *EVD) Flags() dat.EVDFlags { return e.flags }

// onAsync handles the device's events about the CQ: an overflow, which
// the sizing above rules out unless the provider misbehaves, is reported
// as DAT says.
func (e *EVD) onAsync(ev verbs.AsyncEvent) {
	if ev.Type == verbs.EventCQErr {
		e.ia.PostAsync(dat.Event{Number: dat.AsyncErrorEVDOverflow, Async: dat.AsyncErrorData{Handle: e.handle, Reason: dat.ReasonEVDOverflow, Err: ev.Err}})
	}
}

// routineCQWatch blocks in CQ.Wait on behalf of a waiter or CNO that armed
// it and signals them when the CQ has something. It ends when the EVD is
// destroyed.
func (e *EVD) routineCQWatch() {
	defer close(e.watchDone)
	for {
		select {
		case <-e.arm:
		case <-e.stopCtx.Done():
			return
		}
		e.mu.Lock()
		solicited := e.nSolicit > 0
		e.mu.Unlock()
		err := e.cq.Wait(e.stopCtx, solicited)
		if e.stopCtx.Err() != nil {
			return
		}
		if err != nil {
			e.mu.Lock()
			e.cqErr = err
			e.mu.Unlock()
		}
		e.signal(true)
	}
}

// signal wakes a waiter, or the CNO when no waiter owns the EVD.
func (e *EVD) signal(loud bool) {
	select {
	case e.wake <- struct{}{}:
	default:
	}
	if !loud {
		return
	}
	e.mu.Lock()
	cno := e.cno
	trigger := cno != nil && e.enabled && !e.waiting()
	e.mu.Unlock()
	if trigger {
		cno.trigger(e)
	}
}

// armWatch asks routineCQWatch to block on the CQ.
func (e *EVD) armWatch() {
	if e.cq == nil {
		return
	}
	select {
	case e.arm <- struct{}{}:
	default:
	}
}

// PostSE queues a software event (evd_post_se).
func (e *EVD) PostSE(data any) error {
	const op = "evd_post_se"
	if err := e.live(op); err != nil {
		return err
	}
	if e.flags&dat.EVDSoftware == 0 {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if e.pushSoft(&dat.Event{Number: dat.SoftwareEvent, Software: data}, true) != nil {
		return dat.NewError(op, dat.QueueFull, dat.NoSubtype)
	}
	return nil
}

// EVDParam is what evd_query reports.
type EVDParam struct {
	QLen  int
	State dat.EVDState
	CNO   *CNO
	Flags dat.EVDFlags
}

// Query reports the EVD (evd_query).
func (e *EVD) Query() (EVDParam, error) {
	if err := e.live("evd_query"); err != nil {
		return EVDParam{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	st := dat.EVDStateEnabled
	if !e.enabled {
		st = dat.EVDStateDisabled
	}
	if e.unwaitable() {
		st |= dat.EVDStateUnwaitable
	} else {
		st |= dat.EVDStateWaitable
	}
	switch {
	case e.nSolicit > 0:
		st |= dat.EVDStateConfigSolicited
	default:
		st |= dat.EVDStateConfigNotify
	}
	return EVDParam{QLen: e.qlen, State: st, CNO: e.cno, Flags: e.flags}, nil
}

// Len returns the number of queued events.
func (e *EVD) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.countLocked()
}

// Resize changes qlen (evd_resize); it fails with DAT_INVALID_STATE when
// more events are queued than the new length.
func (e *EVD) Resize(qlen int) error {
	const op = "evd_resize"
	if err := e.live(op); err != nil {
		return err
	}
	if qlen <= 0 || qlen > e.ia.dattr.MaxCQE {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drainLocked()
	if e.countLocked() > qlen {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDInUse)
	}
	if err := e.resizeLocked(qlen, e.capDTO); err != nil {
		return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEVD, err)
	}
	return nil
}

// resizeLocked sets qlen and the DTO capacity, resizing CQ and ring.
func (e *EVD) resizeLocked(qlen, capDTO int) error {
	depth := qlen
	if e.cq != nil {
		cqDepth := qlen + capDTO
		if cqDepth != e.cq.Depth() {
			if err := e.cq.Resize(cqDepth); err != nil {
				return err
			}
		}
		depth += cqDepth
	}
	if depth != len(e.ring) && depth >= e.n {
		ring := make([]ringEntry, depth)
		for i := 0; i < e.n; i++ {
			ring[i] = e.ring[(e.head+i)%len(e.ring)]
		}
		e.ring, e.head = ring, 0
	}
	e.qlen, e.capDTO = qlen, capDTO
	return nil
}

// Attach accounts for an EP queue (or SP) feeding the EVD: capacity DTOs
// and the queue's notification model. It fails on a freed EVD or when the
// CQ cannot grow.
func (e *EVD) Attach(op string, capacity int, model dat.CompletionFlags, recv bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed.Load() {
		return InvalidHandle(op, dat.HandleTypeEVD)
	}
	if capacity > 0 {
		if e.cq == nil {
			return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
		}
		if err := e.resizeLocked(e.qlen, e.capDTO+capacity); err != nil {
			return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEVD, err)
		}
	}
	e.users++
	if recv && model&dat.CompletionSolicitedWait != 0 {
		e.nSolicit++
	}
	if model&dat.CompletionUnsignalled != 0 {
		e.nUnsig++
	}
	return nil
}

// Detach undoes Attach; the CQ keeps its size if it cannot shrink.
func (e *EVD) Detach(capacity int, model dat.CompletionFlags, recv bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.users--
	if recv && model&dat.CompletionSolicitedWait != 0 {
		e.nSolicit--
	}
	if model&dat.CompletionUnsignalled != 0 {
		e.nUnsig--
	}
	if capacity > 0 && !e.freed.Load() {
		if e.resizeLocked(e.qlen, e.capDTO-capacity) != nil {
			e.capDTO -= capacity
		}
	}
}

// SetEnabled enables or disables CNO triggering (evd_enable/evd_disable).
func (e *EVD) SetEnabled(op string, on bool) error {
	if err := e.live(op); err != nil {
		return err
	}
	e.mu.Lock()
	e.enabled = on
	e.mu.Unlock()
	if on {
		e.signal(true)
	}
	return nil
}

// SetUnwaitable sets or clears the unwaitable state; setting it wakes a
// blocked waiter, which returns DAT_INVALID_STATE.
func (e *EVD) SetUnwaitable(op string, on bool) error {
	if err := e.live(op); err != nil {
		return err
	}
	e.mu.Lock()
	e.setGate(gateUnwait, on)
	if on {
		e.interruptDirectLocked()
	}
	e.mu.Unlock()
	if on {
		e.signal(false)
	}
	return nil
}

// interruptDirectLocked ends a waiter's own CQ.Wait, so that it sees what
// changed; the caller holds mu.
func (e *EVD) interruptDirectLocked() {
	if e.inDirect {
		e.dctx.cancel() // once: the waiter may not have come back yet
	}
}

// watchWaiterCtxLocked makes the end of ctx, a waiter's context that can
// end and whose Done channel is done, interrupt the waiter's CQ.Wait;
// the caller holds mu.
func (e *EVD) watchWaiterCtxLocked(ctx context.Context, done <-chan struct{}) {
	if done == e.wdone {
		return
	}
	e.unwatchWaiterCtxLocked()
	e.wdone, e.wstop = done, context.AfterFunc(ctx, e.onWCtx)
}

// unwatchWaiterCtxLocked ends the registration watchWaiterCtxLocked made,
// if any; the caller holds mu.
func (e *EVD) unwatchWaiterCtxLocked() {
	if e.wstop != nil {
		e.wstop()
		e.wdone, e.wstop = nil, nil
	}
}

// onWaiterCtxDone interrupts the waiter when the context it waits with
// ends (context.AfterFunc calls it in a goroutine of its own). The
// registration may be an earlier wait's, whose context ends while a
// waiter with another (or with context.Background) sleeps: that one is
// left alone. Woken, a waiter on an EVD with SOLICITED_WAIT would return
// an unsolicited completion that came while it slept.
func (e *EVD) onWaiterCtxDone() {
	e.mu.Lock()
	if e.wwatch {
		select {
		case <-e.wdone:
			e.interruptDirectLocked()
		default: // a context of an earlier wait
		}
	}
	e.mu.Unlock()
}

// ModifyCNO attaches the EVD to cno, or detaches it for nil.
func (e *EVD) ModifyCNO(cno *CNO) error {
	const op = "evd_modify_cno"
	if err := e.live(op); err != nil {
		return err
	}
	if cno != nil {
		if err := cno.live(op); err != nil {
			return err
		}
	}
	e.mu.Lock()
	old := e.cno
	e.cno = cno
	e.mu.Unlock()
	if old != nil {
		old.detach(e)
	}
	if cno != nil {
		cno.attach(e)
		e.signal(true)
	}
	return nil
}

// Free frees the EVD (evd_free): DAT_INVALID_STATE while EPs or service
// points feed it or a waiter blocks on it.
func (e *EVD) Free() error {
	const op = "evd_free"
	if err := e.live(op); err != nil {
		return err
	}
	if e == e.ia.async {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDAsync)
	}
	e.mu.Lock()
	if e.users > 0 || e.waiting() {
		e.mu.Unlock()
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEVDInUse)
	}
	e.mu.Unlock()
	e.ia.release(&e.Object)
	e.destroy()
	return nil
}

// destroy frees the EVD's resources; waiters return DAT_ABORT.
func (e *EVD) destroy() {
	if !e.freed.CompareAndSwap(false, true) {
		return
	}
	e.setGate(gateFreed, true)
	if e.cq != nil {
		e.stop()
		<-e.watchDone
		e.ia.hook(e.cq, nil)
	}
	e.mu.Lock()
	e.interruptDirectLocked()
	e.unwatchWaiterCtxLocked()
	cno := e.cno
	e.cno = nil
	for e.n > 0 {
		var ev dat.Event
		e.popLocked(&ev)
	}
	if e.cql != nil {
		e.cql.Lock()
		e.dropRawCQLocked()
		e.cql.Unlock()
	}
	e.mu.Unlock()
	if cno != nil {
		cno.detach(e)
	}
	if e.cq != nil {
		e.cq.Destroy() // fails only if QPs still use it, and then the device close frees it
	}
	e.signal(false)
}

// ready reports whether the EVD has an event that may trigger its CNO.
func (e *EVD) ready() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed.Load() || !e.enabled || e.waiting() {
		return false
	}
	e.drainLocked()
	return e.loud > 0
}

// Grow adds delta to the DTO capacity the EVD's CQ is sized for: an SRQ
// adds its size once for every recv EVD its EPs complete to, and grows
// it with the SRQ. A negative delta shrinks at best effort.
func (e *EVD) Grow(op string, delta int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.freed.Load() {
		return InvalidHandle(op, dat.HandleTypeEVD)
	}
	if e.cq == nil {
		return dat.NewError(op, dat.InvalidParameter, dat.NoSubtype)
	}
	if err := e.resizeLocked(e.qlen, e.capDTO+delta); err != nil {
		if delta < 0 {
			e.capDTO += delta
			return nil
		}
		return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEVD, err)
	}
	return nil
}

// noQueue is EVD.lastKey without a queue: no work request ID has a bit
// of its slot field above the slot (wrSlotMask) set, so none matches.
const noQueue = 1

// noRing is EVD.lastQ without a queue, so that Take reads its head before
// it compares the completion's ID with lastKey|head without testing for
// nil: a ring of one slot whose seq is not its head, never written.
var noRing = slotRing{slots: []cookieSlot{{seq: 1}}}
