package rdsoverdat

import "github.com/godapl/godapl/rdsoverdat/wire"

// Received messages go back to their path. A path receives one message
// after another and a RecvMsg frees each, so keeping the last one freed
// for the path's next NewRxMessage spares a sync.Pool Get and Put per
// received message (two atomic exchanges instead). One slot is enough
// for request-response traffic, where a path never has more than one
// received message out; a stream's receiver fills and empties it as it
// keeps up, and the pool serves the rest.

// rxSpareBuf is the most payload storage a path's spare keeps: the
// pool hands out small messages with buffers up to a congestion map's
// (which go back to it), and a path holds a map of that size anyway.
const rxSpareBuf = wire.CongMapBytes

// takeRxSpare returns the path's spare message with room for n payload
// bytes, or a new one.
func (p *connPath) takeRxSpare(n int) *message {
	if p.rxSpare.Load() == nil {
		return newMessage(n)
	}
	return reuseMessage(p.rxSpare.Swap(nil), n)
}

// releaseRx is release for a received message that a RecvMsg has
// consumed: the last reference leaves it, reset, in its path's spare
// slot if the slot is empty, its buffer no larger than rxSpareBuf and
// no daemon's reserve wants it back.
func (m *message) releaseRx() {
	p := m.rxPath
	if !m.unref() {
		return
	}
	if p != nil && m.sparable(rxSpareBuf) && p.rxSpare.CompareAndSwap(nil, m) {
		return
	}
	m.recycle()
}
