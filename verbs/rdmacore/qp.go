//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

// postBatch is how many work requests one cgo call posts; a longer list
// takes several calls, in order.
const postBatch = C.GD_POST_BATCH

// The shim's records hold verbs.MaxSGE SGEs per request.
var _ [C.GD_MAX_SGE - verbs.MaxSGE]struct{}
var _ [verbs.MaxSGE - C.GD_MAX_SGE]struct{}

// qp is an RC QP. Its state is kept here as well as in the device: a QP
// without a connection cannot reach RTR on a real device (it needs the
// path the connection manager resolves), so RTR, RTS and SQD of an
// unconnected QP exist only here, over a device QP held in INIT, and
// sends on it fail with ErrNotConnected, as the verbs contract says.
type qp struct {
	d       *Device
	pd      *pd
	q       *C.struct_ibv_qp
	qpn     uint32
	sendCQ  *cq
	recvCQ  *cq
	srq     *srq
	caps    verbs.QPCaps
	sigAll  bool
	state   atomic.Uint32 // verbs.QPState
	hwState verbs.QPState // guarded by mu

	mu        sync.Mutex
	dead      bool
	gone      atomic.Bool // dead, for the posts to read without mu
	conn      *conn
	connected atomic.Bool
	ird, ord  int

	sendMu sync.Mutex
	sq     *C.struct_gd_sq // C memory: q and the records a post fills
	recvMu sync.Mutex
	rq     *C.struct_gd_rq

	// Queue accounting: the device may hold more than the QP was created
	// for, so the limits of the verbs contract are kept here. Posts
	// count up under their queue's lock; completions, taken under the
	// CQ's lock, count down. A signalled send's completion retires every
	// send posted before it, so the sequence numbers of the signalled
	// ones wait in sig (a single-producer, single-consumer ring).
	sqPosted atomic.Uint64
	sqDone   atomic.Uint64
	sig      []uint64
	sigHead  atomic.Uint64 // next to retire (consumer)
	sigTail  atomic.Uint64 // next free (producer)
	rqPosted atomic.Uint64
	rqDone   atomic.Uint64
}

var _ verbs.QP = (*qp)(nil)

