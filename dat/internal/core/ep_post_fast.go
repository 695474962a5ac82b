package core

import (
	"sync"

	"github.com/godapl/godapl/dat"
)

// The post paths' common case on its own: a request or receive of one
// segment that the provider checks, on an EP whose snapshot lets it
// through, whose queue lock the provider lends (verbs.SendMutexer,
// verbs.RecvMutexer) and whose queue has room by the poster's copy of its
// head. Post and PostRecv handle it with no call but the lock's slow path
// and the provider's post, and hand anything else, untouched, to postSlow
// and postRecvSlow, which decide it as before, in a call whose result is
// theirs. Go keeps no register across a call: with the checks, the SGL
// resolution, the refresh and the undo of a refused post in line, the
// post paths saved their arguments and what they had loaded on every
// post; now only what the lock's slow path and the post itself need
// after them is saved. (sync.Mutex.TryLock, which would keep the lock's
// slow path out too, costs more inlined than the saves it spares.)

// Post posts the request r (ep_post_send and the other requests).
func (ep *EP) Post(r *Request) error {
	if ep == nil {
		return errPostFreed
	}
	cfg := ep.cfg.Load()
	if cfg == nil || r.Flags&^cfg.reqFlags[r.DOp&3] != 0 || len(r.IOV) > cfg.reqIOV[r.DOp&3] {
		return ep.postSlow(r)
	}
	t := r.IOV
	if len(t) != 1 || t[0].SegmentLength == 0 || r.Sink != nil || !cfg.checksSGL ||
		r.DOp != dat.DTOSend && t[0].SegmentLength > r.Remote.SegmentLength {
		return ep.postSlow(r)
	}
	m := cfg.sqMu
	if m == nil {
		return ep.postSlow(r)
	}
	m.Lock()
	q := &cfg.own.req
	if cfg.pz.loose.Load() != 0 || q.tail+1-q.seen > q.limit {
		return ep.unlockPostSlow(m, r)
	}
	seq := q.tail // reserve, whose refresh is postSlow's
	s := &ep.ssgl[0]
	s.Addr, s.Length, s.LKey = uint64(t[0].VirtualAddress), t[0].SegmentLength, uint32(t[0].LMRContext)
	q.slot(seq).set(seq, r.Cookie, r.DOp, r.Flags, t[0].SegmentLength)
	signalled := !cfg.unsigSuppressed || !q.mayGoUnsignalled(r.Flags)
	w := &ep.swr[0]
	w.ID, w.SGL = cfg.own.id|uint64(seq&wrSlotMask), w.SGL[:1] // see postSlow
	w.RemoteAddr, w.RKey = 0, 0
	if rm := r.Remote; rm != nil {
		w.RemoteAddr, w.RKey = uint64(rm.VirtualAddress), uint32(rm.RMRContext)
	}
	fill(w, r, signalled)
	undo := q.undo()
	q.commitSignalled(seq, signalled) // before the post, as in postSlow
	if _, err := cfg.sq.PostSendUnlock(ep.swr[:]); err != nil {
		return ep.postRefused(cfg, r, undo, err)
	}
	return nil
}

// PostRecv posts a receive (ep_post_recv). It is legal in every state; in
// DISCONNECTED it is flushed at once.
func (ep *EP) PostRecv(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	if ep == nil {
		return errPostFreed
	}
	cfg := ep.cfg.Load()
	if cfg == nil || flags&^cfg.recvFlags != 0 || len(iov) > cfg.recvIOV ||
		len(iov) != 1 || iov[0].SegmentLength == 0 || !cfg.checksSGL {
		return ep.postRecvSlow(iov, cookie, flags)
	}
	m := cfg.rqMu
	if m == nil {
		return ep.postRecvSlow(iov, cookie, flags)
	}
	m.Lock()
	q := &cfg.own.recv
	if cfg.pz.loose.Load() != 0 || q.tail+1-q.seen > q.limit {
		return ep.unlockPostRecvSlow(m, iov, cookie, flags)
	}
	seq := q.tail
	t, s := &iov[0], &ep.rsgl[0]
	s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
	q.slot(seq).set(seq, cookie, dat.DTOReceive, flags, 0)
	w := &ep.rwr[0]
	w.ID, w.SGL = cfg.own.id|wrRecvBit|uint64(seq&wrSlotMask), w.SGL[:1]
	q.commit(seq)
	if _, err := cfg.rq.PostRecvUnlock(ep.rwr[:]); err != nil {
		return ep.postRecvRefused(cfg, iov, err)
	}
	if ep.hw.active.Load() {
		ep.checkWatermarks()
	}
	return nil
}

// unlockPostSlow releases the lock Post took and hands r to postSlow. Not
// inlined: Unlock's slow path is a call, around which Post would keep r,
// saved on every post.
//
//go:noinline
func (ep *EP) unlockPostSlow(m *sync.Mutex, r *Request) error {
	m.Unlock()
	return ep.postSlow(r)
}

// unlockPostRecvSlow is unlockPostSlow for PostRecv.
//
//go:noinline
func (ep *EP) unlockPostRecvSlow(m *sync.Mutex, iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	m.Unlock()
	return ep.postRecvSlow(iov, cookie, flags)
}

// postRefused undoes the commit of the request that the provider refused
// with err, still under the send queue's lock, which it releases, and
// returns the error, as postSlow does. The request was the last one
// committed (so its seq is tail-1), and undo holds what commitSignalled
// replaced (slotRing.undo): all Post keeps around the post for this.
func (ep *EP) postRefused(cfg *postCfg, r *Request, undo uint64, err error) error {
	q := &cfg.own.req
	q.tail--
	q.lastSig, q.unsig = uint32(undo), uint32(undo>>32)
	return unlockSend(cfg.sq, ep.ia.refused(true, r.opName(), cfg.pz, r.IOV, needOf(r), postErr(r.opName(), err)))
}

// postRecvRefused is postRefused for PostRecv.
func (ep *EP) postRecvRefused(cfg *postCfg, iov []dat.LMRTriplet, err error) error {
	const op = "ep_post_recv"
	cfg.own.recv.tail--
	return unlockRecv(cfg.rq, ep.ia.refused(true, op, cfg.pz, iov, dat.MemPrivLocalWrite, postErr(op, err)))
}
