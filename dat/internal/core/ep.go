package core

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// Defaults for EP attributes left zero.
const (
	DefaultMaxDTOs = 64
	DefaultMaxIOV  = 4
	DefaultRDMARd  = 4
	maxMessage     = 1<<32 - 1
)

// EP is an endpoint: a verbs RC QP, its cookie tables, its connection and
// the DAT state machine around them.
type EP struct {
	Object
	ia    *IA
	state atomic.Uint32 // dat.EPState; written under mu

	mu        sync.Mutex
	pz        *PZ                // guarded by mu
	recvEVD   *EVD               // guarded by mu
	reqEVD    *EVD               // guarded by mu
	connEVD   *EVD               // guarded by mu
	attr      dat.EPAttr         // guarded by mu
	qp        verbs.QP           // nil until the EP has a PZ (provider-created EPs); guarded by mu
	own       *owner             // guarded by mu
	conn      verbs.Conn         // guarded by mu
	cancel    context.CancelFunc // of a connect in progress; guarded by mu
	remote    netip.AddrPort     // guarded by mu
	local     netip.AddrPort     // guarded by mu
	peerPData []byte             // guarded by mu
	localDisc bool               // this side ended the connection; guarded by mu
	rsp       *SP                // RSP holding the EP in RESERVED; guarded by mu
	cr        *CR                // CR the EP waits on (PASSIVE/TENTATIVE); guarded by mu

	// cfg is what the post paths read of the fields above: a snapshot
	// replaced whole under mu whenever they change, so that a post costs
	// one atomic load instead of a lock. nil while the EP has no QP.
	cfg atomic.Pointer[postCfg]

	// srq is the SRQ the EP was created with: set before the EP is
	// visible and never changed (DAT has no way to detach it).
	srq *SRQ
	// hw are the soft and hard high watermarks (ep_set_watermark).
	hw epWatermarks

	stop chan struct{} // closed by free: goroutines of the EP end
	wg   sync.WaitGroup

	// Post scratch: verbs takes work requests by slice through an
	// interface, which would make a stack array escape; these live with
	// the EP and are guarded by the post locks: the QP's send and receive
	// queue locks (postCfg.sq, postCfg.rq), which also guard the slot
	// rings' poster fields. Each work request's SGL is a slice of its
	// array from newEP on: a post only sets its length, which costs no
	// write barrier (see Post).
	swr  [1]verbs.SendWR
	dwr  [1]verbs.SendWR // PostDTO's: one SGE (ssgl[0]), never a bind or an invalidation
	ssgl [verbs.MaxSGE]verbs.SGE
	rwr  [1]verbs.RecvWR
	drwr [1]verbs.RecvWR // PostRecv's common case: one SGE (rsgl[0])
	rsgl [verbs.MaxSGE]verbs.SGE
	list *sendList // PostSendList's, from the EP's first list on
}

// postCfg is the part of an EP's configuration its post paths need.
type postCfg struct {
	// The fields PostDTO's common case reads, sq to one, share the
	// first cache line: spread over the struct they took three lines a
	// post, cold again after each round trip's system calls.
	sq              sendQ
	sqMu            *sync.Mutex // what LockSend takes, when known (see lockSend)
	own             *owner
	reqID           uint64 // own.id: the work request IDs but the slot
	pz              *PZ
	unsigSuppressed bool // sq can tell what retired: suppressed DTOs go unsignalled

	// one: the flags with which a request of one segment of each DTO op
	// may take PostDTO's way, and oneBit, which no request carries, if
	// it may at all (else 0: nothing passes): the state posts requests
	// (reqIOV >= 1), the QP checks SGLs and lends its send queue's
	// mutex. recvOne, likewise for a receive of one segment, PostRecv's
	// common case: the EP is not on an SRQ and allows one (recvIOV >= 1),
	// the QP checks SGLs and lends its receive queue's mutex. A post
	// tests (flags|oneBit)&^one: one test, where a flag and a mask were
	// two.
	one     [4]dat.CompletionFlags
	recvOne dat.CompletionFlags

	qp                             verbs.QP
	rq                             recvQ
	rqMu                           *sync.Mutex // what LockRecv takes, when known (see lockSend)
	checksSGL                      bool        // the QP checks SGLs at post time (fastpath.SGLChecker)
	recvID                         uint64      // own.id with wrRecvBit
	reqUnsig, recvUnsig            bool        // the queues allow UNSIGNALLED
	maxIOV, maxReadIOV, maxRecvIOV int

	// What the post paths let through without looking further: the
	// completion flags a request may carry, by DTO op, and a receive; the
	// segments a request may have, by DTO op, -1 while the EP's state
	// posts no requests; the segments of a receive, -1 for an EP on an
	// SRQ. A post outside them goes through the checks one by one.
	reqFlags  [4]dat.CompletionFlags
	reqIOV    [4]int
	recvFlags dat.CompletionFlags
	recvIOV   int

	// To 256 bytes, a size class whose objects start on a cache line,
	// so that the fields PostDTO reads never straddle two.
	_ [7]uint64
}

