package core

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"syscall"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// HandleMaker gives core objects it creates on its own (CRs, EPs of a PSP
// with the PROVIDER flag) their public handles.
type HandleMaker struct {
	CR func(*CR) dat.Handle
	EP func(*EP) dat.Handle
	// SP wraps a service point. Its handle is set before the listener
	// starts, since the first connection request may arrive at once.
	SP func(*SP) dat.Handle
}

// SP is a service point: a PSP (persistent, any number of requests) or an
// RSP (reserved for one EP, one request). It owns a verbs listener and the
// goroutine that accepts from it.
type SP struct {
	Object
	ia    *IA
	evd   *EVD
	qual  dat.ConnQual
	flags dat.PSPFlags
	mk    HandleMaker
	l     verbs.Listener

	mu sync.Mutex
	ep *EP // the RSP's EP while it holds it; guarded by mu

	cancel context.CancelFunc
	done   chan struct{}
}

// SPParam is what psp_query and rsp_query report.
type SPParam struct {
	ConnQual dat.ConnQual
	EVD      *EVD
	Flags    dat.PSPFlags
	EP       *EP // RSP only
}

// CreatePSP creates a PSP on qual (psp_create), or on a free qualifier the
// provider picks when any is set (psp_create_any).
func CreatePSP(ia *IA, qual dat.ConnQual, any bool, evd *EVD, flags dat.PSPFlags, mk HandleMaker) (*SP, error) {
	op := "psp_create"
	if any {
		op, qual = "psp_create_any", 0
	}
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if flags > dat.PSPProvider {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	sp := &SP{ia: ia, qual: qual, flags: flags, mk: mk}
	sp.init(dat.HandleTypePSP)
	if mk.SP != nil {
		sp.SetHandle(mk.SP(sp))
	}
	if err := sp.start(op, evd, any); err != nil {
		return nil, err
	}
	return sp, nil
}

// CreateRSP creates an RSP on qual reserved for ep (rsp_create); ep moves
// to RESERVED.
func CreateRSP(ia *IA, qual dat.ConnQual, ep *EP, evd *EVD, mk HandleMaker) (*SP, error) {
	const op = "rsp_create"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if err := ep.live(op); err != nil {
		return nil, err
	}
	sp := &SP{ia: ia, qual: qual, mk: mk, ep: ep}
	sp.init(dat.HandleTypeRSP)
	if mk.SP != nil {
		sp.SetHandle(mk.SP(sp))
	}
	ep.mu.Lock()
	if err := ep.require(op, canReserve); err != nil {
		ep.mu.Unlock()
		return nil, err
	}
	ep.setState(dat.EPStateReserved)
	ep.rsp = sp
	ep.mu.Unlock()
	if err := sp.start(op, evd, false); err != nil {
		ep.mu.Lock()
		ep.rsp = nil
		ep.setState(dat.EPStateUnconnected)
		ep.mu.Unlock()
		return nil, err
	}
	return sp, nil
}

// start checks the EVD, listens and starts the accept goroutine.
func (sp *SP) start(op string, evd *EVD, any bool) error {
	ia := sp.ia
	if err := evd.live(op); err != nil {
		return err
	}
	if evd.ia != ia || evd.flags&dat.EVDCR == 0 {
		return dat.NewError(op, dat.InvalidHandle, dat.InvalidHandleEVDCR)
	}
	if sp.qual > 65535 {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	evd.mu.Lock()
	backlog := evd.qlen
	evd.mu.Unlock()
	l, err := ia.dev.Listen(ia.listenAddr(sp.qual), backlog)
	if err != nil {
		switch {
		case any:
			return dat.Wrap(op, dat.ConnQualUnavailable, dat.NoSubtype, err)
		case errors.Is(err, syscall.EADDRINUSE):
			return dat.Wrap(op, dat.ConnQualInUse, dat.NoSubtype, err)
		}
		return dat.Wrap(op, dat.InsufficientResources, dat.NoSubtype, err)
	}
	if any {
		if p, ok := portOf(l.Addr()); ok {
			sp.qual = dat.ConnQual(p)
		}
	}
	if err := evd.Attach(op, 0, 0, false); err != nil {
		l.Close()
		return err
	}
	sp.evd, sp.l = evd, l
	if err := ia.adopt(op, &sp.Object, rankSP, sp.destroy); err != nil {
		evd.Detach(0, 0, false)
		l.Close()
		return err
	}
	if sp.typ == dat.HandleTypePSP {
		ia.mu.Lock()
		ia.psps[sp] = struct{}{}
		ia.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp.cancel, sp.done = cancel, make(chan struct{})
	go sp.routineAccept(ctx)
	return nil
}

func (sp *SP) live(op string) error {
	if sp == nil {
		return InvalidHandle(op, dat.HandleTypePSP)
	}
	return sp.Live(op)
}

// LiveSP returns DAT_INVALID_HANDLE for a nil or freed service point.
func (sp *SP) LiveSP(op string) error { return sp.live(op) }

// Query reports the service point (psp_query, rsp_query).
func (sp *SP) Query() (SPParam, error) {
	if err := sp.live("sp_query"); err != nil {
		return SPParam{}, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return SPParam{ConnQual: sp.qual, EVD: sp.evd, Flags: sp.flags, EP: sp.ep}, nil
}

// routineAccept turns each connection request into a CR and a
// CONNECTION_REQUEST event, until the SP is freed (an RSP: after one).
func (sp *SP) routineAccept(ctx context.Context) {
	defer close(sp.done)
	for {
		req, err := sp.l.Accept(ctx)
		if err != nil {
			return
		}
		if sp.typ == dat.HandleTypeRSP {
			sp.arriveRSP(req)
			return
		}
		sp.arrivePSP(req)
	}
}

func (sp *SP) arrivePSP(req verbs.ConnRequest) {
	cr := newCR(sp.ia, req, sp.qual, sp.mk)
	if sp.flags == dat.PSPProvider {
		ep := newEP(sp.ia)
		a, _ := sp.ia.epAttr("psp_create", nil)
		if err := ep.configure("psp_create", nil, nil, nil, nil, a); err != nil {
			req.Reject(nil)
			return
		}
		if sp.mk.EP != nil {
			ep.SetHandle(sp.mk.EP(ep))
		}
		if err := sp.ia.adopt("psp_create", &ep.Object, rankEP, ep.destroy); err != nil {
			req.Reject(nil)
			return
		}
		ep.mu.Lock()
		ep.setState(dat.EPStateTentativeConnectionPending)
		ep.cr = cr
		ep.mu.Unlock()
		cr.ep, cr.providerEP = ep, true
	}
	sp.deliver(cr, sp.handle)
}

func (sp *SP) arriveRSP(req verbs.ConnRequest) {
	sp.mu.Lock()
	ep := sp.ep
	sp.ep = nil
	sp.mu.Unlock()
	cr := newCR(sp.ia, req, sp.qual, sp.mk)
	cr.ep = ep
	ep.mu.Lock()
	ep.rsp = nil
	ep.cr = cr
	ep.setState(dat.EPStatePassiveConnectionPending)
	ep.mu.Unlock()
	// The RSP is used up: it destroys itself (its handle becomes invalid).
	sp.freed.Store(true)
	sp.ia.release(&sp.Object)
	sp.l.Close()
	sp.evd.Detach(0, 0, false)
	sp.deliver(cr, nil)
}

// deliver queues cr's event on the SP's EVD; a full EVD refuses the
// request like a full backlog.
func (sp *SP) deliver(cr *CR, spHandle dat.Handle) {
	if err := sp.ia.adopt("cr", &cr.Object, rankCR, cr.destroy); err != nil {
		cr.req.Reject(nil)
		return
	}
	ev := dat.Event{Number: dat.ConnectionRequestEvent, CR: dat.CRArrival{SP: spHandle, LocalAddr: sp.ia.entry.Addr, ConnQual: sp.qual, CR: cr.handle}}
	if !sp.evd.Push(ev) {
		cr.Reject(nil)
	}
}

// Free frees the service point (psp_free, rsp_free). Requests not yet
// delivered are refused; an RSP's EP returns to UNCONNECTED.
func (sp *SP) Free(op string) error {
	if err := sp.live(op); err != nil {
		return err
	}
	if !sp.destroySP() {
		return InvalidHandle(op, sp.typ)
	}
	sp.ia.release(&sp.Object)
	return nil
}

func (sp *SP) destroy() { sp.destroySP() }

func (sp *SP) destroySP() bool {
	if !sp.freed.CompareAndSwap(false, true) {
		// An RSP that fired is already freed, but its goroutine may run.
		if sp.done != nil {
			<-sp.done
		}
		return false
	}
	sp.ia.mu.Lock()
	delete(sp.ia.psps, sp)
	sp.ia.mu.Unlock()
	sp.cancel()
	sp.l.Close()
	<-sp.done
	sp.evd.Detach(0, 0, false)
	sp.mu.Lock()
	ep := sp.ep
	sp.ep = nil
	sp.mu.Unlock()
	if ep != nil {
		ep.mu.Lock()
		if ep.rsp == sp {
			ep.rsp = nil
			ep.setState(dat.EPStateUnconnected)
		}
		ep.mu.Unlock()
	}
	return true
}

// CR is a connection request waiting for accept, reject or handoff.
type CR struct {
	Object
	ia         *IA
	req        verbs.ConnRequest
	qual       dat.ConnQual
	mk         HandleMaker
	remote     netip.AddrPort
	pdata      []byte
	ep         *EP // RSP EP or provider-created EP
	providerEP bool
	mu         sync.Mutex
}

// CRParam is what cr_query reports.
type CRParam struct {
	RemoteAddr  netip.AddrPort
	PrivateData []byte
	LocalEP     *EP
}

func newCR(ia *IA, req verbs.ConnRequest, qual dat.ConnQual, mk HandleMaker) *CR {
	cr := &CR{ia: ia, req: req, qual: qual, mk: mk, pdata: req.PrivateData()}
	cr.init(dat.HandleTypeCR)
	if ap, err := netip.ParseAddrPort(req.RemoteAddr().String()); err == nil {
		cr.remote = ap
	}
	if mk.CR != nil {
		cr.SetHandle(mk.CR(cr))
	}
	return cr
}

func (cr *CR) live(op string) error {
	if cr == nil {
		return InvalidHandle(op, dat.HandleTypeCR)
	}
	return cr.Live(op)
}

// Query reports the request (cr_query).
func (cr *CR) Query() (CRParam, error) {
	if err := cr.live("cr_query"); err != nil {
		return CRParam{}, err
	}
	return CRParam{RemoteAddr: cr.remote, PrivateData: cr.pdata, LocalEP: cr.ep}, nil
}

// consume marks the CR used; false if it was already.
func (cr *CR) consume() bool {
	if !cr.freed.CompareAndSwap(false, true) {
		return false
	}
	cr.ia.release(&cr.Object)
	return true
}

// Accept accepts the request on ep, or on the CR's own EP when ep is nil
// (cr_accept). The EP passes through COMPLETION_PENDING to CONNECTED and
// gets ESTABLISHED (without private data) on its connect EVD, or
// ACCEPT_COMPLETION_ERROR and DISCONNECTED if the peer went away.
func (cr *CR) Accept(ep *EP, pdata []byte) error {
	const op = "cr_accept"
	if err := cr.live(op); err != nil {
		return err
	}
	if ep == nil {
		ep = cr.ep
	}
	if ep == nil {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if err := ep.live(op); err != nil {
		return err
	}
	if len(pdata) > cr.ia.maxPrivData() {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	ep.mu.Lock()
	if err := ep.require(op, canAccept); err != nil {
		ep.mu.Unlock()
		return err
	}
	if st := ep.State(); st != dat.EPStateUnconnected && ep.cr != cr {
		ep.mu.Unlock()
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if ep.qp == nil {
		ep.mu.Unlock()
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEPPZ)
	}
	if !cr.consume() {
		ep.mu.Unlock()
		return InvalidHandle(op, dat.HandleTypeCR)
	}
	ep.cr = nil
	ep.setState(dat.EPStateCompletionPending)
	qp, a := ep.qp, ep.attr
	ep.mu.Unlock()

	conn, err := cr.req.Accept(qp, verbs.ConnParam{PrivateData: append([]byte(nil), pdata...), ResponderResources: a.MaxRDMAReadIn, InitiatorDepth: a.MaxRDMAReadOut})

	ep.mu.Lock()
	connEVD := ep.connEVD
	if ep.freed.Load() || ep.State() != dat.EPStateCompletionPending {
		ep.mu.Unlock()
		if conn != nil {
			conn.Disconnect()
		}
		return nil
	}
	if err != nil {
		ep.enterDisconnectedLocked()
		ep.mu.Unlock()
		if connEVD != nil {
			connEVD.Push(dat.Event{Number: dat.ConnectionEventAcceptCompletion, Conn: dat.ConnectionData{EP: ep.handle}})
		}
		return nil
	}
	ep.conn = conn
	ep.localDisc = false
	ep.peerPData = cr.pdata
	ep.remote = cr.remote
	if ap, err := netip.ParseAddrPort(conn.LocalAddr().String()); err == nil {
		ep.local = ap
	}
	ep.setState(dat.EPStateConnected)
	ep.wg.Add(1)
	ep.mu.Unlock()
	if connEVD != nil {
		connEVD.Push(dat.Event{Number: dat.ConnectionEventEstablished, Conn: dat.ConnectionData{EP: ep.handle}})
	}
	go func() {
		defer ep.wg.Done()
		ep.watch(conn)
	}()
	return nil
}

// Reject refuses the request, sending pdata to the peer (cr_reject). An
// RSP's EP returns to UNCONNECTED; a provider-created EP goes back to the
// provider (it is freed).
func (cr *CR) Reject(pdata []byte) error {
	const op = "cr_reject"
	if err := cr.live(op); err != nil {
		return err
	}
	if len(pdata) > cr.ia.maxPrivData() {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	}
	if !cr.consume() {
		return InvalidHandle(op, dat.HandleTypeCR)
	}
	cr.req.Reject(pdata)
	cr.releaseEP()
	return nil
}

// releaseEP gives the CR's EP back: to the consumer (RSP) or the provider.
func (cr *CR) releaseEP() {
	ep := cr.ep
	if ep == nil {
		return
	}
	if cr.providerEP {
		if ep.destroyEP() {
			ep.ia.release(&ep.Object)
		}
		return
	}
	ep.mu.Lock()
	if ep.cr == cr {
		ep.cr = nil
		ep.setState(dat.EPStateUnconnected)
	}
	ep.mu.Unlock()
}

// Handoff passes the request to the PSP of this IA listening on qual
// (cr_handoff); a qualifier without a PSP is DAT_INVALID_PARAMETER.
func (cr *CR) Handoff(qual dat.ConnQual) error {
	const op = "cr_handoff"
	if err := cr.live(op); err != nil {
		return err
	}
	target := cr.ia.findPSP(qual)
	if target == nil {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if !cr.consume() {
		return InvalidHandle(op, dat.HandleTypeCR)
	}
	cr.releaseEP()
	target.arrivePSP(cr.req)
	return nil
}

// findPSP returns the live PSP of the IA on qual.
func (ia *IA) findPSP(qual dat.ConnQual) *SP {
	ia.mu.Lock()
	defer ia.mu.Unlock()
	for sp := range ia.psps {
		if sp.qual == qual && !sp.freed.Load() {
			return sp
		}
	}
	return nil
}

func (cr *CR) destroy() {
	if cr.freed.CompareAndSwap(false, true) {
		cr.req.Reject(nil)
	}
}
