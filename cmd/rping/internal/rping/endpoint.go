package rping

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/godapl/godapl/verbs"
)

// ErrDisconnected reports that the peer ended the connection (rping's
// RDMA_CM_EVENT_DISCONNECTED).
var ErrDisconnected = errors.New("DISCONNECT EVENT")

// errStepTimeout is the cause of a wait that ran out of StepTimeout.
var errStepTimeout = errors.New("timed out")

// Work request IDs, to tell completions apart.
const (
	wrRecv uint64 = iota + 1
	wrSendInfo
	wrRDMA
)

// event is what a completion means to the ping flow; send completions
// mean nothing and are consumed on the way.
type event uint8

const (
	evRecv      event = iota + 1 // an Info (or go-ahead) arrived
	evReadDone                   // the server's RDMA Read completed
	evWriteDone                  // the server's RDMA Write completed
)

var eventNames = [...]string{evRecv: "receive", evReadDone: "RDMA Read completion", evWriteDone: "RDMA Write completion"}

func (e event) String() string { return eventNames[e] }

// endpoint holds what rping sets up per connection (rping_setup_qp,
// rping_setup_buffers): a PD, a CQ, an RC QP of rping's depths and its
// registered buffers, with the work requests built once. One goroutine
// drives an endpoint; only its watcher goroutine, which turns the end of
// the connection into the cancellation of ctx, runs beside it.
type endpoint struct {
	cfg  *Config
	o    *output
	side string // "client" or "server", for the DISCONNECT EVENT line

	pd verbs.PD
	cq verbs.CQ
	qp verbs.QP

	recvBuf Info // the one receive buffer; LOCAL_WRITE
	sendBuf Info // what this side sends; no access rights, as in rping
	rdmaBuf []byte
	recvMR  verbs.MR
	sendMR  verbs.MR
	rdmaMR  verbs.MR
	mrs     []verbs.MR // every MR, for teardown

	info [InfoLen]byte // the last Info received, copied out before the receive is re-posted

	recvWR [1]verbs.RecvWR
	sendWR [1]verbs.SendWR
	rdmaWR [1]verbs.SendWR
	wc     [1]verbs.WC

	conn      verbs.Conn
	announced bool            // the DISCONNECT EVENT line is printed
	ctx       context.Context // ends with the connection (cause ErrDisconnected) or the caller's ctx
	cancel    context.CancelCauseFunc
	watcher   sync.WaitGroup
}

// rdmaAccess is what rping grants its start and rdma buffers.
const rdmaAccess = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite

