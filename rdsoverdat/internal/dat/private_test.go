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