// oneBit marks, in postCfg.one and recvOne, that PostDTO's way or
// PostRecv's common case is open: above every completion flag.
const oneBit dat.CompletionFlags = 0x80

// oneIf is flags|oneBit if ok, else 0.
func oneIf(ok bool, flags dat.CompletionFlags) dat.CompletionFlags {
	if !ok {
		return 0
	}
	return flags | oneBit
}

// setPostable records in c whether the EP's state st posts requests.
func (c *postCfg) setPostable(st dat.EPState) {
	c.reqIOV = [4]int{-1, -1, -1, -1}
	if canPostRequest.has(st) {
		c.reqIOV[dat.DTOSend], c.reqIOV[dat.DTORDMAWrite], c.reqIOV[dat.DTORDMARead] = c.maxIOV, c.maxIOV, c.maxReadIOV
	}
	for op, n := range c.reqIOV {
		c.one[op] = oneIf(n >= 1 && c.checksSGL && c.sqMu != nil, c.reqFlags[op])
	}
}

// storeCfgLocked publishes the post snapshot of the current
// configuration; callers hold mu.
func (ep *EP) storeCfgLocked() {
	if ep.qp == nil {
		ep.cfg.Store(nil)
		return
	}
	a := &ep.attr
	_, lent := ep.qp.(fastpath.SendQueueLocker)
	if b, ok := ep.qp.(fastpath.RetireBlind); ok && b.RetireBlind() {
		lent = false // suppressed DTOs stay signalled (RetireBlind)
	}
	sc, ok := ep.qp.(fastpath.SGLChecker)
	c := &postCfg{
		qp: ep.qp, sq: sendQueue(ep.qp), rq: recvQueue(ep.qp), unsigSuppressed: lent, own: ep.own, pz: ep.pz,
		reqID: ep.own.id, recvID: ep.own.id | wrRecvBit,
		checksSGL:  ok && sc.ChecksSGL(),
		reqUnsig:   a.RequestCompletionFlags&dat.CompletionUnsignalled != 0,
		recvUnsig:  a.RecvCompletionFlags&dat.CompletionUnsignalled != 0,
		maxIOV:     a.MaxRequestIOV,
		maxReadIOV: a.MaxRDMAReadIOV,
		maxRecvIOV: a.MaxRecvIOV,
	}
	c.sqMu, c.rqMu = queueMutexes(c.sq, c.rq)
	c.setFast(ep.State(), ep.srq != nil)
	ep.cfg.Store(c)
}

// setFast fills what the post paths let through without further checks
// from the rest of c, the EP's state st and whether it is on an SRQ.
func (c *postCfg) setFast(st dat.EPState, onSRQ bool) {
	f := validFlags
	if !c.reqUnsig {
		f &^= dat.CompletionUnsignalled
	}
	c.reqFlags = [4]dat.CompletionFlags{dat.DTOSend: f, dat.DTORDMAWrite: f &^ dat.CompletionSolicitedWait, dat.DTORDMARead: f &^ dat.CompletionSolicitedWait}
	c.recvFlags = dat.CompletionSuppress
	if c.recvUnsig {
		c.recvFlags |= dat.CompletionUnsignalled
	}
	c.recvIOV = c.maxRecvIOV
	if onSRQ {
		c.recvIOV = -1
	}
	c.recvOne = oneIf(c.recvIOV >= 1 && c.checksSGL && c.rqMu != nil, c.recvFlags)
	c.setPostable(st)
}

