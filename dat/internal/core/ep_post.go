package core

import (
	"errors"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// Preallocated errors of the post paths that a polling consumer may hit
// in a loop, so that they cost no allocation.
var (
	errPostFreed = InvalidHandle("ep_post", dat.HandleTypeEP)
	errPostFull  = dat.NewError("ep_post", dat.InsufficientResources, dat.ResourceTEP)
	// An EP on an SRQ has no receive queue of its own.
	errPostSRQ = dat.NewError("ep_post_recv", dat.InvalidState, dat.InvalidStateSRQInUse)
)

// postErr maps a synchronous verbs error of a post.
func postErr(op string, err error) error {
	switch {
	case errors.Is(err, verbs.ErrQueueFull):
		return dat.Wrap(op, dat.InsufficientResources, dat.ResourceTEP, err)
	case errors.Is(err, verbs.ErrInvalidState), errors.Is(err, verbs.ErrNotConnected), errors.Is(err, verbs.ErrClosed):
		return dat.Wrap(op, dat.InvalidState, dat.InvalidStateEPNotReady, err)
	case errors.Is(err, verbs.ErrTooManySGE):
		return dat.Wrap(op, dat.InvalidParameter, dat.InvalidArg2, err)
	case errors.Is(err, verbs.ErrInvalidKey), errors.Is(err, verbs.ErrProtection):
		return dat.Wrap(op, dat.ProtectionViolation, dat.NoSubtype, err)
	}
	return dat.Wrap(op, dat.InvalidParameter, dat.NoSubtype, err)
}

// Request is one DTO for the send queue: what an ep_post_send,
// ep_post_send_with_invalidate, ep_post_rdma_read, ep_post_rdma_write or
// ep_post_rdma_read_to_rmr asks for. The dat/ep wrappers of the last two
// build it and call Post themselves, so that they inline and the
// consumer's call goes straight to Post; those of the others call
// PostDTO, which builds it for Post when it does not take the request.
type Request struct {
	DOp    dat.DTOOp // DTOSend, DTORDMAWrite or DTORDMARead
	IOV    []dat.LMRTriplet
	Cookie dat.DTOCookie
	Flags  dat.CompletionFlags
	Remote *dat.RMRTriplet // RDMA: the peer's memory; nil for a Send
	Inv    dat.RMRContext  // a Send with invalidate: the peer's RMR context
	HasInv bool
	Sink   *dat.RMRTriplet // a Read to an RMR: the local RMR's memory, and no IOV
}

// opName is the DAT operation that posts r, for its errors: derived
// rather than carried, which keeps the request small.
func (r *Request) opName() string {
	switch {
	case r.Sink != nil:
		return "ep_post_rdma_read_to_rmr"
	case r.HasInv:
		return "ep_post_send_with_invalidate"
	}
	return dtoOpName[r.DOp&3]
}

// dtoOpName is the DAT operation that posts a request of each DTO op.
var dtoOpName = [4]string{dat.DTOSend: "ep_post_send", dat.DTORDMAWrite: "ep_post_rdma_write", dat.DTORDMARead: "ep_post_rdma_read", 3: "ep_post"}

const validFlags = dat.CompletionSuppress | dat.CompletionSolicitedWait | dat.CompletionUnsignalled | dat.CompletionBarrierFence

// Post posts the request r (ep_post_send and the other requests): every
// request, whose common case PostDTO takes first.
func (ep *EP) Post(r *Request) error {
	if ep == nil {
		return errPostFreed
	}
	// One load answers the common case of every check before the lock:
	// the snapshot says which flags and how many segments the request
	// queue takes, none while the EP's state posts no requests
	// (postCfg.reqIOV); there is no snapshot while the EP has no QP, as
	// once it is freed. Anything else goes through the checks in DAT's
	// order.
	cfg := ep.cfg.Load()
	if cfg == nil || r.Flags&^cfg.reqFlags[r.DOp&3] != 0 || len(r.IOV) > cfg.reqIOV[r.DOp&3] {
		var err error
		if cfg, err = ep.requestChecks(r); err != nil {
			return err
		}
	}
	// The send queue's lock: its mutex, inlined, when the provider lends
	// it (fastpath.SendMutexer), instead of a dynamic call of LockSend. What
	// the post needs of the snapshot is loaded after it: Go keeps no
	// register across a call, and the lock may call (lockSlow).
	if m := cfg.sqMu; m != nil {
		m.Lock()
	} else {
		cfg.sq.LockSend()
	}
	// The SGEs (PostDTO posts the common case, one segment that the
	// provider checks, without coming here).
	k, total, trust, done, err := ep.sglLocked(cfg, r)
	if done {
		return unlockSend(cfg.sq, err)
	}
	q := &cfg.own.req
	seq, ok := q.reserve()
	if !ok {
		return unlockSend(cfg.sq, ep.ia.refused(trust, r.opName(), cfg.pz, r.IOV, needOf(r), errPostFull))
	}
	q.slot(seq).set(seq, r.Cookie, r.DOp, r.Flags, uint32(total))
	signalled := !cfg.unsigSuppressed || !q.mayGoUnsignalled(r.Flags)
	w := &ep.swr[0]
	// The SGL is already ep.ssgl (newEP): re-slicing it in place sets the
	// length alone, where assigning ep.ssgl[:k] also stores the pointer,
	// behind a write barrier check.
	w.ID, w.SGL = cfg.own.id|uint64(seq&wrSlotMask), w.SGL[:k]
	w.RemoteAddr, w.RKey = 0, 0
	if rm := r.Remote; rm != nil {
		w.RemoteAddr, w.RKey = uint64(rm.VirtualAddress), uint32(rm.RMRContext)
	}
	fill(w, r, signalled)
	if r.DOp == dat.DTORDMARead && k == 0 {
		// A zero-length Read still needs its single (empty) sink element.
		w.SGL = w.SGL[:1]
		ep.ssgl[0] = verbs.SGE{}
		if len(r.IOV) > 0 {
			ep.ssgl[0].LKey = uint32(r.IOV[0].LMRContext)
		}
	}
	// Committed before the post, which releases the lock when it takes
	// the request; still under the lock when it does not, and undone
	// (the tail was seq: reserve).
	lastSig := q.lastSig
	q.commitSignalled(seq, signalled)
	if _, err := cfg.sq.PostSendUnlock(ep.swr[:]); err != nil {
		q.tail, q.lastSig = seq, lastSig
		return unlockSend(cfg.sq, ep.ia.refused(trust, r.opName(), cfg.pz, r.IOV, needOf(r), postErr(r.opName(), err)))
	}
	return nil
}

// needOf is the local privilege a request needs of its segments.
func needOf(r *Request) dat.MemPriv {
	if r.DOp == dat.DTORDMARead {
		return dat.MemPrivLocalWrite
	}
	return dat.MemPrivLocalRead
}

// sglLocked resolves the local side of r into ep.ssgl for Post, under the
// send queue's lock, and checks the lengths: it returns the SGEs' count,
// their total length and whether DAT's checks were left to the provider
// (see refused). done says that the post ends here, with err: refused,
// or a Read with several segments, which it posts itself.
func (ep *EP) sglLocked(cfg *postCfg, r *Request) (k int, total uint64, trust, done bool, err error) {
	need := needOf(r)
	// The provider checks the SGL as it takes the request: DAT's checks
	// of the same memory would only repeat its own.
	trust = cfg.checksSGL && cfg.pz.loose.Load() == 0
	pz := cfg.pz
	// Zero-length segments name nothing.
	switch {
	case r.Sink != nil:
		if err := ep.ia.rmrSink(r.opName(), pz, r.Sink, &ep.ssgl[0]); err != nil {
			return 0, 0, trust, true, err
		}
		k, total = 1, uint64(r.Sink.SegmentLength)
	case trust:
		k, total = trustedSGL(&ep.ssgl, r.IOV)
	default:
		if k, total, err = ep.ia.checkedSGL(r.opName(), pz, r.IOV, need, &ep.ssgl); err != nil {
			return 0, 0, trust, true, err
		}
	}
	if total > maxMessage || r.DOp != dat.DTOSend && total > uint64(r.Remote.SegmentLength) {
		return 0, 0, trust, true, ep.ia.refused(trust, r.opName(), pz, r.IOV, need, dat.NewError(r.opName(), dat.LengthError, dat.NoSubtype))
	}
	if r.DOp == dat.DTORDMARead && k > 1 {
		// Posted as several work requests: all checked before the first.
		err := ep.ia.refused(trust, r.opName(), pz, r.IOV, need, nil)
		if err == nil {
			err = ep.postSplitRead(r, cfg.sq, cfg.own, k, total)
		}
		return 0, 0, trust, true, err
	}
	return k, total, trust, false, nil
}

// trustedSGL fills sgl with the non-empty segments of iov, whose checks
// the provider makes (fastpath.SGLChecker), and returns how many and their
// total length; the caller has bounded len(iov). A loop without calls,
// apart from checkedSGL's: with a call in it, the post paths kept its
// variables in their frames and reloaded them on every segment.
func trustedSGL(sgl *[verbs.MaxSGE]verbs.SGE, iov []dat.LMRTriplet) (k int, total uint64) {
	for i := range iov {
		t := &iov[i]
		if t.SegmentLength == 0 {
			continue
		}
		s := &sgl[k]
		s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
		total += uint64(t.SegmentLength)
		k++
	}
	return k, total
}

// checkedSGL is trustedSGL with DAT's checks of each segment (CheckLocal),
// for a provider that does not make them; it returns the first fault.
func (ia *IA) checkedSGL(op string, pz *PZ, iov []dat.LMRTriplet, need dat.MemPriv, sgl *[verbs.MaxSGE]verbs.SGE) (k int, total uint64, err error) {
	for i := range iov {
		t := &iov[i]
		if t.SegmentLength == 0 {
			continue
		}
		if err := ia.CheckLocal(op, pz, t, need, &sgl[k]); err != nil {
			return 0, 0, err
		}
		total += uint64(t.SegmentLength)
		k++
	}
	return k, total, nil
}

// unlockSend releases the send queue's lock and returns err.
func unlockSend(sq sendQ, err error) error {
	sq.UnlockSend()
	return err
}

// requestChecks makes postRequest's checks before the lock one by one, in
// DAT's order, and returns the first error. It is the way of a post that
// the snapshot alone does not let through: an error, or an EP that
// changed under it, in which case it returns the snapshot to post with.
func (ep *EP) requestChecks(r *Request) (*postCfg, error) {
	if ep.freed.Load() {
		return nil, errPostFreed
	}
	op := r.opName()
	if err := ep.require(op, canPostRequest); err != nil {
		return nil, err
	}
	if r.Flags&^validFlags != 0 || (r.Flags&dat.CompletionSolicitedWait != 0 && r.DOp != dat.DTOSend) {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg5)
	}
	cfg := ep.cfg.Load()
	if cfg == nil {
		return nil, dat.NewError(op, dat.InvalidState, dat.InvalidStateEPPZ)
	}
	if r.Flags&dat.CompletionUnsignalled != 0 && !cfg.reqUnsig {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg5)
	}
	limit := cfg.maxIOV
	if r.DOp == dat.DTORDMARead {
		limit = cfg.maxReadIOV
	}
	if len(r.IOV) > limit {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	return cfg, nil
}

