package core

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
)

// canTake are the states in which an EP takes buffers from its SRQ.
var canTake = states(dat.EPStateConnected, dat.EPStateDisconnectPending)

// CreateEPWithSRQ creates an EP whose receives come from srq
// (ep_create_with_srq). The EP must be in the SRQ's PZ (godapl does not
// support srq_ep_pz_difference) and needs a recv EVD: the buffers it
// takes complete there, following the EP's recv completion flags.
func CreateEPWithSRQ(ia *IA, pz *PZ, recv, req, conn *EVD, srq *SRQ, attr *dat.EPAttr) (*EP, error) {
	const op = "ep_create_with_srq"
	if err := ia.live(op); err != nil {
		return nil, err
	}
	if err := pz.live(op); err != nil {
		return nil, err
	}
	if err := srq.live(op); err != nil {
		return nil, err
	}
	if attr == nil {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg7)
	}
	if recv == nil {
		return nil, dat.NewError(op, dat.InvalidHandle, dat.InvalidHandleEVDRecv)
	}
	if srq.ia != ia {
		return nil, dat.NewError(op, dat.InvalidHandle, dat.InvalidHandleSRQ)
	}
	a, err := ia.epAttr(op, attr)
	if err != nil {
		return nil, err
	}
	ep := newEP(ia)
	ep.srq = srq
	if err := srq.attachEP(op, pz, ep); err != nil {
		return nil, err
	}
	if err := ep.configure(op, pz, recv, req, conn, a); err != nil {
		srq.detachEP(ep)
		return nil, err
	}
	if err := ia.adopt(op, &ep.Object, rankEP, ep.destroy); err != nil {
		ep.unconfigure()
		srq.detachEP(ep)
		return nil, err
	}
	return ep, nil
}

// recvAccount is what the EP's receive side attaches to its recv EVD: its
// queue size and notification model. An SRQ EP has no queue of its own
// (the SRQ accounts for the CQ once per EVD), and its receives always
// complete signalled, so UNSIGNALLED does not make the EVD's waits
// threshold-less.
func (ep *EP) recvAccount(a dat.EPAttr) (int, dat.CompletionFlags) {
	if ep.srq != nil {
		return 0, a.RecvCompletionFlags &^ dat.CompletionUnsignalled
	}
	return a.MaxRecvDTOs, a.RecvCompletionFlags
}

// SRQ returns the SRQ the EP was created with, or nil.
func (ep *EP) SRQ() *SRQ { return ep.srq }

// RecvQuery reports the receive buffers allocated to the EP whose
// completions were not generated yet, and their span (ep_recv_query).
//
// Without an SRQ a buffer is allocated when posted: the count is the
// receives posted minus the completions already generated. With an SRQ a
// buffer is allocated when a message starts arriving and the EP takes it:
// the count is what the EP's QP reports through fastpath.RecvInProgress.
// Over a provider without that hook only the SRQ's total is known, so the
// count is exact when that total is 0, when the EP cannot take buffers,
// and when it is the only EP of its SRQ that can; otherwise it is
// DAT_VALUE_UNKNOWN. Messages of one connection arrive in order (iWARP's
// MSN order), so buffers are allocated without gaps and the span equals
// the count.
func (ep *EP) RecvQuery() (nbufs, span int, err error) {
	if err := ep.live("ep_recv_query"); err != nil {
		return 0, 0, err
	}
	n := ep.allocated()
	return n, n, nil
}

func (ep *EP) allocated() int {
	if s := ep.srq; s != nil {
		if !canTake.has(ep.State()) {
			return 0
		}
		if c := ep.cfg.Load(); c != nil {
			if r, ok := c.qp.(fastpath.RecvInProgress); ok {
				return r.RecvInProgress()
			}
		}
		n := s.inProgress()
		if n == 0 || s.soleReceiver(ep) {
			return n
		}
		return dat.ValueUnknown
	}
	c := ep.cfg.Load()
	if c == nil {
		return 0
	}
	q := &c.own.recv
	c.rq.LockRecv()
	defer c.rq.UnlockRecv()
	generated := 0
	if q.evd != nil {
		generated = q.evd.countHeld(nil, q)
	}
	return max(q.outstanding()-generated, 0)
}

// epWatermarks are an EP's high watermarks (ep_set_watermark).
type epWatermarks struct {
	active atomic.Bool // either is set: posts check them

	mu        sync.Mutex
	soft      int  // guarded by mu
	hard      int  // guarded by mu
	softArmed bool // guarded by mu
}

// SetWatermark sets the soft and hard high watermarks on the receive
// buffers the EP holds (ep_set_watermark); dat.WatermarkInfinite turns one
// off. The soft one arms a one-shot AsyncEPSoftHighWatermark event on the
// IA's async EVD; past the hard one the connection is broken
// (CONNECTION_EVENT_BROKEN). Both are checked at once, and for an EP with
// its own receive queue again after every post.
func (ep *EP) SetWatermark(soft, hard int) error {
	const op = "ep_set_watermark"
	if err := ep.live(op); err != nil {
		return err
	}
	if soft < dat.WatermarkInfinite {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	if hard < dat.WatermarkInfinite {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	}
	w := &ep.hw
	w.mu.Lock()
	w.soft, w.hard, w.softArmed = soft, hard, soft != dat.WatermarkInfinite
	w.active.Store(soft != dat.WatermarkInfinite || hard != dat.WatermarkInfinite)
	w.mu.Unlock()
	ep.checkWatermarks()
	return nil
}

// checkWatermarks fires what the current allocation exceeds.
func (ep *EP) checkWatermarks() {
	w := &ep.hw
	if !w.active.Load() {
		return
	}
	n := ep.allocated()
	if n == dat.ValueUnknown {
		return
	}
	w.mu.Lock()
	fireSoft := w.softArmed && n > w.soft
	if fireSoft {
		w.softArmed = false
	}
	breakConn := w.hard != dat.WatermarkInfinite && n > w.hard
	w.active.Store(w.softArmed || w.hard != dat.WatermarkInfinite)
	w.mu.Unlock()
	if fireSoft {
		ep.ia.PostAsync(dat.Event{Number: dat.AsyncEPSoftHighWatermark, Async: dat.AsyncErrorData{Handle: ep.handle, Reason: dat.ReasonSRQWatermark}})
	}
	if breakConn {
		ep.breakConnection()
	}
}

// breakConnection ends a connection that went past its hard watermark:
// BROKEN on the connect EVD, everything outstanding flushed.
func (ep *EP) breakConnection() {
	ep.mu.Lock()
	if !canTake.has(ep.State()) || ep.conn == nil {
		ep.mu.Unlock()
		return
	}
	conn := ep.conn
	ep.conn = nil
	ep.localDisc = true
	ep.enterDisconnectedLocked()
	connEVD := ep.connEVD
	ep.mu.Unlock()
	conn.Disconnect()
	if connEVD != nil {
		connEVD.Push(dat.Event{Number: dat.ConnectionEventBroken, Conn: dat.ConnectionData{EP: ep.handle}})
	}
}