// EPParam is what ep_query reports.
type EPParam struct {
	State      dat.EPState
	Local      netip.AddrPort
	Remote     netip.AddrPort
	PZ         *PZ
	RecvEVD    *EVD
	RequestEVD *EVD
	ConnectEVD *EVD
	Attr       dat.EPAttr
}

// withDefaults fills zero attributes and checks them against the device.
func (ia *IA) epAttr(op string, a *dat.EPAttr) (dat.EPAttr, error) {
	var r dat.EPAttr
	if a != nil {
		r = *a
	}
	d := &ia.dattr
	def := func(v *int, dflt int) {
		if *v == 0 {
			*v = dflt
		}
	}
	if r.ServiceType == 0 {
		r.ServiceType = dat.ServiceTypeRC
	}
	def(&r.MaxRecvDTOs, DefaultMaxDTOs)
	def(&r.MaxRequestDTOs, DefaultMaxDTOs)
	def(&r.MaxRecvIOV, DefaultMaxIOV)
	def(&r.MaxRequestIOV, DefaultMaxIOV)
	def(&r.MaxRDMAReadIn, DefaultRDMARd)
	def(&r.MaxRDMAReadOut, DefaultRDMARd)
	def(&r.MaxRDMAReadIOV, 1)
	def(&r.MaxRDMAWriteIOV, r.MaxRequestIOV)
	if r.MaxMessageSize == 0 {
		r.MaxMessageSize = maxMessage
	}
	if r.MaxRDMASize == 0 {
		r.MaxRDMASize = maxMessage
	}
	if r.SRQSoftHW == 0 {
		r.SRQSoftHW = dat.WatermarkInfinite
	}
	recvModels := dat.CompletionSolicitedWait | dat.CompletionUnsignalled | dat.CompletionEVDThreshold
	reqModels := dat.CompletionUnsignalled | dat.CompletionEVDThreshold
	switch {
	case r.ServiceType != dat.ServiceTypeRC:
		return r, dat.NewError(op, dat.ModelNotSupported, dat.InvalidArg6)
	case r.MaxRecvDTOs < 0 || r.MaxRecvDTOs > d.MaxQPWR, r.MaxRequestDTOs < 0 || r.MaxRequestDTOs*r.MaxRDMAReadIOV > d.MaxQPWR,
		r.MaxRecvIOV < 0 || r.MaxRecvIOV > d.MaxSGE, r.MaxRequestIOV < 0 || r.MaxRequestIOV > d.MaxSGE,
		r.MaxRDMAReadIn < 0 || r.MaxRDMAReadIn > d.MaxIRD, r.MaxRDMAReadOut < 0 || r.MaxRDMAReadOut > d.MaxORD,
		r.MaxRDMAReadIOV < 0 || r.MaxRDMAReadIOV > d.MaxSGE, r.MaxRDMAWriteIOV < 0 || r.MaxRDMAWriteIOV > d.MaxSGE,
		r.MaxMessageSize > maxMessage, r.MaxRDMASize > maxMessage,
		r.RecvCompletionFlags&^recvModels != 0, r.RequestCompletionFlags&^reqModels != 0:
		return r, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg6)
	}
	return r, nil
}

// CreateEP creates an EP in UNCONNECTED (ep_create). pz may be nil only
// for provider-created EPs; nil EVDs mean "not interested".
func CreateEP(ia *IA, pz *PZ, recv, req, conn *EVD, attr *dat.EPAttr) (*EP, error) {
	const op = "ep_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if err := pz.live(op); err != nil {
		return nil, err
	}
	a, err := ia.epAttr(op, attr)
	if err != nil {
		return nil, err
	}
	ep := newEP(ia)
	if err := ep.configure(op, pz, recv, req, conn, a); err != nil {
		return nil, err
	}
	if err := ia.adopt(op, &ep.Object, rankEP, ep.destroy); err != nil {
		ep.unconfigure()
		return nil, err
	}
	return ep, nil
}

func newEP(ia *IA) *EP {
	ep := &EP{ia: ia, stop: make(chan struct{})}
	ep.swr[0].SGL, ep.rwr[0].SGL = ep.ssgl[:0], ep.rsgl[:0]
	ep.dwr[0].SGL, ep.drwr[0].SGL = ep.ssgl[:1], ep.rsgl[:1]
	ep.init(dat.HandleTypeEP)
	return ep
}