// refused returns err, the reason a post is refused, unless DAT's own
// checks of iov, which trust skipped, find a fault: that comes first, as
// when DAT checks before anything else. So the DAT code of a refused post
// is the one CheckLocal gives (the LMR context, its PZ, its privileges,
// its bounds, for the first faulty segment) whether or not the provider's
// check replaced DAT's, and whichever check saw the fault first. A nil err
// asks for the checks alone. The EP and SRQ post paths share it.
func (ia *IA) refused(trust bool, op string, pz *PZ, iov []dat.LMRTriplet, need dat.MemPriv, err error) error {
	if trust {
		var sge verbs.SGE
		for i := range iov {
			if iov[i].SegmentLength == 0 {
				continue
			}
			if e := ia.CheckLocal(op, pz, &iov[i], need, &sge); e != nil {
				return e
			}
		}
	}
	return err
}

// fill sets the fields of w that r decides, but the remote range (so all
// but ID, SGL, RemoteAddr, RKey and Bind; Bind is left zero by BindRMR).
// Field by field: a composite literal is built on the stack and copied in
// wide moves that stall on the narrow stores that built it.
func fill(w *verbs.SendWR, r *Request, signalled bool) {
	w.Opcode = dtoOpcode[r.DOp&3]
	w.InvalidateRKey = 0
	if r.HasInv {
		w.Opcode, w.InvalidateRKey = verbs.OpSendWithInv, uint32(r.Inv)
	}
	w.Flags = sendFlags(r.Flags, signalled)
}