func (p *pd) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	if err := p.alive(); err != nil {
		return nil, err
	}
	scq, ok1 := attr.SendCQ.(*cq)
	rcq, ok2 := attr.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, fmt.Errorf("rdmacore: CreateQP needs send and receive CQs of this provider: %w", verbs.ErrInvalidArgument)
	}
	if scq.d != p.d || rcq.d != p.d {
		return nil, fmt.Errorf("rdmacore: CreateQP with a CQ of another device: %w", verbs.ErrInvalidArgument)
	}
	var s *srq
	if attr.SRQ != nil {
		var ok bool
		if s, ok = attr.SRQ.(*srq); !ok || s.pd != p {
			return nil, fmt.Errorf("rdmacore: CreateQP with an SRQ of another PD or provider: %w", verbs.ErrInvalidArgument)
		}
	}
	c := attr.Caps
	a := p.d.attr
	if c.MaxSendWR <= 0 || (s == nil && c.MaxRecvWR <= 0) || c.MaxSendSGE < 0 || c.MaxRecvSGE < 0 || c.MaxInlineData < 0 {
		return nil, fmt.Errorf("rdmacore: CreateQP caps %+v: %w", c, verbs.ErrInvalidArgument)
	}
	if c.MaxSendWR > a.MaxQPWR || c.MaxRecvWR > a.MaxQPWR || c.MaxSendSGE > a.MaxSGE || c.MaxRecvSGE > a.MaxSGE {
		return nil, fmt.Errorf("rdmacore: CreateQP caps %+v beyond the device's (%d WRs, %d SGEs): %w", c, a.MaxQPWR, a.MaxSGE, verbs.ErrInvalidArgument)
	}
	var ia C.struct_ibv_qp_init_attr
	ia.send_cq = scq.c
	ia.recv_cq = rcq.c
	ia.qp_type = C.IBV_QPT_RC
	ia.sq_sig_all = 0
	if attr.SignalAll {
		ia.sq_sig_all = 1
	}
	ia.cap.max_send_wr = C.uint32_t(c.MaxSendWR)
	ia.cap.max_send_sge = C.uint32_t(max(c.MaxSendSGE, 1))
	ia.cap.max_inline_data = C.uint32_t(c.MaxInlineData)
	if s != nil {
		ia.srq = s.s
	} else {
		ia.cap.max_recv_wr = C.uint32_t(c.MaxRecvWR)
		ia.cap.max_recv_sge = C.uint32_t(max(c.MaxRecvSGE, 1))
	}
	hq := C.ibv_create_qp(p.p, &ia)
	if hq == nil {
		return nil, errnoErr("ibv_create_qp", errnoOf())
	}
	q := &qp{
		d: p.d, pd: p, q: hq, qpn: uint32(hq.qp_num), sendCQ: scq, recvCQ: rcq, srq: s, sigAll: attr.SignalAll,
		caps: verbs.QPCaps{
			MaxSendWR:     int(ia.cap.max_send_wr),
			MaxRecvWR:     int(ia.cap.max_recv_wr),
			MaxSendSGE:    min(int(ia.cap.max_send_sge), verbs.MaxSGE),
			MaxRecvSGE:    min(int(ia.cap.max_recv_sge), verbs.MaxSGE),
			MaxInlineData: int(ia.cap.max_inline_data),
		},
		sq: (*C.struct_gd_sq)(C.calloc(1, C.sizeof_struct_gd_sq)),
		rq: (*C.struct_gd_rq)(C.calloc(1, C.sizeof_struct_gd_rq)),
	}
	q.sq.qp = hq
	q.rq.qp = hq
	if s != nil {
		q.caps.MaxRecvWR, q.caps.MaxRecvSGE = 0, 0
	}
	q.sig = make([]uint64, q.caps.MaxSendWR)
	q.state.Store(uint32(verbs.QPStateReset))
	for _, c := range []*cq{scq, rcq} {
		c.mu.Lock()
		c.users++
		c.mu.Unlock()
	}
	p.mu.Lock()
	p.qps++
	p.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.users++
		if s.cqs == nil {
			s.cqs = make(map[*cq]int)
		}
		s.cqs[rcq]++
		s.mu.Unlock()
	}
	p.d.mu.Lock()
	p.d.qps[q.qpn] = q
	p.d.mu.Unlock()
	p.d.st.qpsCreated.Add(1)
	return q, nil
}

func (q *qp) QPN() uint32              { return q.qpn }
func (q *qp) PD() verbs.PD             { return q.pd }
func (q *qp) State() verbs.QPState     { return verbs.QPState(q.state.Load()) }
func (q *qp) setState(s verbs.QPState) { q.state.Store(uint32(s)) }

func (q *qp) Query() verbs.QPAttr {
	q.mu.Lock()
	defer q.mu.Unlock()
	return verbs.QPAttr{State: q.State(), Caps: q.caps, IRD: q.ird, ORD: q.ord, SignalAll: q.sigAll}
}

// defaultAccess is what a QP grants its peer before the connection
// manager sets it: everything RC allows, as librdmacm does.
const defaultAccess = C.IBV_ACCESS_LOCAL_WRITE | C.IBV_ACCESS_REMOTE_WRITE | C.IBV_ACCESS_REMOTE_READ

// hwModify moves the device QP; q.mu is held.
func (q *qp) hwModify(s verbs.QPState) error {
	var st C.enum_ibv_qp_state
	switch s {
	case verbs.QPStateReset:
		st = C.IBV_QPS_RESET
	case verbs.QPStateInit:
		st = C.IBV_QPS_INIT
	case verbs.QPStateRTS:
		st = C.IBV_QPS_RTS
	case verbs.QPStateSQD:
		st = C.IBV_QPS_SQD
	case verbs.QPStateError:
		st = C.IBV_QPS_ERR
	default:
		return fmt.Errorf("rdmacore: modify QP to %v: %w", s, verbs.ErrInvalidState)
	}
	if rc := C.gd_modify_qp_state(q.q, st, 1, defaultAccess); rc != 0 {
		return errnoErr("ibv_modify_qp("+s.String()+")", syscall.Errno(rc))
	}
	q.hwState = s
	return nil
}

