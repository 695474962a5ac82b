package siw

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/internal/ring"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The two RDMA Read queues of a stream. RDMA Read is the one operation
// that needs both goroutines: the requester's tx sends the request and its
// rx places the response; the responder's rx accepts the request and its
// tx sends the response. Each queue is a fixed ring sized at connect time
// from the negotiated IRD or ORD, so the data path never allocates.

// inboundRead is an RDMA Read Request of the peer, accepted by rx and
// answered by tx with Read Response segments.
type inboundRead struct {
	sinkSTag iwarp.STag // the requester's buffer: STag/TO of the responses
	sinkTO   uint64
	size     uint32
	srcSTag  uint32 // our memory (the rkey the peer was given)
	srcTO    uint64
	// hdr is the request as received, attached to a Terminate if the
	// source memory turns out to be invalid when the response is sent.
	hdr [iwarp.ReadRequestHeaderLen]byte
}

// readQueue is a bounded FIFO with its own lock: the form of both Read
// queues, each shared by the two goroutines of a stream. Its length is
// also kept outside the lock (n), because every direct send asks whether
// Read Responses are waiting (pumpDirect), nearly always of an empty
// queue: a load there, where the lock was two atomic writes a message.
// A length read without the lock may be stale by the time it is used,
// as one read under it could be by the time the lock is released.
type readQueue[T any] struct {
	mu   sync.Mutex
	fifo ring.FIFO[T]  // guarded by mu
	n    atomic.Uint32 // fifo.Len(), written under mu
}

func (q *readQueue[T]) init(capacity int) {
	q.fifo.Init(capacity)
	q.n.Store(0)
}

// len returns the entries queued.
func (q *readQueue[T]) len() int { return int(q.n.Load()) }

// push queues a copy of r; false if the queue is full.
func (q *readQueue[T]) push(r *T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.fifo.Push(*r) {
		return false
	}
	q.n.Store(uint32(q.fifo.Len()))
	return true
}

// front copies the oldest entry into r; false if none.
func (q *readQueue[T]) front(r *T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fifo.Len() == 0 {
		return false
	}
	*r = *q.fifo.At(0)
	return true
}

// pop drops the oldest entry.
func (q *readQueue[T]) pop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fifo.Pop()
	q.n.Store(uint32(q.fifo.Len()))
}

// inboundReads is the IRD queue: at most ird requests (plus a Read RTR)
// are outstanding, counting the one tx is answering, which stays queued
// (front, then pop) until its last response segment is written.
type inboundReads struct{ readQueue[inboundRead] }

// outboundRead is an RDMA Read of ours whose request has been (or is
// about to be) sent and whose response is awaited.
type outboundRead struct {
	seq      uint64    // the send queue sequence number, for CompleteSend
	sink     verbs.SGE // where the response goes (its lkey is the sink STag)
	sinkSTag iwarp.STag
	sinkTO   uint64
	size     uint32
	rtr      bool // our zero-length Read RTR: no work request behind it
}

// outboundReads is the ORD queue, in request order, which is the order
// the responses come back in. The engine never hands out more Reads than
// the ORD, so push fails only on a bookkeeping bug, which the caller
// treats as fatal.
type outboundReads struct{ readQueue[outboundRead] }

// find returns the outstanding Read whose sink is stag/to, or the oldest
// when none matches; false if none is outstanding.
func (q *outboundReads) find(stag iwarp.STag, to uint64, r *outboundRead) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.fifo.Len() == 0 {
		return false
	}
	*r = *q.fifo.At(0)
	for i := range q.fifo.Len() {
		e := q.fifo.At(i)
		if e.sinkSTag == stag && e.sinkTO == to {
			*r = *e
			return true
		}
	}
	return true
}