// dtoOpcode is the verbs opcode of a request's DTO.
var dtoOpcode = [4]verbs.Opcode{dat.DTOSend: verbs.OpSend, dat.DTORDMAWrite: verbs.OpRDMAWrite, dat.DTORDMARead: verbs.OpRDMARead}

// postSplitRead posts an RDMA Read with several local segments as one
// verbs Read per segment (iWARP reads into one sink STag): consecutive
// pieces of the remote range, in order. Only the last piece carries the
// DAT cookie; the others are internal and produce no event.
func (ep *EP) postSplitRead(r *Request, sq sendQ, own *owner, k int, total uint64) error {
	q := &own.req
	seq, ok := q.reserveN(k)
	if !ok {
		return errPostFull
	}
	for i := 0; i < k; i++ {
		s := cookieSlot{seq: seq + uint32(i), op: dat.DTORDMARead, flags: dat.CompletionSuppress | dat.CompletionUnsignalled}
		if i == k-1 {
			s = cookieSlot{seq: seq + uint32(i), cookie: r.Cookie, op: dat.DTORDMARead, flags: r.Flags, length: uint32(total)}
		}
		*q.slot(seq + uint32(i)) = s
	}
	sgl := ep.ssgl
	wrs := make([]verbs.SendWR, k) // a multi-segment read is off the hot path
	off := uint64(0)
	for i := 0; i < k; i++ {
		wrs[i] = verbs.SendWR{ID: own.id | uint64((seq+uint32(i))&wrSlotMask), Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SGL: sgl[i : i+1],
			RemoteAddr: uint64(r.Remote.VirtualAddress) + off, RKey: uint32(r.Remote.RMRContext)}
		if i == 0 && r.Flags&dat.CompletionBarrierFence != 0 {
			wrs[i].Flags |= verbs.SendFence
		}
		off += uint64(sgl[i].Length)
	}
	n, err := sq.PostSendLocked(wrs)
	if n > 0 {
		q.commitSignalled(seq+uint32(n)-1, true)
	}
	if err != nil {
		return postErr(r.opName(), err)
	}
	return nil
}