func (q *qp) Modify(s verbs.QPState) error {
	if q.d.isClosed() {
		return verbs.ErrClosed
	}
	if s > verbs.QPStateError {
		return fmt.Errorf("rdmacore: modify QP to %v: %w", s, verbs.ErrInvalidArgument)
	}
	q.mu.Lock()
	if q.dead {
		q.mu.Unlock()
		return verbs.ErrClosed
	}
	from := q.State()
	if !verbs.ValidTransition(from, s) {
		q.mu.Unlock()
		return fmt.Errorf("rdmacore: modify QP %v -> %v: %w", from, s, verbs.ErrInvalidState)
	}
	var err error
	c := q.conn
	switch s {
	case verbs.QPStateReset:
		err = q.hwModify(s)
	case verbs.QPStateError:
		if q.hwState == verbs.QPStateReset {
			// Devices refuse RESET -> ERROR; INIT -> ERROR is legal.
			err = q.hwModify(verbs.QPStateInit)
		}
		if err == nil {
			err = q.hwModify(s)
		}
	case verbs.QPStateInit:
		if q.hwState == verbs.QPStateReset {
			err = q.hwModify(s)
		}
	case verbs.QPStateRTR:
		// Only the connection manager can give a device QP its path.
	case verbs.QPStateRTS, verbs.QPStateSQD:
		if c != nil && q.connected.Load() {
			err = q.hwModify(s)
		} else if s == verbs.QPStateSQD {
			defer q.d.postEvent(verbs.AsyncEvent{Type: verbs.EventSQDrained, QP: q})
		}
	}
	if err == nil {
		q.setState(s)
	}
	if s == verbs.QPStateReset || s == verbs.QPStateError {
		q.conn = nil
		q.connected.Store(false)
	}
	q.mu.Unlock()
	if c != nil && (s == verbs.QPStateReset || s == verbs.QPStateError) {
		c.abort()
	}
	return err
}

// setError records a fatal async event: the QP is in ERROR for its
// users. hwState is left alone, so that ending the connection still
// moves the device's QP to ERROR: the event does not mean the device has
// done so (the kernel's siw reports REQ_ERR with the QP still up), and
// until it does, siw may never flush the receive queue.
func (q *qp) setError() {
	q.mu.Lock()
	if !q.dead {
		q.setState(verbs.QPStateError)
	}
	q.mu.Unlock()
}

func (q *qp) Destroy() error { return q.destroy(false) }

func (q *qp) destroy(force bool) error {
	q.mu.Lock()
	if q.dead {
		q.mu.Unlock()
		return verbs.ErrClosed
	}
	c := q.conn
	q.conn = nil
	q.connected.Store(false)
	q.mu.Unlock()
	if c != nil {
		c.abort()
	}
	q.mu.Lock()
	if q.hwState != verbs.QPStateReset && q.hwState != verbs.QPStateError {
		q.hwModify(verbs.QPStateError)
	}
	q.mu.Unlock()
	if !force {
		q.awaitFlush()
	}
	q.mu.Lock()
	q.dead = true
	q.gone.Store(true)
	q.setState(verbs.QPStateError)
	q.mu.Unlock()
	// Posts hold these locks while they use the C arrays.
	q.sendMu.Lock()
	q.recvMu.Lock()
	rc := C.ibv_destroy_qp(q.q)
	C.free(unsafe.Pointer(q.sq))
	C.free(unsafe.Pointer(q.rq))
	q.recvMu.Unlock()
	q.sendMu.Unlock()
	q.d.mu.Lock()
	delete(q.d.qps, q.qpn)
	q.d.mu.Unlock()
	for _, c := range []*cq{q.sendCQ, q.recvCQ} {
		c.forget(q)
		c.mu.Lock()
		c.users--
		c.mu.Unlock()
	}
	q.pd.mu.Lock()
	q.pd.qps--
	q.pd.mu.Unlock()
	if q.srq != nil {
		q.srq.mu.Lock()
		q.srq.users--
		if q.srq.cqs[q.recvCQ]--; q.srq.cqs[q.recvCQ] <= 0 {
			delete(q.srq.cqs, q.recvCQ)
		}
		q.srq.mu.Unlock()
	}
	if rc != 0 {
		return errnoErr("ibv_destroy_qp", syscall.Errno(rc))
	}
	return nil
}