// checkEVD validates an EVD for a role: it must be live, of this IA and
// accept the role's stream.
func (ia *IA) checkEVD(op string, e *EVD, need dat.EVDFlags, sub dat.Subtype) error {
	if e == nil {
		return nil
	}
	if e.freed.Load() || e.ia != ia || e.flags&need == 0 {
		return dat.NewError(op, dat.InvalidHandle, sub)
	}
	return nil
}

// configure gives the EP its PZ, EVDs and attributes and creates its QP
// and cookie tables. The EP must have none yet.
func (ep *EP) configure(op string, pz *PZ, recv, req, conn *EVD, a dat.EPAttr) error {
	ia := ep.ia
	if pz != nil && pz.ia != ia {
		return dat.NewError(op, dat.InvalidHandle, dat.InvalidHandlePZ)
	}
	if ep.srq != nil && pz != ep.srq.pz {
		// Receive buffers are checked against the SRQ's PZ, everything
		// else against the EP's: godapl keeps them the same.
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if err := ia.checkEVD(op, recv, dat.EVDDTO, dat.InvalidHandleEVDRecv); err != nil {
		return err
	}
	if err := ia.checkEVD(op, req, dat.EVDDTO|dat.EVDRMRBind, dat.InvalidHandleEVDRequest); err != nil {
		return err
	}
	if err := ia.checkEVD(op, conn, dat.EVDConnection, dat.InvalidHandleEVDConn); err != nil {
		return err
	}
	sendDepth := a.MaxRequestDTOs * a.MaxRDMAReadIOV
	var qp verbs.QP
	if pz != nil {
		sendCQ, recvCQ, err := ep.cqs(req, recv)
		if err != nil {
			return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEVD, err)
		}
		init := verbs.QPInitAttr{
			// Each request says whether it is signalled: suppressed
			// DTOs need not be (see slotRing).
			SendCQ: sendCQ, RecvCQ: recvCQ, SignalAll: false,
			Caps: verbs.QPCaps{MaxSendWR: max(sendDepth, 1), MaxRecvWR: max(a.MaxRecvDTOs, 1), MaxSendSGE: max(a.MaxRequestIOV, 1), MaxRecvSGE: max(a.MaxRecvIOV, 1)},
		}
		if ep.srq != nil {
			init.SRQ = ep.srq.vsrq
		}
		qp, err = pz.pd.CreateQP(init)
		if err != nil {
			return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEP, err)
		}
		if err := qp.Modify(verbs.QPStateInit); err != nil {
			qp.Destroy()
			return dat.Wrap(op, dat.InternalError, dat.NoSubtype, err)
		}
	}
	own := &owner{ep: ep}
	own.req.init(max(sendDepth, 1), req, ep)
	own.recv.init(max(a.MaxRecvDTOs, 1), recv, ep)
	if err := ia.addOwner(own); err != nil {
		if qp != nil {
			qp.Destroy()
		}
		return err
	}
	attached := make([]func(), 0, 3)
	undo := func() {
		for _, f := range attached {
			f()
		}
		ia.removeOwner(own)
		if qp != nil {
			qp.Destroy()
		}
		ia.reuseOwnerIndex(own)
	}
	attach := func(e *EVD, capacity int, model dat.CompletionFlags, recvSide bool) error {
		if e == nil {
			return nil
		}
		if err := e.Attach(op, capacity, model, recvSide); err != nil {
			return err
		}
		attached = append(attached, func() { e.Detach(capacity, model, recvSide) })
		return nil
	}
	recvCap, recvModel := ep.recvAccount(a)
	if err := attach(recv, recvCap, recvModel, true); err != nil {
		undo()
		return err
	}
	if ep.srq != nil && recv != nil {
		if err := ep.srq.feed(op, recv); err != nil {
			undo()
			return err
		}
		attached = append(attached, func() { ep.srq.unfeed(recv) })
	}
	if err := attach(req, sendDepth, a.RequestCompletionFlags, false); err != nil {
		undo()
		return err
	}
	if err := attach(conn, 0, 0, false); err != nil {
		undo()
		return err
	}
	ep.mu.Lock()
	ep.pz, ep.recvEVD, ep.reqEVD, ep.connEVD, ep.attr, ep.qp, ep.own = pz, recv, req, conn, a, qp, own
	ep.storeCfgLocked()
	ep.mu.Unlock()
	if pz != nil {
		pz.Use()
	}
	if qp != nil {
		ia.ownMu.Lock()
		ia.byQPN[qp.QPN()] = ep
		ia.byQPNGen.Add(1)
		ia.ownMu.Unlock()
		ia.hook(qp, ep.onAsync)
	}
	return nil
}