// postRecvSlow is PostRecv for every receive (see PostRecv for its
// common case).
func (ep *EP) postRecvSlow(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	const op = "ep_post_recv"
	if ep == nil {
		return errPostFreed
	}
	cfg := ep.cfg.Load() // see Post
	if cfg == nil || flags&^cfg.recvFlags != 0 || len(iov) > cfg.recvIOV {
		var err error
		if cfg, err = ep.recvChecks(iov, flags); err != nil {
			return err
		}
	}
	if m := cfg.rqMu; m != nil { // as in Post: the mutex, inlined
		m.Lock()
	} else {
		cfg.rq.LockRecv()
	}
	// The common case, as in Post: one segment that the provider checks;
	// the rest resolves its SGEs in recvSGLLocked. The post follows here
	// rather than in a function both call: PostRecv kept its arguments
	// in its frame around the call. loose is read first, as in Post.
	k, trust := 1, true
	loose := cfg.pz.loose.Load()
	if len(iov) == 1 && iov[0].SegmentLength != 0 && cfg.checksSGL && loose == 0 {
		t, s := &iov[0], &ep.rsgl[0]
		s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
	} else {
		var err error
		if k, trust, err = ep.recvSGLLocked(cfg, iov); err != nil {
			return unlockRecv(cfg.rq, err)
		}
	}
	q := &cfg.own.recv
	seq, ok := q.reserve()
	if !ok {
		return unlockRecv(cfg.rq, ep.ia.refused(trust, op, cfg.pz, iov, dat.MemPrivLocalWrite, errPostFull))
	}
	q.slot(seq).set(seq, cookie, dat.DTOReceive, flags, 0)
	w := &ep.rwr[0]
	// The SGL re-sliced in place, as in Post.
	w.ID, w.SGL = cfg.own.id|wrRecvBit|uint64(seq&wrSlotMask), w.SGL[:k]
	q.commit(seq) // before the post, as in Post
	if _, err := cfg.rq.PostRecvUnlock(ep.rwr[:]); err != nil {
		q.tail = seq
		return unlockRecv(cfg.rq, ep.ia.refused(trust, op, cfg.pz, iov, dat.MemPrivLocalWrite, postErr(op, err)))
	}
	if ep.hw.active.Load() {
		ep.checkWatermarks()
	}
	return nil
}