// newEndpoint allocates the verbs objects of one connection, moves the QP
// to INIT and posts the receive, so that it is in place before the peer
// can send: the client's first Send may arrive as soon as the connection
// is up. On error everything allocated so far is released.
func newEndpoint(dev verbs.Device, cfg *Config, o *output, side string) (_ *endpoint, err error) {
	e := &endpoint{cfg: cfg, o: o, side: side}
	defer func() {
		if err != nil {
			e.free()
		}
	}()
	if e.pd, err = dev.AllocPD(); err != nil {
		return nil, fmt.Errorf("ibv_alloc_pd failed: %w", err)
	}
	if e.cq, err = dev.CreateCQ(verbs.CQAttr{Depth: CQDepth}); err != nil {
		return nil, fmt.Errorf("ibv_create_cq failed: %w", err)
	}
	e.qp, err = e.pd.CreateQP(verbs.QPInitAttr{
		SendCQ: e.cq, RecvCQ: e.cq,
		Caps: verbs.QPCaps{MaxSendWR: SQDepth, MaxRecvWR: RQDepth, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	if err != nil {
		return nil, fmt.Errorf("rdma_create_qp: %w", err)
	}
	o.debugf("created qp %d\n", e.qp.QPN())
	e.recvBuf, e.sendBuf = make(Info, InfoLen), make(Info, InfoLen)
	e.rdmaBuf = make([]byte, cfg.Size)
	if e.recvMR, err = e.reg(e.recvBuf, verbs.AccessLocalWrite); err != nil {
		return nil, fmt.Errorf("recv_buf reg_mr failed: %w", err)
	}
	if e.sendMR, err = e.reg(e.sendBuf, 0); err != nil {
		return nil, fmt.Errorf("send_buf reg_mr failed: %w", err)
	}
	if e.rdmaMR, err = e.reg(e.rdmaBuf, rdmaAccess); err != nil {
		return nil, fmt.Errorf("rdma_buf reg_mr failed: %w", err)
	}
	e.recvWR[0] = verbs.RecvWR{ID: wrRecv, SGL: []verbs.SGE{verbs.SGEOf(e.recvMR, 0, InfoLen)}}
	e.sendWR[0] = verbs.SendWR{ID: wrSendInfo, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{verbs.SGEOf(e.sendMR, 0, InfoLen)}}
	e.rdmaWR[0] = verbs.SendWR{ID: wrRDMA, Flags: verbs.SendSignaled, SGL: []verbs.SGE{verbs.SGEOf(e.rdmaMR, 0, 0)}}
	o.debugf("allocated & registered buffers...\n")
	if err = e.qp.Modify(verbs.QPStateInit); err != nil {
		return nil, fmt.Errorf("ibv_modify_qp INIT: %w", err)
	}
	if _, err = e.qp.PostRecv(e.recvWR[:]); err != nil {
		return nil, fmt.Errorf("ibv_post_recv failed: %w", err)
	}
	return e, nil
}

func (e *endpoint) reg(buf []byte, access verbs.Access) (verbs.MR, error) {
	mr, err := e.pd.RegMR(buf, access)
	if err == nil {
		e.mrs = append(e.mrs, mr)
	}
	return mr, err
}

// attach records the established connection and starts the watcher that
// cancels e.ctx when the connection ends.
func (e *endpoint) attach(ctx context.Context, conn verbs.Conn) {
	e.conn = conn
	e.ctx, e.cancel = context.WithCancelCause(ctx)
	e.watcher.Add(1)
	go e.watch()
}

// watch is the endpoint's one helper goroutine; it ends with the
// connection or with e.ctx (close cancels e.ctx and waits for it).
func (e *endpoint) watch() {
	defer e.watcher.Done()
	select {
	case <-e.conn.Done():
		e.cancel(ErrDisconnected)
	case <-e.ctx.Done():
	}
}

// next waits for the next completion that moves the ping along and
// returns what it was. Receives are checked (exactly InfoLen bytes) and
// the receive is re-posted at once, as rping's CQ handler does. It fails
// with ErrDisconnected when the peer ended the connection, with a timeout
// after StepTimeout, and with the caller's context error when that ends.
func (e *endpoint) next(want string) (event, error) {
	ctx, cancel := context.WithTimeoutCause(e.ctx, e.cfg.StepTimeout, errStepTimeout)
	defer cancel()
	ended := false
	for {
		for e.cq.Poll(e.wc[:]) == 1 {
			ev, err := e.handle(&e.wc[0])
			if err != nil || ev != 0 {
				return ev, err
			}
		}
		if ended {
			return 0, e.awaitEnd()
		}
		if err := e.cq.Wait(ctx, false); err != nil {
			cause := context.Cause(ctx)
			switch {
			case errors.Is(cause, ErrDisconnected):
				ended = true // one more pass: completions that raced with the end
				continue
			case errors.Is(cause, errStepTimeout):
				return 0, fmt.Errorf("no %s within %v", want, e.cfg.StepTimeout)
			case ctx.Err() != nil:
				return 0, cause
			}
			return 0, fmt.Errorf("ibv_get_cq_event: %w", err)
		}
	}
}

// handle interprets one completion like rping_cq_event_handler.
func (e *endpoint) handle(wc *verbs.WC) (event, error) {
	if wc.Status == verbs.WCWRFlushErr {
		// The QP went to ERROR: the connection is ending. rping skips
		// flushed completions and learns of the end from rdma_cm; here
		// the connection's Done says it.
		return 0, e.awaitEnd()
	}
	if wc.Status != verbs.WCSuccess {
		return 0, e.failedWC(fmt.Errorf("cq completion failed status %d (%s, %s)", wc.Status, wc.Opcode, wc.Status))
	}
	switch wc.Opcode {
	case verbs.WCSend:
		e.o.debugf("send completion\n")
		return 0, nil
	case verbs.WCRDMAWrite:
		e.o.debugf("rdma write completion\n")
		return evWriteDone, nil
	case verbs.WCRDMARead:
		e.o.debugf("rdma read completion\n")
		return evReadDone, nil
	case verbs.WCRecv:
		e.o.debugf("recv completion\n")
		if wc.ByteLen != InfoLen {
			return 0, fmt.Errorf("Received bogus data, size %d", wc.ByteLen)
		}
		copy(e.info[:], e.recvBuf)
		if _, err := e.qp.PostRecv(e.recvWR[:]); err != nil {
			return 0, fmt.Errorf("post recv error: %w", err)
		}
		return evRecv, nil
	}
	return 0, fmt.Errorf("unknown completion %s", wc.Opcode)
}

// awaitEnd waits, briefly, for the connection to report its end after its
// work was flushed, and returns ErrDisconnected or why it ended.
func (e *endpoint) awaitEnd() error {
	t := time.NewTimer(disconnectGrace)
	defer t.Stop()
	select {
	case <-e.conn.Done():
	case <-t.C:
		return errors.New("work flushed but the connection did not end")
	}
	e.announceEnd()
	if err := e.conn.Err(); err != nil && !errors.Is(err, verbs.ErrDisconnected) {
		return err
	}
	if err := context.Cause(e.ctx); err != nil && !errors.Is(err, ErrDisconnected) {
		return err
	}
	return ErrDisconnected
}

// failedWC decides what an error completion means. A request can fail on
// its way while the peer disconnects (verbs/mem reports a Send that meets
// the peer's flushed receive queue as a remote operation error, where a
// socket would have taken it): when the connection then ends without a
// Terminate, the end is the news, as rping learns it from rdma_cm. A
// completion error that comes with a Terminate, or without the connection
// ending, stands.
func (e *endpoint) failedWC(werr error) error {
	t := time.NewTimer(wcErrorGrace)
	defer t.Stop()
	select {
	case <-e.conn.Done():
	case <-t.C:
		return werr
	}
	var te *verbs.TerminateError
	if errors.As(e.conn.Err(), &te) {
		return fmt.Errorf("%w: %w", werr, te)
	}
	e.announceEnd()
	return ErrDisconnected
}

// announceEnd prints rping's "<side> DISCONNECT EVENT..." line, once per
// connection: rping prints it for every DISCONNECTED event, which both
// sides get, whoever disconnected.
func (e *endpoint) announceEnd() {
	if !e.announced {
		e.announced = true
		e.o.err.printf("%s DISCONNECT EVENT...\n", e.side)
	}
}

// post posts one send work request, naming the operation in the error.
func (e *endpoint) post(wr []verbs.SendWR) error {
	if _, err := e.qp.PostSend(wr); err != nil {
		return fmt.Errorf("post send error: %s: %w", wr[0].Opcode, err)
	}
	return nil
}

// close ends the connection and frees the endpoint. With SelfQP the QP is
// moved to ERROR first, as rping -q does. It waits for the watcher.
func (e *endpoint) close() {
	if e.conn != nil {
		if e.cfg.SelfQP {
			e.qp.Modify(verbs.QPStateError)
		}
		e.conn.Disconnect()
		e.announceEnd()
		e.cancel(nil)
		e.watcher.Wait()
	}
	e.free()
}

// free releases the verbs objects in dependency order.
func (e *endpoint) free() {
	if e.qp != nil {
		e.qp.Destroy()
	}
	for _, mr := range e.mrs {
		mr.Dereg()
	}
	if e.cq != nil {
		e.cq.Destroy()
	}
	if e.pd != nil {
		e.pd.Dealloc()
	}
}