// flushWait bounds how long Destroy waits for the device to flush the
// QP's outstanding requests onto its CQs.
const flushWait = 2 * time.Second

// awaitFlush waits until every request posted to the QP, now in ERROR,
// has its completion on a CQ: a destroyed QP's requests are lost with it
// on some devices, and the contract says Destroy flushes them.
func (q *qp) awaitFlush() {
	ctx, cancel := context.WithTimeout(context.Background(), flushWait)
	defer cancel()
	for _, c := range []*cq{q.sendCQ, q.recvCQ} {
		if c.wait(ctx, false, q) != nil {
			return
		}
	}
}

// flushedOn reports whether the QP's requests that complete on c have
// (polling c accounts them); c.mu is held.
func (q *qp) flushedOn(c *cq) bool {
	if c == q.sendCQ && q.sqPosted.Load() > q.sqDone.Load() {
		return false
	}
	return c != q.recvCQ || q.srq != nil || q.rqPosted.Load() <= q.rqDone.Load()
}

// postErr maps the errno of ibv_post_send or ibv_post_recv (some
// drivers return it negated).
func postErr(rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	switch syscall.Errno(rc) {
	case syscall.ENOMEM:
		return verbs.ErrQueueFull
	case syscall.EINVAL:
		return verbs.ErrInvalidArgument
	}
	return errnoErr("post", syscall.Errno(rc))
}

func (q *qp) PostSend(wrs []verbs.SendWR) (int, error) {
	q.sendMu.Lock()
	defer q.sendMu.Unlock()
	return q.postSendLocked(wrs)
}

