package dat

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
)

// Which receive buffers are on the SRQ. The SRQ hands out its buffers in
// the order they were posted, so every buffer on it takes its turn: with
// all of a node's buffers posted (1024 of 16 KiB by default, 16 MiB),
// each arriving fragment lands in memory that left the cache long ago,
// and its copy into a message reads it from memory again. Yet a peer can
// only ever hold its connection's share of them (dat_credit.go). So when
// credits bind every peer (between godapl nodes), the node keeps only the
// live connections' shares plus datPostSpare buffers on the SRQ and the
// rest in a free list, most recently used on top; one connection then
// cycles through its own 64 buffers (1 MiB), which stay in the cache.
// A buffer whose completion finds more on the SRQ than that goes to the
// free list; a new connection's reservation posts from the free list
// before the peer learns of its share, so no sender ever finds the SRQ
// short. A kernel peer is not bound by credits (dat_kernel.go): a node
// speaking the kernel's wire keeps every buffer posted, and so does one
// whose peer turns out to grant no credits, from then on.

// datPostSpare is how many buffers beyond the reserved shares stay posted.
const datPostSpare = 16

// datRxPost is the node's record of its posted receive buffers.
type datRxPost struct {
	lazy   atomic.Bool  // post only what the shares need (not kernel)
	out    atomic.Int64 // buffers on the SRQ or in the event role's hands
	target atomic.Int64 // buffers that must be posted: shares + spare

	mu   sync.Mutex
	free []int32 // buffers neither posted nor in use; last is the warmest
	iov  [1]dat.LMRTriplet
}

// setTargetLocked sets the number of buffers to keep posted from the
// reserved shares. dn.mu is held.
func (dn *datNode) setTargetLocked() {
	if !dn.rxp.lazy.Load() {
		dn.rxp.target.Store(math.MaxInt64)
		return
	}
	dn.rxp.target.Store(int64(dn.reserved + datPostSpare))
}

// postAll keeps every buffer posted from now on: a peer that grants no
// credits may not respect ours either.
func (dn *datNode) postAll() {
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if !dn.rxp.lazy.Swap(false) {
		return
	}
	dn.setTargetLocked()
	dn.topUp() // an error: the IA is closing
}

// topUp posts free buffers until the target is met.
func (dn *datNode) topUp() error {
	p := &dn.rxp
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.out.Load() < p.target.Load() && len(p.free) > 0 {
		i := p.free[len(p.free)-1]
		if err := dn.post(int(i), &p.iov); err != nil {
			return err
		}
		p.free = p.free[:len(p.free)-1]
		p.out.Add(1)
	}
	return nil
}

// addFree takes n new buffers from first on: posted at once when every
// buffer is kept posted, else into the free list for topUp. dn.mu is
// held (or the node is not running yet).
func (dn *datNode) addFree(first, n int, iov *[1]dat.LMRTriplet) error {
	p := &dn.rxp
	if !p.lazy.Load() {
		for i := range n {
			if err := dn.post(first+i, iov); err != nil {
				return err
			}
			p.out.Add(1)
		}
		return nil
	}
	p.mu.Lock()
	for i := first + n - 1; i >= first; i-- { // the lowest on top
		p.free = append(p.free, int32(i))
	}
	p.mu.Unlock()
	return nil
}

// datRepostMax is how many handled buffers the event role holds before
// it gives them back to the SRQ in one post, and so at most how long a
// buffer stays off the SRQ in a long batch of events.
const datRepostMax = 32

// datRepostBatch is how many handled buffers a batch of events may leave
// held for a later batch when credits bind every peer: request-response
// traffic makes a batch of one receive per message, and its buffer, given
// back alone, would cost a whole SRQ post (the DAT SRQ's lock, its cookie
// table, the verbs SRQ's lock and checks) per message. As rds_ib refills
// its ring in batches rather than per completion, such buffers go back
// datRepostBatch at a time.
const datRepostBatch = 8

