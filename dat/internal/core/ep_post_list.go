package core

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// sendListChunk is how many Sends of a PostSendList go down to the verbs
// QP in one PostSend: on rdmacore one ibv_post_send, with its one
// doorbell (over rxe a system call, in which the kernel transmits what
// is queued), for that many Sends instead of one each.
const sendListChunk = 32

// sendList is the work requests of PostSendList, allocated by an EP's
// first list and guarded by the send queue's lock, as the EP's other
// post scratch is. Each request's SGL is its own SGE from the start, so
// that a post sets no slice (see Post).
type sendList struct {
	wr      [sendListChunk]verbs.SendWR
	sge     [sendListChunk]verbs.SGE
	lastSig [sendListChunk]uint32 // the queue's lastSig before each request
}

func newSendList() *sendList {
	l := new(sendList)
	for i := range l.wr {
		l.wr[i].Opcode, l.wr[i].SGL = verbs.OpSend, l.sge[i:i+1]
	}
	return l
}

// PostSendList posts the Sends of posts in order, as many calls of
// PostDTO would, in chunks of sendListChunk per verbs post (a godapl
// extension of ep_post_send). It returns how many were posted: posts[:n]
// are on the send queue, posts[n:] are not, and err is what ep_post_send
// would have returned for posts[n] (nil when n == len(posts)). Sends of
// one segment with flags PostDTO's way takes go down together; any other
// is posted on its own, in its place. It allocates nothing after the
// EP's first list.
func (ep *EP) PostSendList(posts []dat.SendPost) (int, error) {
	if ep == nil {
		return 0, errPostFreed
	}
	done := 0
	for done < len(posts) {
		n, err := ep.postSendChunk(posts[done:])
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 {
			// Not PostDTO's way, or no room: the general path decides.
			p := &posts[done]
			if err := ep.PostDTO(dat.DTOSend, p.IOV, p.Cookie, nil, p.Flags); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// postSendChunk posts the leading Sends of posts that PostDTO's way
// takes, up to sendListChunk, in one verbs post, and returns how many.
// It stops before the first it does not take (0 if that is the first),
// and returns the error of a post the provider refused.
func (ep *EP) postSendChunk(posts []dat.SendPost) (int, error) {
	cfg := ep.cfg.Load()
	if cfg == nil || cfg.one[dat.DTOSend] == 0 {
		return 0, nil
	}
	m := cfg.sqMu // set: cfg.one
	m.Lock()
	q := &cfg.own.req
	if cfg.pz.loose.Load() != 0 {
		m.Unlock()
		return 0, nil
	}
	l := ep.list
	if l == nil {
		l = newSendList()
		ep.list = l
	}
	seq0, k := q.tail, 0
	for k < sendListChunk && k < len(posts) {
		p := &posts[k]
		if (p.Flags|oneBit)&^cfg.one[dat.DTOSend] != 0 || len(p.IOV) != 1 || p.IOV[0].SegmentLength == 0 {
			break
		}
		seq, ok := q.reserve()
		if !ok {
			break // full: PostDTO's refusal says so
		}
		t := &p.IOV[0]
		s := &l.sge[k]
		s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
		q.slot(seq).set(seq, p.Cookie, dat.DTOSend, p.Flags, t.SegmentLength)
		signalled := p.Flags&dat.CompletionSuppress == 0 || !cfg.unsigSuppressed || !q.mayGoUnsignalled(p.Flags)
		w := &l.wr[k]
		w.ID, w.Flags = cfg.reqID|uint64(seq&wrSlotMask), sendFlags(p.Flags, signalled)
		l.lastSig[k] = q.lastSig
		q.commitSignalled(seq, signalled) // before the post, as in Post
		k++
	}
	if k == 0 {
		m.Unlock()
		return 0, nil
	}
	n, err := cfg.sq.PostSendUnlock(l.wr[:k])
	if err == nil {
		return k, nil
	}
	// Still locked: what the provider did not take is taken back.
	q.tail, q.lastSig = seq0+uint32(n), l.lastSig[n]
	return n, unlockSend(cfg.sq, ep.ia.refused(true, "ep_post_send", cfg.pz, posts[n].IOV, dat.MemPrivLocalRead, postErr("ep_post_send", err)))
}
