package rdsoverdat

import "github.com/godapl/godapl/rdsoverdat/wire"

// Received messages go back to their path. A path receives one message
// after another and a RecvMsg frees each, so keeping the last one freed
// for the path's next NewRxMessage spares a sync.Pool Get and Put per
// received message (two atomic exchanges instead). One slot is enough
// for request-response traffic, where a path never has more than one
// received message out. A stream's receiver is handed messages in
// batches (a transport's read, the dat transport's batch of events)
// and frees them one a call, so the slot is mostly empty when a
// message comes and full when one is freed: up to maxRxSpares more
// small ones wait in a list under the path's rxSpareMu, an uncontended
// lock and unlock each way where the pool took about 160 instructions
// each way, and the pool serves the rest.

// rxSpareBuf is the most payload storage a path's spare keeps: the
// pool hands out small messages with buffers up to a congestion map's
// (which go back to it), and a path holds a map of that size anyway.
const rxSpareBuf = wire.CongMapBytes

// maxRxSpares bounds the path's list of spares beyond its slot, each
// with at most spareBuf bytes of payload storage, as a socket's spares:
// at most 64 messages of 448 bytes and their buffers, about 30 KiB for
// 64-byte messages. 64 is the dat transport's default window, the most
// fragments one batch of its events brings a connection; with 32, a
// third of RDSDATMemRate64's received messages still went through the
// pool.
const maxRxSpares = 64

// takeRxSpare returns the path's spare message with room for n payload
// bytes, or a new one.
func (p *connPath) takeRxSpare(n int) *message {
	if p.rxSpare.Load() != nil {
		if m := p.rxSpare.Swap(nil); m.ready(n) {
			return m
		} else if m != nil {
			return replaceMessage(m, n)
		}
	}
	p.rxSpareMu.Lock()
	m := p.rxSpares.pop()
	p.rxSpareMu.Unlock()
	return reuseMessage(m, n)
}

// releaseRx is release for a received message that a RecvMsg has
// consumed: the last reference leaves it, reset, in its path's spare
// slot if the slot is empty, its buffer no larger than rxSpareBuf and
// no daemon's reserve wants it back, else in the path's list if its
// buffer is small and the list has room.
func (m *message) releaseRx() {
	p := m.rxPath
	if !m.unref() {
		return
	}
	if p != nil && m.sparable(rxSpareBuf) {
		if p.rxSpare.CompareAndSwap(nil, m) || cap(m.buf) <= spareBuf && p.keepRxSpare(m) {
			return
		}
	}
	m.recycle()
}

// keepRxSpare puts m, freed and small, on p's list of spares, and
// reports whether there was room.
func (p *connPath) keepRxSpare(m *message) bool {
	p.rxSpareMu.Lock()
	ok := p.rxSpares.push(m, maxRxSpares)
	p.rxSpareMu.Unlock()
	return ok
}