func (q *qp) postSendLocked(wrs []verbs.SendWR) (int, error) {
	if q.d.isClosed() {
		return 0, verbs.ErrClosed
	}
	st := q.State()
	if !st.CanPostSend() {
		return 0, verbs.ErrInvalidState
	}
	if st != verbs.QPStateError && !q.connected.Load() {
		return 0, verbs.ErrNotConnected
	}
	if st == verbs.QPStateError {
		return q.flushSends(wrs)
	}
	if q.gone.Load() {
		return 0, verbs.ErrClosed
	}
	done := 0
	swr, sge := &q.sq.w, &q.sq.sge
	var bytes uint64
	for done < len(wrs) {
		n, ns := 0, 0
		var bad error
		for n < postBatch && done+n < len(wrs) {
			wr := &wrs[done+n]
			if err := q.checkSend(wr); err != nil {
				bad = err
				break
			}
			if q.sqPosted.Load()+uint64(n)-q.sqDone.Load() >= uint64(q.caps.MaxSendWR) {
				// Completions the device has made but nobody has
				// polled yet free their slots too.
				q.sendCQ.drain()
				if q.sqPosted.Load()+uint64(n)-q.sqDone.Load() >= uint64(q.caps.MaxSendWR) {
					bad = verbs.ErrQueueFull
					break
				}
			}
			w := &swr[n]
			w.id = C.uint64_t(wr.ID)
			w.opcode = C.uint8_t(wr.Opcode)
			w.flags = C.uint8_t(wr.Flags)
			w.remote_addr = C.uint64_t(wr.RemoteAddr)
			w.rkey = C.uint32_t(wr.RKey)
			w.inv_rkey = C.uint32_t(wr.InvalidateRKey)
			w.num_sge = C.uint32_t(len(wr.SGL))
			switch wr.Opcode {
			case verbs.OpRDMARead:
				if q.d.attr.Transport == verbs.TransportIWARP {
					// An iWARP stream returns Read Responses in
					// the order of the Read Requests (RDMAP), so
					// an earlier Read has completed before a later
					// one places its first byte: the fence holds
					// without the flag, which the kernel's siw
					// refuses on a Read ("a READ cannot be
					// fenced": the post fails with EPERM).
					w.flags &^= C.uint8_t(verbs.SendFence)
				}
			case verbs.OpBindMW:
				q.fillBind(w, &wr.Bind)
			case verbs.OpLocalInv:
				q.pd.unbindKey(wr.InvalidateRKey)
			}
			for i := range wr.SGL {
				s := &sge[ns]
				s.addr = C.uint64_t(wr.SGL[i].Addr)
				s.length = C.uint32_t(wr.SGL[i].Length)
				s.lkey = C.uint32_t(wr.SGL[i].LKey)
				ns++
			}
			if wr.Opcode == verbs.OpSend || wr.Opcode == verbs.OpSendWithInv || wr.Opcode == verbs.OpRDMAWrite {
				bytes += verbs.SGLLen(wr.SGL)
			}
			n++
		}
		if n > 0 {
			// Account the requests before the device sees them: one
			// may complete, and be polled, before the post returns.
			t0, p0 := q.sigTail.Load(), q.sqPosted.Load()
			q.sent(wrs[done : done+n])
			r := int64(C.gd_post_send(cAddr(q.sq), C.int(n)))
			posted, rc := int(uint32(r)), C.int(r>>32)
			if rc != 0 {
				// What the device refused never completes: take back
				// its accounting, which lies past anything polled.
				q.sigTail.Store(t0 + q.signalled(wrs[done:done+posted]))
				q.sqPosted.Store(p0 + uint64(posted))
			}
			if rc != 0 {
				q.d.st.bytesSent.Add(bytes)
				return done + posted, postErr(rc)
			}
			done += n
		}
		if bad != nil {
			q.d.st.bytesSent.Add(bytes)
			return done, bad
		}
	}
	q.d.st.bytesSent.Add(bytes)
	return done, nil
}

// flushSends completes sends posted in ERROR with WCWRFlushErr. Devices
// differ here (some flush them, some keep them until the QP is reset),
// and the contract says they are flushed at once.
func (q *qp) flushSends(wrs []verbs.SendWR) (int, error) {
	for i := range wrs {
		if err := q.checkSend(&wrs[i]); err != nil {
			return i, err
		}
		q.sendCQ.pushFlushed(verbs.WC{ID: wrs[i].ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCOpcodeOf(wrs[i].Opcode), QPN: q.qpn})
	}
	return len(wrs), nil
}

// flushRecvs is flushSends for receives.
func (q *qp) flushRecvs(wrs []verbs.RecvWR) (int, error) {
	for i := range wrs {
		if len(wrs[i].SGL) > q.caps.MaxRecvSGE {
			return i, verbs.ErrTooManySGE
		}
		q.recvCQ.pushFlushed(verbs.WC{ID: wrs[i].ID, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: q.qpn})
	}
	return len(wrs), nil
}

// sent accounts posted send requests; sendMu is held.
func (q *qp) sent(wrs []verbs.SendWR) {
	seq := q.sqPosted.Load()
	for i := range wrs {
		if q.sigAll || wrs[i].Flags&verbs.SendSignaled != 0 {
			t := q.sigTail.Load()
			q.sig[t%uint64(len(q.sig))] = seq + uint64(i)
			q.sigTail.Store(t + 1)
		}
	}
	q.sqPosted.Store(seq + uint64(len(wrs)))
}

