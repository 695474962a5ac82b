package rdsoverdat

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// A received message that a RecvMsg consumed serves the path's next
// NewRxMessage, reset and with the new header; one still referenced, one
// with a large buffer, or one a daemon's reserve wants does not.
func TestRxSpare(t *testing.T) {
	withoutReserve(t)

	p := &connPath{}
	// What the pool hands out depends on the tests before (a 64 B
	// message may come with a 64 KiB buffer, which no spare keeps): the
	// messages whose keeping is tested start as a small spare.
	small := func() *message { return &message{msgState: msgState{buf: make([]byte, 0, 64)}} }
	first := small()
	p.rxSpare.Store(first)
	h := make(wire.Header, wire.HeaderLen)
	h.Encode(&wire.Fields{Sequence: 1, Len: 64, Sport: 7, Dport: 9})
	m, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	if m != first || p.rxSpare.Load() != nil {
		t.Fatalf("NewRxMessage made %p with spare %p left, want the spare %p", m, p.rxSpare.Load(), first)
	}
	m.from = netip.MustParseAddrPort("192.0.2.1:7")
	m.releaseRx()
	if p.rxSpare.Load() != m {
		t.Fatal("a consumed 64 B message was not kept as the path's spare")
	}

	// Shorter than the first, which any buffer the first had holds
	// (the pool hands out buffers of any size from 64 B).
	h.Encode(&wire.Fields{Sequence: 2, Len: 32, Sport: 7, Dport: 9})
	m2, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	if m2 != m || p.rxSpare.Load() != nil {
		t.Fatalf("NewRxMessage made %p with spare %p left, want the spare %p", m2, p.rxSpare.Load(), m)
	}
	if len(m2.Payload()) != 32 || m2.refs.Load() != 1 || m2.rxPath != p ||
		!bytes.Equal(m2.hdr[:], h) || m2.from.IsValid() {
		t.Fatalf("reused message: len %d refs %d path %p from %v", len(m2.Payload()), m2.refs.Load(), m2.rxPath, m2.from)
	}

	m2.Hold()
	m2.releaseRx()
	if p.rxSpare.Load() != nil {
		t.Fatal("a message still referenced became the spare")
	}
	m2.releaseRx()
	if p.rxSpare.Load() != m2 {
		t.Fatal("the last reference did not leave the message as the spare")
	}
	p.rxSpare.Store(nil)

	h.Encode(&wire.Fields{Sequence: 3, Len: 64 << 10, Sport: 7, Dport: 9})
	big, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	big.releaseRx()
	if p.rxSpare.Load() != nil {
		t.Fatal("a 64 KiB message was kept as the spare")
	}

	h.Encode(&wire.Fields{Sequence: 4, Len: 64, Sport: 7, Dport: 9})
	p.rxSpare.Store(small())
	m3, _ := p.NewRxMessage(h)
	msgReserve.low.Store(true)
	m3.releaseRx()
	msgReserve.low.Store(false)
	if p.rxSpare.Load() != nil {
		t.Fatal("a message the reserve wants was kept as the spare")
	}
}
