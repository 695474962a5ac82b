package soft

import (
	"context"
	"io"
	"sync"

	"github.com/godapl/godapl/verbs"
)

// Rejecter is what a ListenQueue needs of a connection request: a way to
// turn it away when the listener closes with it still queued.
type Rejecter interface {
	Reject(privateData []byte) error
}

// ListenQueue is the passive side of a software provider's connection
// manager apart from the wire: the backlog of connection requests waiting
// for Accept, the set of incoming connections still in their handshake,
// and the close that empties both. A provider's verbs.Listener embeds one
// and adds how requests arrive (a socket's accept loop, a fabric's bind).
//
// Offer and Close are ordered by one lock, so that a request offered
// concurrently with Close is either queued before Close (and rejected by
// it) or refused (and the offerer rejects or drops it). The zero value is
// not usable: call Init.
type ListenQueue[R Rejecter] struct {
	reqs      chan R
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu      sync.Mutex
	closed  bool                   // guarded by mu
	pending map[io.Closer]struct{} // connections in their handshake; guarded by mu
}

// Init readies q for a backlog of depth requests (at least 1, as listen(2)
// rounds a backlog of 0 up).
func (q *ListenQueue[R]) Init(depth int) {
	q.reqs = make(chan R, max(depth, 1))
	q.done = make(chan struct{})
	q.pending = make(map[io.Closer]struct{})
}

// Done is closed once Close has been called.
func (q *ListenQueue[R]) Done() <-chan struct{} { return q.done }

// Begin records c as a connection in its handshake, which Close closes if
// it comes first. It returns false, recording nothing, once q is closed.
func (q *ListenQueue[R]) Begin(c io.Closer) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.pending[c] = struct{}{}
	return true
}

// End forgets c, whose handshake failed: its owner closes it.
func (q *ListenQueue[R]) End(c io.Closer) {
	q.mu.Lock()
	delete(q.pending, c)
	q.mu.Unlock()
}

// Offer queues r, whose handshake on from (nil when there is none) is
// over. queued is false when the backlog is full or q closed, and closed
// tells which; either way from is no longer q's to close, and r is the
// caller's to reject or drop.
func (q *ListenQueue[R]) Offer(r R, from io.Closer) (queued, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if from != nil {
		delete(q.pending, from)
	}
	if q.closed {
		return false, true
	}
	select {
	case q.reqs <- r:
		return true, false
	default:
		return false, false
	}
}

// Accept returns the oldest queued request, waiting for one until ctx is
// done (its error) or q closes (verbs.ErrClosed). A request for which
// stale reports true (its initiator gave up while it was queued) is
// dropped; stale may be nil.
func (q *ListenQueue[R]) Accept(ctx context.Context, stale func(R) bool) (R, error) {
	for {
		select {
		case r := <-q.reqs:
			if stale != nil && stale(r) {
				continue
			}
			return r, nil
		case <-q.done:
			var zero R
			return zero, verbs.ErrClosed
		case <-ctx.Done():
			var zero R
			return zero, ctx.Err()
		}
	}
}

// Close refuses every later Begin and Offer, closes the connections still
// in their handshake, ends Accept and rejects the requests queued. It
// returns false when q was already closed.
func (q *ListenQueue[R]) Close() bool {
	first := false
	q.closeOnce.Do(func() {
		first = true
		q.mu.Lock()
		q.closed = true
		for c := range q.pending {
			c.Close()
		}
		clear(q.pending)
		q.mu.Unlock()
		close(q.done)
		for {
			select {
			case r := <-q.reqs:
				r.Reject(nil)
				continue
			default:
			}
			break
		}
	})
	return first
}