// datRepost holds the buffers whose completions the event role handled
// and has not given back yet, with the EP each came from (nil if none
// or dead then), in completion order. They go back with one SRQ post
// (srq.PostRecvList), on rdmacore one ibv_post_srq_recv for the lot
// instead of one per buffer: at the end of a batch of events (or of a
// later one, endReposts), before any event that is not a receive
// completion, and whenever datRepostMax are held. Each buffer is counted as a posted credit of its
// connection only once it is back: a credit piggybacked by a sender in
// the meantime never names a buffer that is not on the SRQ.
type datRepost struct {
	n int
	// room is the most buffers that may stay held with its EPs (the
	// least grant-ackEvery-1 among them, repostsMayWait): kept as they
	// are handled, as an EP's grant and ackEvery never change, instead of
	// a walk over the held EPs at the end of every batch.
	room  int
	buf   [datRepostMax]int32
	ep    [datRepostMax]*datEP
	posts [datRepostMax]dat.RecvPost
	iov   [datRepostMax][1]dat.LMRTriplet
}

// initReposts points each post of the held buffers at its segment once,
// so that a repost sets only the segment and the cookie.
func (dn *datNode) initReposts() {
	r := &dn.rep
	for k := range r.posts {
		r.posts[k].IOV = r.iov[k][:]
	}
}

// handled records buffer i, whose completion came from e, as done with.
func (dn *datNode) handled(i int, e *datEP) {
	r := &dn.rep
	if r.n == 0 {
		r.room = math.MaxInt
	}
	if e != nil {
		r.room = min(r.room, e.grant-int(e.ackEvery)-1)
	}
	r.buf[r.n], r.ep[r.n] = int32(i), e
	r.n++
	if r.n == len(r.buf) {
		dn.flushReposts()
	}
}

// flushReposts gives the held buffers back: to the SRQ, unless more than
// the target are there, in which case a buffer rests in the free list;
// then counts them as posted credits of their connections.
func (dn *datNode) flushReposts() {
	r := &dn.rep
	if r.n == 0 {
		return
	}
	k := 0
	d := dn.cfg.RecvDepth
	chunks := *dn.rx.Load()
	for j := range r.n {
		i := int(r.buf[j])
		if !dn.keepPosted(i) {
			continue
		}
		r.iov[k][0] = chunks[i/d].Triplet((i%d)*datSlot, datSlot)
		r.posts[k].Cookie = dat.DTOCookie(i) // its IOV is r.iov[k] (initReposts)
		k++
	}
	n := r.n
	r.n = 0
	if _, err := dn.srq.PostRecvList(r.posts[:k]); err != nil {
		clear(r.ep[:n])
		return // the IA is closing
	}
	for j := 0; j < n; {
		e, c := r.ep[j], uint32(1)
		r.ep[j] = nil
		for j++; j < n && r.ep[j] == e; j++ {
			r.ep[j] = nil
			c++
		}
		if e != nil && !e.dead.Load() && e.credits.addPosted(c) >= e.ackEvery {
			dn.wake(e)
		}
	}
}

// endReposts is flushReposts at the end of a batch of events: the held
// buffers may wait for later batches while fewer than datRepostBatch are
// held and none of their connections could miss them. A peer bound by
// credits lacks, besides the buffers held here, at most ackEvery-1 posted
// but not yet advertised (an ack-only frame goes out at ackEvery), and
// spends its last credit only with an advertisement of its own
// (dat_credit.go); with held+ackEvery+1 <= grant it still has two
// credits, one to send with, once its messages are handled, so holding
// never stalls it, even if nothing else arrives.
// A node that keeps every buffer posted (kernel peers, peers that grant
// no credits) gives them back at once: such a peer may send regardless of
// credits, and a held buffer is one fewer on the SRQ for it.
func (dn *datNode) endReposts() {
	if dn.rep.n > 0 && !dn.repostsMayWait() {
		dn.flushReposts()
	}
}

// repostsMayWait reports whether the held buffers may stay held after a
// batch of events (endReposts).
func (dn *datNode) repostsMayWait() bool {
	r := &dn.rep
	if r.n >= datRepostBatch || !dn.rxp.lazy.Load() {
		return false
	}
	return r.n <= r.room
}

// keepPosted reports whether buffer i, handled, goes back to the SRQ;
// if not, it rests in the free list, as more than the target are
// posted.
func (dn *datNode) keepPosted(i int) bool {
	p := &dn.rxp
	if p.out.Load() <= p.target.Load() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.out.Load() <= p.target.Load() { // a reservation raised it meantime
		return true
	}
	p.free = append(p.free, int32(i))
	p.out.Add(-1)
	return false
}
