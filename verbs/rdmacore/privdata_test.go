//go:build rdmacore

package rdmacore

import (
	"bytes"
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestPrivDataFrame: on IB and RoCE the length byte gives back exactly
// what was sent out of the CM's zero-padded field; iWARP is left alone.
func TestPrivDataFrame(t *testing.T) {
	roce := &Device{attr: verbs.DeviceAttr{Transport: verbs.TransportRoCE}}
	iwarp := &Device{attr: verbs.DeviceAttr{Transport: verbs.TransportIWARP}}
	for _, b := range [][]byte{nil, {0}, {1, 0, 0}, bytes.Repeat([]byte{0xab}, 55)} {
		field := make([]byte, 56) // the CM pads to its fixed size
		copy(field, roce.framePriv(b))
		if got := unframePriv(field); !bytes.Equal(got, b) {
			t.Errorf("RoCE round trip of %x gave %x", b, got)
		}
		if got := iwarp.framePriv(b); !bytes.Equal(got, b) {
			t.Errorf("iWARP framed %x as %x", b, got)
		}
	}
	// Data from a peer that does not frame passes through when its
	// first byte cannot be a length.
	if got := unframePriv([]byte{200, 1, 2}); !bytes.Equal(got, []byte{200, 1, 2}) {
		t.Errorf("unframed data came out as %x", got)
	}
}

func FuzzUnframePriv(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c', 0, 0})
	f.Add([]byte{})
	f.Add([]byte{255})
	f.Fuzz(func(t *testing.T, b []byte) {
		got := unframePriv(b)
		if len(got) > len(b) {
			t.Fatalf("unframePriv(%x) = %x, longer than its input", b, got)
		}
		if len(b) > 0 && int(b[0]) <= len(b)-1 && !bytes.Equal(got, b[1:1+int(b[0])]) && b[0] != 0 {
			t.Fatalf("unframePriv(%x) = %x", b, got)
		}
	})
}
