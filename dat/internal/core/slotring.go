package core

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/fastpath"
)

// slotRing is the cookie slots of one EP queue (its request queue or its
// own receive queue), used in posting order.
//
// A queue completes its work requests in the order they were posted (the
// verbs promise for a send queue and for a receive queue without an SRQ),
// and its completions reach the consumer in that order through one EVD. So
// the slots need no free list: request number seq uses slot seq&mask, the
// work request ID carries seq (with the owner's index and generation, see
// cookie.go), and handing a completion out retires every slot up to it. A
// completion that retires a later slot also retires the slots of earlier
// requests that never produced a completion (those posted unsignalled).
//
// No lock of its own: the poster's fields are guarded by the queue's post
// lock (the QP's send or receive queue lock, see postlock.go), head by
// the CQ lock of the EVD the queue completes to (EVD.cql), under which its
// completions are handed out. A poster works from its own copy of head
// (end, which is that copy plus limit), and reads head only when that
// makes the queue look full, so that a post and a dequeue share no lock
// or atomic write on the hot path. A
// slot is written by the poster before its work request is posted, and the
// verbs layer orders that before the completion that names it; it is
// written again only after the poster has seen (under the CQ lock) that
// its previous request retired.
type slotRing struct {
	slots []cookieSlot // a power of two, at least limit
	mask  uint32
	limit uint32 // requests that may be outstanding at once: the queue's size
	evd   *EVD   // where the queue completes; nil: nobody hands completions out
	ep    *EP    // whose queue it is (its handle goes into the events)

	// Poster's, under the post lock.
	tail uint32 // seq of the next request
	// end is head as the poster last read it, plus limit: the seq of
	// the first request that does not fit by that copy, so that a post
	// finds the queue full when its seq is end, one comparison.
	end uint32

	// lastSig is seq+1 of the last request posted signalled (request
	// queues only, see EP.signalled): the tail-lastSig requests after it
	// went unsignalled. Poster's, under the post lock.
	lastSig uint32

	// head: every request before it has retired. Under evd.cql.
	head uint32
}

func (q *slotRing) init(limit int, evd *EVD, ep *EP) {
	n := 1
	for n < limit {
		n <<= 1
	}
	q.slots = make([]cookieSlot, n)
	q.mask = uint32(n - 1)
	q.limit = uint32(limit)
	q.end = q.limit
	q.evd, q.ep = evd, ep
}

// reserve returns the seq of the next request, or false when limit
// requests are outstanding. The caller holds the post lock and, once the
// slot is filled and the request posted, calls commit (or nothing, if the
// post fails).
func (q *slotRing) reserve() (uint32, bool) {
	if q.tail == q.end && !q.refresh(1) {
		return 0, false
	}
	return q.tail, true
}

// reserveN is reserve for k consecutive requests; it returns the first.
func (q *slotRing) reserveN(k int) (uint32, bool) {
	if q.end-q.tail < uint32(k) && !q.refresh(k) {
		return 0, false
	}
	return q.tail, true
}

// refresh reads head again, for a poster whose copy of it says that k
// more requests do not fit, and reports whether they do. Once per queue
// depth at most: reserve, which inlines, does without it. It reads head
// as it is first, under the CQ's lock alone, which mostly shows the room
// (the consumer has dequeued what completed), and drains the CQ, under
// the EVD's locks, only when that does not.
func (q *slotRing) refresh(k int) bool {
	if q.evd == nil || uint32(k) > q.limit {
		return false
	}
	e := q.evd
	e.cql.Lock()
	q.end = q.head + q.limit
	e.cql.Unlock()
	if q.end-q.tail >= uint32(k) {
		return true
	}
	q.end = e.retiredHead(q) + q.limit
	return q.end-q.tail >= uint32(k)
}

// slot returns the slot of seq for the poster to fill.
func (q *slotRing) slot(seq uint32) *cookieSlot { return &q.slots[seq&q.mask] }

// set fills a slot of a DTO, field by field (see EP.fill for why). It
// leaves rmr, which only a bind's slot is read for, and sets: storing a
// pointer, even nil, costs a write barrier check on every post. A bind's
// completion clears it instead (translateLocked), so that the slot keeps
// no freed RMR reachable.
func (s *cookieSlot) set(seq uint32, cookie dat.DTOCookie, op dat.DTOOp, flags dat.CompletionFlags, length uint32) {
	s.seq, s.cookie, s.op, s.flags, s.length = seq, cookie, op, flags, length
}

