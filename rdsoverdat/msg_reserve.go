package rdsoverdat

import (
	"sync"
	"sync/atomic"
)

// The message reserve. A stream's sender holds a message object for
// every message sent and not yet acknowledged, thousands of them while
// a stream starts, and msgPool, a sync.Pool, is emptied by every
// garbage collection: a stream that starts after one pays an allocation
// per message until the pool holds as many as are in flight, and those
// allocations bring on the next collection. A daemon, which serves
// short-lived sockets for as long as it runs, keeps a reserve of small
// messages that no collection takes: filled when it starts
// (reserveMessages), drawn on when msgPool is empty, and refilled by
// released messages before msgPool gets them. A process that reserves
// nothing (in process, the reserve's size is 0) pays one atomic load a
// release for it.

// reserveBuf is the most payload storage a reserved message keeps, so
// that the reserve pins reserveMsgs small objects and never large
// buffers.
const reserveBuf = 1 << 10

// reserveMsgs is the size of a daemon's reserve: about 8 MB of objects,
// as many messages as a stream of small ones has been seen to keep in
// flight while it starts (all of its first 10000).
const reserveMsgs = 16384

// msgReserveT is a reserve (under its mu): its messages, up to
// cap(ms), and whether it holds fewer than that (low, read without mu by
// release).
type msgReserveT struct {
	mu  sync.Mutex
	ms  []*message
	low atomic.Bool
}

// msgReserve is the process's reserve.
var msgReserve msgReserveT

// reserveMessages makes the reserve hold n messages (at least), each
// with room for 64 payload bytes, allocating those it lacks.
func reserveMessages(n int) {
	r := &msgReserve
	r.mu.Lock()
	defer r.mu.Unlock()
	if cap(r.ms) < n {
		ms := make([]*message, len(r.ms), n)
		copy(ms, r.ms)
		r.ms = ms
	}
	for len(r.ms) < cap(r.ms) {
		r.ms = append(r.ms, &message{msgState: msgState{buf: make([]byte, 0, 64)}})
	}
	r.low.Store(false)
}

// take returns a message of the reserve, or nil if it holds none; what
// it takes released messages put back.
func (r *msgReserveT) take() *message {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.ms)
	if n == 0 {
		return nil
	}
	m := r.ms[n-1]
	r.ms[n-1] = nil
	r.ms = r.ms[:n-1]
	r.low.Store(true)
	return m
}

// put keeps a released message (reset, cap(buf) <= reserveBuf) if the
// reserve lacks some, and reports whether it did.
func (r *msgReserveT) put(m *message) bool {
	if !r.low.Load() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ms) == cap(r.ms) {
		r.low.Store(false)
		return false
	}
	r.ms = append(r.ms, m)
	if len(r.ms) == cap(r.ms) {
		r.low.Store(false)
	}
	return true
}
