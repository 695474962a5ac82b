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
// one segment go down together, their segments checked as Post checks
// them (by the provider, or by DAT for one that does not check SGLs, as
// rdmacore does not); any other entry, and one the checks refuse, is
// posted on its own, in its place, by PostDTO, which reports the
// refusal. It allocates nothing after the EP's first list.
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
			// Not the list's common case, refused, or no room: the
			// general path decides.
			p := &posts[done]
			if err := ep.PostDTO(dat.DTOSend, p.IOV, p.Cookie, nil, p.Flags); err != nil {
				return done, err
			}
			done++
		}
	}
	return done, nil
}

// postSendChunk hands the first entries of the list to the verbs QP in
// one PostSend, up to sendListChunk of them, as long as each is a Send
// of one segment with flags the snapshot lets through, and returns how
// many it handed. It stops before the first it does not take
// (0 if that is the first), and returns the error of a post the provider
// refused.
func (ep *EP) postSendChunk(posts []dat.SendPost) (int, error) {
	const op = "ep_post_send"
	cfg := ep.cfg.Load()
	if cfg == nil || cfg.sqMu == nil || cfg.reqIOV[dat.DTOSend] < 1 {
		return 0, nil
	}
	m := cfg.sqMu
	m.Lock()
	q := &cfg.own.req
	// The provider checks the segments as it takes them, unless it does
	// not check SGLs or the PZ has loose LMRs: then DAT does, here.
	trust := cfg.checksSGL && cfg.pz.loose.Load() == 0
	l := ep.list
	if l == nil {
		l = newSendList()
		ep.list = l
	}
	seq0, k := q.tail, 0
	for k < sendListChunk && k < len(posts) {
		p := &posts[k]
		if p.Flags&^cfg.reqFlags[dat.DTOSend] != 0 || len(p.IOV) != 1 || p.IOV[0].SegmentLength == 0 {
			break
		}
		t := &p.IOV[0]
		s := &l.sge[k]
		if trust {
			s.Addr, s.Length, s.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
		} else if ep.ia.CheckLocal(op, cfg.pz, t, dat.MemPrivLocalRead, s) != nil {
			break // refused: PostDTO's checks say why
		}
		seq, ok := q.reserve()
		if !ok {
			break // full: PostDTO's refusal says so
		}
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
	return n, unlockSend(cfg.sq, ep.ia.refused(trust, op, cfg.pz, posts[n].IOV, dat.MemPrivLocalRead, postErr(op, err)))
}
