package core

import (
	"sync"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// The post paths' common case on its own: a Send, RDMA Write or RDMA
// Read, or a receive, of one segment that the provider checks, on an EP
// whose snapshot lets it through, whose queue lock the provider lends
// (fastpath.SendMutexer, fastpath.RecvMutexer) and whose queue has room by the
// poster's copy of its head. PostDTO and PostRecv handle it with no call
// but the lock's slow path and the provider's post, and hand anything
// else, untouched, to Post (the general path) and postRecvSlow, which
// decide it, in a call whose result is theirs. Go keeps no
// register across a call: with the checks, the SGL resolution, the
// refresh and the undo of a refused post in line, the post paths would
// save their arguments and what they had loaded on every post; apart,
// only what the lock's slow path and the post itself need is saved.
// (sync.Mutex.TryLock, which would keep the lock's slow path out too,
// costs more inlined than the saves it spares.)
//
// PostDTO takes the request in its arguments, in registers, and the
// dat/ep wrappers call it: built into a Request by the wrapper, in the
// consumer's frame, and read back from it by the post, the request cost
// a store and a load a field, and a load again after every call. The
// work requests the common case fills (EP.dwr, EP.drwr) are its own, set
// up by newEP with what no such post changes (one SGE, no invalidation,
// no bind). A refused post rebuilds its segment from the SGE, laid out
// as the triplet it was filled from, so that the post keeps only ep and
// cfg (and PostDTO op and the undo) around the provider's call.

// PostDTO posts a Send, RDMA Write or RDMA Read (op) of the segments iov
// (ep_post_send, ep_post_rdma_write, ep_post_rdma_read); remote is the
// peer's memory of an RDMA, nil for a Send.
func (ep *EP) PostDTO(op dat.DTOOp, iov []dat.LMRTriplet, cookie dat.DTOCookie, remote *dat.RMRTriplet, flags dat.CompletionFlags) error {
	if ep == nil {
		return errPostFreed
	}
	cfg := ep.cfg.Load()
	if cfg == nil || (flags|oneBit)&^cfg.one[op&3] != 0 || len(iov) != 1 || iov[0].SegmentLength == 0 ||
		op != dat.DTOSend && iov[0].SegmentLength > remote.SegmentLength {
		return ep.postDTOSlow(op, iov, cookie, remote, flags)
	}
	m := cfg.sqMu // set: cfg.one
	m.Lock()
	q := &cfg.own.req
	if cfg.pz.loose.Load() != 0 || q.tail == q.end {
		return ep.unlockPostDTOSlow(m, op, iov, cookie, remote, flags)
	}
	seq := q.tail // reserve, whose refresh is Post's
	t := &iov[0]
	s := &ep.ssgl[0]
	s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
	q.slot(seq).set(seq, cookie, op, flags, t.SegmentLength)
	signalled := flags&dat.CompletionSuppress == 0 || !cfg.unsigSuppressed || !q.mayGoUnsignalled(flags)
	w := &ep.dwr[0]
	w.ID, w.Opcode, w.Flags = cfg.reqID|uint64(seq&wrSlotMask), dtoOpcode[op&3], sendFlags(flags, signalled)
	if remote != nil {
		w.RemoteAddr, w.RKey = uint64(remote.VirtualAddress), uint32(remote.RMRContext)
	} else {
		w.RemoteAddr, w.RKey = 0, 0
	}
	undo := q.lastSig
	q.commitSignalled(seq, signalled) // before the post, as in Post
	if _, err := cfg.sq.PostSendUnlock(ep.dwr[:]); err != nil {
		return ep.postDTORefused(cfg, op, undo, err)
	}
	return nil
}

// sendFlags is the verbs flags of a request with the DAT flags f.
func sendFlags(f dat.CompletionFlags, signalled bool) verbs.SendFlags {
	v := verbsFlags[f&validFlags]
	if signalled {
		v |= verbs.SendSignaled
	}
	return v
}

// verbsFlags is what the DAT completion flags of a request make of its
// verbs flags, but SendSignaled, which the queue decides
// (slotRing.mayGoUnsignalled): one load where testing each flag was a
// branch a flag.
var verbsFlags = func() (t [validFlags + 1]verbs.SendFlags) {
	for f := range t {
		if f&int(dat.CompletionBarrierFence) != 0 {
			t[f] |= verbs.SendFence
		}
		if f&int(dat.CompletionSolicitedWait) != 0 { // Sends only (requestChecks)
			t[f] |= verbs.SendSolicited
		}
	}
	return t
}()

// PostRecv posts a receive (ep_post_recv). It is legal in every state; in
// DISCONNECTED it is flushed at once.
func (ep *EP) PostRecv(iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	if ep == nil {
		return errPostFreed
	}
	cfg := ep.cfg.Load()
	if cfg == nil || (flags|oneBit)&^cfg.recvOne != 0 || len(iov) != 1 || iov[0].SegmentLength == 0 {
		return ep.postRecvSlow(iov, cookie, flags)
	}
	m := cfg.rqMu // set: cfg.recvOne
	m.Lock()
	q := &cfg.own.recv
	if cfg.pz.loose.Load() != 0 || q.tail == q.end {
		return ep.unlockPostRecvSlow(m, iov, cookie, flags)
	}
	seq := q.tail
	t, s := &iov[0], &ep.rsgl[0]
	s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
	q.slot(seq).set(seq, cookie, dat.DTOReceive, flags, 0)
	ep.drwr[0].ID = cfg.recvID | uint64(seq&wrSlotMask)
	q.commit(seq)
	if _, err := cfg.rq.PostRecvUnlock(ep.drwr[:]); err != nil {
		return ep.postRecvRefused(cfg, err)
	}
	if ep.hw.active.Load() {
		ep.checkWatermarks()
	}
	return nil
}

// postDTOSlow hands a request PostDTO does not take to Post. Not inlined:
// the Request it builds would take room in PostDTO's frame, and keep
// PostDTO's arguments in it from the start.
//
//go:noinline
func (ep *EP) postDTOSlow(op dat.DTOOp, iov []dat.LMRTriplet, cookie dat.DTOCookie, remote *dat.RMRTriplet, flags dat.CompletionFlags) error {
	return ep.Post(&Request{DOp: op, IOV: iov, Cookie: cookie, Flags: flags, Remote: remote})
}

// unlockPostDTOSlow releases the lock PostDTO took and hands the request
// to Post. Not inlined: Unlock's slow path is a call, around which
// PostDTO would keep its arguments, saved on every post.
//
//go:noinline
func (ep *EP) unlockPostDTOSlow(m *sync.Mutex, op dat.DTOOp, iov []dat.LMRTriplet, cookie dat.DTOCookie, remote *dat.RMRTriplet, flags dat.CompletionFlags) error {
	m.Unlock()
	return ep.postDTOSlow(op, iov, cookie, remote, flags)
}

// unlockPostRecvSlow is unlockPostDTOSlow for PostRecv.
//
//go:noinline
func (ep *EP) unlockPostRecvSlow(m *sync.Mutex, iov []dat.LMRTriplet, cookie dat.DTOCookie, flags dat.CompletionFlags) error {
	m.Unlock()
	return ep.postRecvSlow(iov, cookie, flags)
}

// postDTORefused undoes the commit of the request that the provider
// refused with err, still under the send queue's lock, which it releases,
// and returns the error, as Post does. The request was the last one
// committed (so its seq is tail-1), lastSig what commitSignalled
// replaced, and its one segment is still in ep.ssgl[0].
func (ep *EP) postDTORefused(cfg *postCfg, op dat.DTOOp, lastSig uint32, err error) error {
	q := &cfg.own.req
	q.tail, q.lastSig = q.tail-1, lastSig
	r := &Request{DOp: op, IOV: []dat.LMRTriplet{sgeTriplet(&ep.ssgl[0])}}
	return unlockSend(cfg.sq, ep.ia.refused(true, r.opName(), cfg.pz, r.IOV, needOf(r), postErr(r.opName(), err)))
}

// sgeTriplet is the LMR triplet an SGE was filled from.
func sgeTriplet(s *verbs.SGE) dat.LMRTriplet {
	return dat.LMRTriplet{VirtualAddress: dat.VAddr(s.Addr), SegmentLength: s.Length, LMRContext: dat.LMRContext(s.LKey)}
}

// postRecvRefused is postDTORefused for PostRecv, whose segment is in
// ep.rsgl[0].
func (ep *EP) postRecvRefused(cfg *postCfg, err error) error {
	const op = "ep_post_recv"
	cfg.own.recv.tail--
	iov := []dat.LMRTriplet{sgeTriplet(&ep.rsgl[0])}
	return unlockRecv(cfg.rq, ep.ia.refused(true, op, cfg.pz, iov, dat.MemPrivLocalWrite, postErr(op, err)))
}