// cqs returns the CQs of the EP's queues: an EVD's, or the IA's null CQ.
func (ep *EP) cqs(req, recv *EVD) (verbs.CQ, verbs.CQ, error) {
	var sendCQ, recvCQ verbs.CQ
	if req != nil {
		sendCQ = req.cq
	}
	if recv != nil {
		recvCQ = recv.cq
	}
	if sendCQ == nil || recvCQ == nil {
		null, err := ep.ia.NullCQ()
		if err != nil {
			return nil, nil, err
		}
		if sendCQ == nil {
			sendCQ = null
		}
		if recvCQ == nil {
			recvCQ = null
		}
	}
	return sendCQ, recvCQ, nil
}

// unconfigure undoes configure: destroys the QP (flushing into CQs whose
// completions are then dropped, the owner being gone), detaches the EVDs
// and drops the EP's queued events.
func (ep *EP) unconfigure() {
	ep.mu.Lock()
	pz, recv, req, conn, a, qp, own := ep.pz, ep.recvEVD, ep.reqEVD, ep.connEVD, ep.attr, ep.qp, ep.own
	ep.pz, ep.recvEVD, ep.reqEVD, ep.connEVD, ep.qp, ep.own = nil, nil, nil, nil, nil, nil
	ep.storeCfgLocked()
	ep.mu.Unlock()
	ia := ep.ia
	if own != nil {
		ia.removeOwner(own)
	}
	if qp != nil {
		ia.hook(qp, nil)
		ia.ownMu.Lock()
		if ia.byQPN[qp.QPN()] == ep {
			delete(ia.byQPN, qp.QPN())
			ia.byQPNGen.Add(1)
		}
		ia.ownMu.Unlock()
		qp.Destroy()
	}
	for _, e := range []*EVD{recv, req, conn} {
		if e != nil {
			e.Purge(ep)
		}
	}
	if own != nil {
		ia.reuseOwnerIndex(own) // the flushes are dropped
	}
	if recv != nil {
		if ep.srq != nil {
			ep.srq.unfeed(recv)
		}
		recvCap, recvModel := ep.recvAccount(a)
		recv.Detach(recvCap, recvModel, true)
	}
	if req != nil {
		req.Detach(a.MaxRequestDTOs*a.MaxRDMAReadIOV, a.RequestCompletionFlags, false)
	}
	if conn != nil {
		conn.Detach(0, 0, false)
	}
	if pz != nil {
		pz.Unuse()
	}
}

func (ep *EP) live(op string) error {
	if ep == nil {
		return InvalidHandle(op, dat.HandleTypeEP)
	}
	return ep.Live(op)
}

// LiveEP returns DAT_INVALID_HANDLE for a nil or freed EP.
func (ep *EP) LiveEP(op string) error { return ep.live(op) }

// IA returns the EP's IA.
func (ep *EP) IA() *IA { return ep.ia }