// commit records that the requests up to seq were posted.
func (q *slotRing) commit(seq uint32) { q.tail = seq + 1 }

// Unsignalled requests. A DTO posted with COMPLETION_SUPPRESS produces no
// event when it succeeds, so on a request queue it is posted unsignalled
// at the verbs level: no completion to generate, poll and drop. Its slot
// still has to retire, and the verbs layer completes send requests in
// posting order, so a later signalled completion proves that it succeeded
// and retires it with everything before it (retireLocked). A failed or
// flushed unsignalled request still completes, with its cookie. Two things
// keep that sound:
//
//   - At most limit/2-1 unsignalled requests in a row (mayGoUnsignalled):
//     then one is signalled, suppressed or not, so that a queue full of
//     requests can always retire once the consumer has dequeued what is
//     there.
//   - ep_get_status asks the verbs layer (SendInProgressLocked) whether
//     the trailing unsignalled requests, those after the last signalled
//     one, are still in progress (idleLocked).

// mayGoUnsignalled reports whether a request with flags may be posted
// unsignalled. The caller holds the post lock.
func (q *slotRing) mayGoUnsignalled(flags dat.CompletionFlags) bool {
	return flags&dat.CompletionSuppress != 0 && q.tail-q.lastSig+1 < q.limit/2
}

// commitSignalled is commit for a request queue, which also records the
// last signalled request. A poster whose post the provider refuses
// restores tail and lastSig as they were.
func (q *slotRing) commitSignalled(seq uint32, signalled bool) {
	q.commit(seq)
	if signalled {
		q.lastSig = seq + 1
	}
}

// idleLocked reports whether every request posted on q has retired,
// retiring the trailing unsignalled ones when the verbs layer says they
// are done and none of them failed. The caller holds the send queue's
// lock, sq (which comes before the EVD's locks).
func (q *slotRing) idleLocked(sq fastpath.SendQueueLocker) bool {
	if q.evd == nil {
		return q.tail == q.head
	}
	e := q.evd
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cql.Lock()
	defer e.cql.Unlock()
	e.drainCQLocked() // retires the suppressed requests that completed signalled
	switch {
	case q.head == q.tail:
		return true
	case q.lastSig-q.head-1 < q.limit:
		return false // a signalled request (lastSig-1) has not been handed out
	case sq.SendInProgressLocked() != 0:
		return false // or -1: the provider cannot tell
	case e.wcHead < e.wcN:
		return false // the ring is full: cannot tell whether a failure waits
	}
	// Every request has run, and the failed ones' completions are queued:
	// any of q's left in the ring keeps the queue busy.
	for i := 0; i < e.n; i++ {
		if e.ring[(e.head+i)%len(e.ring)].hold.q == q {
			return false
		}
	}
	q.head = q.tail
	return true
}

// lookupLocked returns the slot of the request whose ID carries seq31 (the
// low 31 bits of its seq), or nil for a completion of a request that has
// already retired. The caller holds evd.cql and a completion naming seq31.
func (q *slotRing) lookupLocked(seq31 uint32) (*cookieSlot, uint32) {
	seq := q.head + (seq31-q.head)&wrSlotMask
	if seq-q.head >= q.limit {
		return nil, 0
	}
	s := &q.slots[seq&q.mask]
	if s.seq != seq {
		return nil, 0
	}
	return s, seq
}

// retireLocked retires every request up to and including seq: its
// completion has been handed out (or dropped). The caller holds evd.cql.
func (q *slotRing) retireLocked(seq uint32) {
	if seq+1-q.head <= q.limit {
		q.head = seq + 1
	}
}

// retireFoundLocked is retireLocked for the seq that lookupLocked has just
// returned, under the same hold of evd.cql: it lies within limit of head,
// so it needs retireLocked's check no more than lookupLocked's result does.
func (q *slotRing) retireFoundLocked(seq uint32) { q.head = seq + 1 }

// forget makes q's EVD drop q as the queue of its last completion
// (EVD.lastQ), once q's owner is out of the owner table.
func (q *slotRing) forget() {
	e := q.evd
	if e == nil {
		return
	}
	e.cql.Lock()
	if e.lastQ == q {
		e.lastKey, e.lastQ = noQueue, &noRing
	}
	e.cql.Unlock()
}

// outstanding returns the requests posted and not retired. The caller
// holds the post lock.
func (q *slotRing) outstanding() int {
	if q.evd == nil {
		return int(q.tail - q.head)
	}
	q.evd.cql.Lock()
	defer q.evd.cql.Unlock()
	return int(q.tail - q.head)
}