// signalled counts the requests of wrs that produce a completion.
func (q *qp) signalled(wrs []verbs.SendWR) uint64 {
	var n uint64
	for i := range wrs {
		if q.sigAll || wrs[i].Flags&verbs.SendSignaled != 0 {
			n++
		}
	}
	return n
}

// completed accounts a completion of the QP; the CQ's lock is held.
func (q *qp) completed(wc *verbs.WC) {
	if wc.Opcode == verbs.WCRecv && (wc.Status == verbs.WCSuccess || q.srq == nil) {
		if q.srq != nil {
			q.srq.posted.Add(-1)
		} else {
			q.rqDone.Add(1)
		}
	} else if wc.Status != verbs.WCSuccess && wc.Opcode == verbs.WCSend && q.sigHead.Load() == q.sigTail.Load() {
		// A failed or flushed request completes even unsignalled;
		// libibverbs leaves its opcode undefined, and with no
		// signalled send waiting it can only be a receive or an
		// unsignalled send.
		if q.rqDone.Load() < q.rqPosted.Load() && q.srq == nil {
			q.rqDone.Add(1)
		} else if d := q.sqDone.Load(); d < q.sqPosted.Load() {
			q.sqDone.Store(d + 1)
		}
	} else if h := q.sigHead.Load(); h != q.sigTail.Load() {
		q.sqDone.Store(q.sig[h%uint64(len(q.sig))] + 1)
		q.sigHead.Store(h + 1)
	} else if d := q.sqDone.Load(); d < q.sqPosted.Load() {
		q.sqDone.Store(d + 1)
	}
	if wc.Status != verbs.WCSuccess && wc.Status != verbs.WCWRFlushErr {
		q.fault(fmt.Errorf("rdmacore: work request %d: %v", wc.ID, wc.Status))
	}
}

// fault ends the QP's connection after an error completion or a fatal
// async event: the QP is in ERROR and the peer is told through rdma_cm,
// as an iWARP Terminate would tell it.
func (q *qp) fault(why error) {
	q.mu.Lock()
	c := q.conn
	q.mu.Unlock()
	if c == nil {
		return
	}
	// The caller may hold a CQ's lock, which ending the connection
	// (waiting for the flush) takes.
	q.d.bg.Add(1)
	go func() {
		defer q.d.bg.Done()
		c.end(&verbs.BrokenError{Err: why})
	}()
}

