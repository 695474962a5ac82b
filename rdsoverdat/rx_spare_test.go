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
	h := make(wire.Header, wire.HeaderLen)
	h.Encode(&wire.Fields{Sequence: 1, Len: 64, Sport: 7, Dport: 9})
	m, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	m.from = netip.MustParseAddrPort("192.0.2.1:7")
	m.releaseRx()
	if p.rxSpare.Load() != m {
		t.Fatal("a consumed 64 B message was not kept as the path's spare")
	}

	h.Encode(&wire.Fields{Sequence: 2, Len: 200, Sport: 7, Dport: 9})
	m2, err := p.NewRxMessage(h)
	if err != nil {
		t.Fatal(err)
	}
	if m2 != m || p.rxSpare.Load() != nil {
		t.Fatalf("NewRxMessage made %p with spare %p left, want the spare %p", m2, p.rxSpare.Load(), m)
	}
	if len(m2.Payload()) != 200 || m2.refs.Load() != 1 || m2.rxPath != p ||
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
	m3, _ := p.NewRxMessage(h)
	msgReserve.low.Store(true)
	m3.releaseRx()
	msgReserve.low.Store(false)
	if p.rxSpare.Load() != nil {
		t.Fatal("a message the reserve wants was kept as the spare")
	}
}
