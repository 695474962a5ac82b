package dat

import (
	"net/netip"
	"testing"
)

// An ack_gen or my_gen of 0, or private data too short to hold it (an
// older peer's), names no generation.
func TestDATPrivateNoGeneration(t *testing.T) {
	var pd [datPrivateLen]byte
	p := encodeDatPrivate(pd[:], netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), 5, 0, 0, 16)
	if p.AckGen() != 0 || datPrivate(pd[:28]).AckGen() != 0 {
		t.Fatal("an ack_gen of 0 or missing must name no generation")
	}
	if p.MyGen() != 0 || datPrivate(pd[:32]).MyGen() != 0 {
		t.Fatal("a my_gen of 0 or missing must name no generation")
	}
}

// A conn_id of 0, or private data too short to hold it (an older godapl
// peer's 40 bytes, the kernel's 32), names no connection; encoding
// leaves it 0 until putConnID.
func TestDATPrivateNoConnID(t *testing.T) {
	var pd [datPrivateLen]byte
	p := encodeDatPrivate(pd[:], netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), 5, 0, 3, 16)
	if p.ConnID() != 0 {
		t.Fatalf("conn_id %d before putConnID", p.ConnID())
	}
	putConnID(p, 0xfedcba98)
	if p.ConnID() != 0xfedcba98 || p[:datPrivateLenNoID].ConnID() != 0 || p[:32].ConnID() != 0 {
		t.Fatalf("conn_id %#x, %#x from 40 bytes", p.ConnID(), p[:datPrivateLenNoID].ConnID())
	}
	if p[:datPrivateLenNoID].MyGen() != 3 || p[:datPrivateLenNoID].FragOffer() != datFragMax {
		t.Fatal("40 bytes lost my_gen or frag_max")
	}
}