// checkSend refuses what the device would refuse or misread, before it
// is posted.
func (q *qp) checkSend(wr *verbs.SendWR) error {
	if !wr.Opcode.Valid() {
		return verbs.ErrInvalidArgument
	}
	if len(wr.SGL) > q.caps.MaxSendSGE {
		return verbs.ErrTooManySGE
	}
	switch wr.Opcode {
	case verbs.OpRDMARead:
		if len(wr.SGL) > q.d.attr.MaxSGERead {
			return verbs.ErrTooManySGE
		}
	case verbs.OpBindMW:
		if _, ok := wr.Bind.MW.(*mw); !ok {
			return verbs.ErrInvalidArgument
		}
		m, ok := wr.Bind.MR.(*mr)
		if !ok {
			return verbs.ErrInvalidArgument
		}
		// Refuse what the device would fail the QP for: a window needs
		// an MR that allows binding, and remote write through it needs
		// local write on the MR.
		if m.access&verbs.AccessMWBind == 0 || !wr.Bind.Access.Valid() ||
			(wr.Bind.Access&verbs.AccessRemoteWrite != 0 && m.access&verbs.AccessLocalWrite == 0) {
			return verbs.ErrAccess
		}
		start := m.iova
		if wr.Bind.Addr < start || wr.Bind.Addr+wr.Bind.Length > start+uint64(len(m.buf)) || wr.Bind.Addr+wr.Bind.Length < wr.Bind.Addr {
			return verbs.ErrBounds
		}
	}
	if wr.Flags&verbs.SendInline != 0 {
		if verbs.SGLLen(wr.SGL) > uint64(q.caps.MaxInlineData) {
			return verbs.ErrInvalidArgument
		}
		// The device copies inline data without looking at the lkeys:
		// check them, as the contract asks.
		for i := range wr.SGL {
			if err := q.pd.checkLocal(&wr.SGL[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillBind sets the bind fields of w, picking the window's next key.
func (q *qp) fillBind(w *C.struct_gd_swr, b *verbs.MWBind) {
	win := b.MW.(*mw)
	m := b.MR.(*mr)
	win.mu.Lock()
	key := uint32(win.w.rkey)
	if win.rkey != 0 {
		key = win.rkey
	}
	key = key&^0xff | (key+1)&0xff
	win.rkey = key
	if b.Length == 0 {
		win.setBound(nil) // a zero-length bind unbinds
	} else {
		win.setBound(m)
	}
	win.mu.Unlock()
	w.mw = win.w
	w.mr = m.m
	w.rkey = C.uint32_t(key)
	w.bind_addr = C.uint64_t(b.Addr)
	w.bind_len = C.uint64_t(b.Length)
	w.bind_access = C.uint32_t(ibvAccess(b.Access))
}

func (q *qp) PostRecv(wrs []verbs.RecvWR) (int, error) {
	q.recvMu.Lock()
	defer q.recvMu.Unlock()
	return q.postRecvLocked(wrs)
}

func (q *qp) postRecvLocked(wrs []verbs.RecvWR) (int, error) {
	if q.d.isClosed() {
		return 0, verbs.ErrClosed
	}
	if q.srq != nil {
		return 0, verbs.ErrInvalidState
	}
	if !q.State().CanPostRecv() {
		return 0, verbs.ErrInvalidState
	}
	if q.gone.Load() {
		return 0, verbs.ErrClosed
	}
	if q.State() == verbs.QPStateError {
		return q.flushRecvs(wrs)
	}
	room := int(uint64(q.caps.MaxRecvWR) - (q.rqPosted.Load() - q.rqDone.Load()))
	if room < len(wrs) {
		q.recvCQ.drain()
		room = int(uint64(q.caps.MaxRecvWR) - (q.rqPosted.Load() - q.rqDone.Load()))
	}
	take := wrs[:min(len(wrs), max(room, 0))]
	// Counted before the post, as a receive may complete before it
	// returns; what the device refused is taken back.
	q.rqPosted.Add(uint64(len(take)))
	n, err := postRecvs(take, q.caps.MaxRecvSGE, q.rq)
	q.rqPosted.Add(-uint64(len(take) - n))
	if err == nil && n < len(wrs) {
		err = verbs.ErrQueueFull
	}
	return n, err
}

// postRecvs fills the records of a receive queue batch by batch and
// posts each batch.
func postRecvs(wrs []verbs.RecvWR, maxSGE int, rq *C.struct_gd_rq) (int, error) {
	done := 0
	ws, sge := &rq.w, &rq.sge
	for done < len(wrs) {
		n, ns := 0, 0
		var bad error
		for n < postBatch && done+n < len(wrs) {
			wr := &wrs[done+n]
			if len(wr.SGL) > maxSGE {
				bad = verbs.ErrTooManySGE
				break
			}
			ws[n].id = C.uint64_t(wr.ID)
			ws[n].num_sge = C.uint32_t(len(wr.SGL))
			for i := range wr.SGL {
				s := &sge[ns]
				s.addr = C.uint64_t(wr.SGL[i].Addr)
				s.length = C.uint32_t(wr.SGL[i].Length)
				s.lkey = C.uint32_t(wr.SGL[i].LKey)
				ns++
			}
			n++
		}
		if n > 0 {
			r := int64(C.gd_post_recv(cAddr(rq), C.int(n)))
			if rc := C.int(r >> 32); rc != 0 {
				return done + int(uint32(r)), postErr(rc)
			}
			done += n
		}
		if bad != nil {
			return done, bad
		}
	}
	return done, nil
}