// Query reports the EP (ep_query).
func (ep *EP) Query() (EPParam, error) {
	if err := ep.live("ep_query"); err != nil {
		return EPParam{}, err
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return EPParam{
		State: ep.State(), Local: ep.local, Remote: ep.remote, PZ: ep.pz,
		RecvEVD: ep.recvEVD, RequestEVD: ep.reqEVD, ConnectEVD: ep.connEVD, Attr: ep.attr,
	}, nil
}

// PeerPrivateData returns the private data the peer sent with its accept
// (active side) or request (passive side), valid until free or reset.
func (ep *EP) PeerPrivateData() []byte {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.peerPData
}

// Status reports the state and whether each direction is idle
// (ep_get_status): no DTO posted whose completion was not yet dequeued.
func (ep *EP) Status() (st dat.EPState, recvIdle, reqIdle bool, err error) {
	if err := ep.live("ep_get_status"); err != nil {
		return 0, false, false, err
	}
	recvIdle, reqIdle = true, true
	if c := ep.cfg.Load(); c != nil {
		c.rq.LockRecv()
		recvIdle = c.own.recv.outstanding() == 0
		c.rq.UnlockRecv()
		c.sq.LockSend()
		reqIdle = c.own.req.idleLocked(c.sq)
		c.sq.UnlockSend()
	}
	return ep.State(), recvIdle, reqIdle, nil
}

// Modify changes the EP's PZ, EVDs or attributes (ep_modify). The PZ may
// change in UNCONNECTED and TENTATIVE_CONNECTION_PENDING, the rest also in
// RESERVED and PASSIVE_CONNECTION_PENDING; the EP's queues must be idle,
// because the QP is rebuilt.
func (ep *EP) Modify(pz *PZ, recv, req, conn *EVD, attr *dat.EPAttr) error {
	const op = "ep_modify"
	if err := ep.live(op); err != nil {
		return err
	}
	ep.mu.Lock()
	oldPZ := ep.pz
	ep.mu.Unlock()
	allowed := canModifyConfig
	if pz != oldPZ {
		allowed = canModifyPZ
	}
	if err := ep.require(op, allowed); err != nil {
		return err
	}
	if pz != nil {
		if err := pz.live(op); err != nil {
			return err
		}
	}
	a, err := ep.ia.epAttr(op, attr)
	if err != nil {
		return err
	}
	if _, rIdle, qIdle, _ := ep.Status(); !rIdle || !qIdle {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEPNotReady)
	}
	ep.unconfigure()
	if err := ep.configure(op, pz, recv, req, conn, a); err != nil {
		return err
	}
	return nil
}

// Reset returns a DISCONNECTED EP to UNCONNECTED (ep_reset); in
// UNCONNECTED it does nothing.
func (ep *EP) Reset() error {
	const op = "ep_reset"
	if err := ep.live(op); err != nil {
		return err
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if err := ep.require(op, canReset); err != nil {
		return err
	}
	if ep.State() == dat.EPStateUnconnected {
		return nil
	}
	if ep.qp != nil {
		if err := ep.qp.Modify(verbs.QPStateReset); err != nil {
			return dat.Wrap(op, dat.InternalError, dat.NoSubtype, err)
		}
		if err := ep.qp.Modify(verbs.QPStateInit); err != nil {
			return dat.Wrap(op, dat.InternalError, dat.NoSubtype, err)
		}
	}
	ep.conn, ep.peerPData, ep.localDisc = nil, nil, false
	ep.remote, ep.local = netip.AddrPort{}, netip.AddrPort{}
	ep.setState(dat.EPStateUnconnected)
	return nil
}

// Free frees the EP (ep_free): not while RESERVED or with a connection
// request pending on it. A connection or a connect in progress is torn
// down abruptly; posted DTOs and queued events of the EP vanish.
func (ep *EP) Free() error {
	const op = "ep_free"
	if err := ep.live(op); err != nil {
		return err
	}
	if err := ep.require(op, canFree); err != nil {
		return err
	}
	if !ep.destroyEP() {
		return InvalidHandle(op, dat.HandleTypeEP)
	}
	ep.ia.release(&ep.Object)
	return nil
}

func (ep *EP) destroy() { ep.destroyEP() }

// destroyEP tears the EP down; false if it was already freed.
func (ep *EP) destroyEP() bool {
	if !ep.freed.CompareAndSwap(false, true) {
		return false
	}
	close(ep.stop)
	ep.mu.Lock()
	if ep.cancel != nil {
		ep.cancel()
	}
	conn := ep.conn
	ep.conn = nil
	if rsp := ep.rsp; rsp != nil {
		ep.rsp = nil
		ep.mu.Unlock()
		rsp.destroy()
		ep.mu.Lock()
	}
	ep.mu.Unlock()
	ep.unconfigure() // destroying the QP ends the connection
	if conn != nil {
		<-conn.Done()
	}
	ep.wg.Wait()
	if ep.srq != nil {
		ep.srq.detachEP(ep)
	}
	return true
}

// onAsync handles the device's events about the EP's QP.
func (ep *EP) onAsync(ev verbs.AsyncEvent) {
	switch ev.Type {
	case verbs.EventQPFatal, verbs.EventQPAccessErr, verbs.EventQPReqErr:
		ep.ia.PostAsync(dat.Event{Number: dat.AsyncErrorEPBroken, Async: dat.AsyncErrorData{Handle: ep.handle, Reason: dat.ReasonEPTransferToErr, Err: ev.Err}})
	}
}