// recvSGLLocked resolves iov into ep.rsgl for PostRecv: it returns the
// SGEs' count and whether DAT's checks were left to the provider (see
// refused), or the first fault DAT's checks find.
func (ep *EP) recvSGLLocked(cfg *postCfg, iov []dat.LMRTriplet) (k int, trust bool, err error) {
	if cfg.checksSGL && cfg.pz.loose.Load() == 0 {
		k, _ = trustedSGL(&ep.rsgl, iov)
		return k, true, nil
	}
	k, _, err = ep.ia.checkedSGL("ep_post_recv", cfg.pz, iov, dat.MemPrivLocalWrite, &ep.rsgl)
	return k, false, err
}

// unlockRecv releases the receive queue's lock and returns err.
func unlockRecv(rq recvQ, err error) error {
	rq.UnlockRecv()
	return err
}

// recvChecks is requestChecks for PostRecv.
func (ep *EP) recvChecks(iov []dat.LMRTriplet, flags dat.CompletionFlags) (*postCfg, error) {
	const op = "ep_post_recv"
	if ep.freed.Load() {
		return nil, errPostFreed
	}
	if ep.srq != nil {
		return nil, errPostSRQ
	}
	if flags&^(dat.CompletionSuppress|dat.CompletionUnsignalled) != 0 {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	cfg := ep.cfg.Load()
	if cfg == nil {
		return nil, dat.NewError(op, dat.InvalidState, dat.InvalidStateEPPZ)
	}
	if flags&dat.CompletionUnsignalled != 0 && !cfg.recvUnsig {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	if len(iov) > cfg.maxRecvIOV {
		return nil, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	return cfg, nil
}

// BindRMR binds rmr to the LMR range t with privileges priv, or unbinds
// it when t is empty (rmr_bind). The bind is posted on the EP's request
// queue and completes with an RMR-bind event there; it fences later
// requests, and its new context is valid for them at once.
func (ep *EP) BindRMR(rmr *RMR, lmr *LMR, t dat.LMRTriplet, priv dat.MemPriv, cookie dat.DTOCookie, flags dat.CompletionFlags) (dat.RMRContext, error) {
	const op = "rmr_bind"
	if err := rmr.live(op); err != nil {
		return 0, err
	}
	if err := ep.live(op); err != nil {
		return 0, err
	}
	if err := ep.require(op, canPostRequest); err != nil {
		return 0, err
	}
	if flags&^(dat.CompletionSuppress|dat.CompletionUnsignalled) != 0 {
		return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg8)
	}
	if priv&^(dat.MemPrivRemoteRead|dat.MemPrivRemoteWrite) != 0 {
		return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg4)
	}
	cfg := ep.cfg.Load()
	if cfg == nil {
		return 0, dat.NewError(op, dat.InvalidState, dat.InvalidStateEPPZ)
	}
	sq, own, pz := cfg.sq, cfg.own, cfg.pz
	if flags&dat.CompletionUnsignalled != 0 && !cfg.reqUnsig {
		return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg8)
	}
	if rmr.pz != pz {
		return 0, dat.NewError(op, dat.ProtectionViolation, dat.NoSubtype)
	}
	unbind := t.SegmentLength == 0
	var bind verbs.MWBind
	if !unbind {
		if err := lmr.live(op); err != nil {
			return 0, err
		}
		if lmr.pz != rmr.pz {
			return 0, dat.NewError(op, dat.ProtectionViolation, dat.NoSubtype)
		}
		if priv&dat.MemPrivRemoteRead != 0 && lmr.priv&dat.MemPrivLocalRead == 0 {
			return 0, dat.NewError(op, dat.PrivilegesViolation, dat.PrivilegesRDMARead)
		}
		if priv&dat.MemPrivRemoteWrite != 0 && lmr.priv&dat.MemPrivLocalWrite == 0 {
			return 0, dat.NewError(op, dat.PrivilegesViolation, dat.PrivilegesRDMAWrite)
		}
		if t.LMRContext != lmr.ctx {
			return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
		}
		base := uint64(lmr.mr.Addr())
		va, end := uint64(t.VirtualAddress), uint64(t.VirtualAddress)+uint64(t.SegmentLength)
		if va < base || end < va || end > base+uint64(len(lmr.buf)) {
			return 0, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
		}
		var acc verbs.Access
		if priv&dat.MemPrivRemoteRead != 0 {
			acc |= verbs.AccessRemoteRead
		}
		if priv&dat.MemPrivRemoteWrite != 0 {
			acc |= verbs.AccessRemoteWrite | verbs.AccessLocalWrite
		}
		bind = verbs.MWBind{MW: rmr.mw, MR: lmr.mr, Addr: va, Length: uint64(t.SegmentLength), Access: acc}
	}

	rmr.mu.Lock()
	defer rmr.mu.Unlock()
	sq.LockSend()
	q := &own.req
	seq, ok := q.reserve()
	if !ok {
		sq.UnlockSend()
		return 0, errPostFull
	}
	old := rmr.ctx
	if unbind && old == 0 {
		// Unbinding an unbound RMR changes nothing; it still completes,
		// without taking the slot.
		sq.UnlockSend()
		if req := q.evd; req != nil && flags&dat.CompletionSuppress == 0 {
			req.Push(dat.Event{Number: dat.RMRBindCompletionEvent, RMRBind: dat.RMRBindCompletion{RMR: rmr.handle, Cookie: cookie, Status: dat.DTOSuccess}})
		}
		return 0, nil
	}
	defer sq.UnlockSend()
	w := &ep.swr[0]
	*q.slot(seq) = cookieSlot{seq: seq, cookie: cookie, op: dat.DTOBindMW, flags: flags | slotBind, rmr: rmr}
	id := own.id | uint64(seq&wrSlotMask)
	if unbind {
		*w = verbs.SendWR{ID: id, Opcode: verbs.OpLocalInv, Flags: verbs.SendSignaled, InvalidateRKey: uint32(old)}
	} else {
		*w = verbs.SendWR{ID: id, Opcode: verbs.OpBindMW, Flags: verbs.SendSignaled, Bind: bind}
	}
	_, err := sq.PostSendLocked(ep.swr[:])
	*w = verbs.SendWR{SGL: ep.ssgl[:0]} // as newEP left it, for Post
	if err != nil {
		return 0, postErr(op, err)
	}
	q.commitSignalled(seq, true)
	rmr.setBinding(lmr, t, priv, unbind)
	return rmr.ctx, nil
}
