package core

import (
	"errors"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// srqListChunk is how many buffers of a PostRecvList go down to the verbs
// SRQ in one PostRecv: one trip to the device (one cgo call and one
// doorbell on rdmacore) for that many buffers instead of one each.
const srqListChunk = 32

// sgl checks iov as srq_post_recv does and writes its non-empty segments
// to g; it returns how many. postMu is held.
func (s *SRQ) sgl(op string, trust bool, iov []dat.LMRTriplet, g *[verbs.MaxSGE]verbs.SGE) (int, error) {
	k := 0
	for i := range iov {
		t := &iov[i]
		if t.SegmentLength == 0 {
			continue
		}
		if trust {
			trustedSGE(&g[k], t)
		} else if err := s.ia.CheckLocal(op, s.pz, t, dat.MemPrivLocalWrite, &g[k]); err != nil {
			return 0, err
		}
		k++
	}
	return k, nil
}

// trustedSGE writes t, a non-empty segment that the provider checks, to
// e as it is.
func trustedSGE(e *verbs.SGE, t *dat.LMRTriplet) {
	e.Addr, e.Length, e.LKey = uint64(t.VirtualAddress), t.SegmentLength, uint32(t.LMRContext)
}

// PostRecvList posts the buffers of posts in order, as many calls of
// PostRecv would, in chunks of srqListChunk per verbs post (a godapl
// extension of srq_post_recv). It returns how many were posted: posts[:n]
// are on the SRQ, posts[n:] are not, and err is what PostRecv would have
// returned for posts[n] (nil when n == len(posts)). It allocates nothing.
func (s *SRQ) PostRecvList(posts []dat.RecvPost) (int, error) {
	const op = "srq_post_recv"
	if s == nil || s.freed.Load() {
		return 0, errSRQFreed
	}
	maxIOV := int(s.maxIOV.Load())
	trust := s.checksSGL && s.pz.loose.Load() == 0
	s.postMu.Lock()
	defer s.postMu.Unlock()
	done := 0
	for done < len(posts) {
		n, bad := s.fillChunk(op, trust, maxIOV, posts[done:])
		if n > 0 {
			m, err := s.vsrq.PostRecv(s.lwr[:n])
			for j := range n {
				s.lwr[j].SGL = nil
				if j >= m {
					s.own.table.put(s.lslot[j])
				}
			}
			done += m
			if err != nil {
				if errors.Is(err, verbs.ErrQueueFull) {
					err = errSRQFull
				} else {
					err = postErr(op, err)
				}
				return done, s.ia.refused(trust, op, s.pz, posts[done].IOV, dat.MemPrivLocalWrite, err)
			}
		}
		if bad != nil {
			return done, bad
		}
	}
	return done, nil
}

// fillChunk prepares the work requests of the first buffers of posts, up
// to srqListChunk, each with a cookie slot; it stops at the first buffer
// PostRecv would refuse before posting and returns that refusal. postMu
// is held.
func (s *SRQ) fillChunk(op string, trust bool, maxIOV int, posts []dat.RecvPost) (int, error) {
	n := 0
	for n < srqListChunk && n < len(posts) {
		p := &posts[n]
		if len(p.IOV) > maxIOV {
			return n, dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
		}
		k := 1
		if iov := p.IOV; trust && len(iov) == 1 && iov[0].SegmentLength != 0 {
			// One segment, as a consumer reposting its buffers posts
			// each: sgl without its call and loop.
			trustedSGE(&s.lsgl[n][0], &iov[0])
		} else {
			var err error
			if k, err = s.sgl(op, trust, iov, &s.lsgl[n]); err != nil {
				return n, err
			}
		}
		slot, ok := s.own.table.get(cookieSlot{cookie: p.Cookie, op: dat.DTOReceive})
		if !ok {
			return n, s.ia.refused(trust, op, s.pz, p.IOV, dat.MemPrivLocalWrite, errSRQFull)
		}
		s.lslot[n] = slot
		s.lwr[n] = verbs.RecvWR{ID: s.own.id | wrRecvBit | uint64(slot), SGL: s.lsgl[n][:k]}
		n++
	}
	return n, nil
}
