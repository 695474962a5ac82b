package dat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// TestDATFragNegotiation: two godapl nodes use the smaller of their
// offers; a peer without an offer, with a smaller one, or without a
// generation (rds_ib) gets RDS_FRAG_SIZE.
func TestDATFragNegotiation(t *testing.T) {
	s, d := netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("10.4.5.6")
	var b [datPrivateLen]byte
	p := encodeDatPrivate(b[:], s, d, 0, 0, 7, 64)
	if got := datFragFor(p); got != datFragMax {
		t.Errorf("own offer: %d, want %d", got, datFragMax)
	}
	for _, c := range []struct {
		name  string
		offer uint32
		gen   uint32
		short bool
		want  int
	}{
		{"larger", 1 << 20, 7, false, datFragMax},
		{"8 KiB", 8 << 10, 7, false, 8 << 10},
		{"below 4096", 100, 7, false, wire.FragSize},
		{"none", 0, 7, false, wire.FragSize},
		{"no generation", datFragMax, 0, false, wire.FragSize},
		{"36 bytes", datFragMax, 7, true, wire.FragSize},
	} {
		q := encodeDatPrivate(make([]byte, datPrivateLen), s, d, 0, 0, c.gen, 64)
		putFragOfferValue(q, c.offer)
		if c.short {
			q = q[:privFragOffset]
		}
		if got := datFragFor(q); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func putFragOfferValue(p datPrivate, v uint32) {
	binary.BigEndian.PutUint32(p[privFragOffset:], v)
}

// fragFrames fragments payload the way a sender on a connection of frag
// bytes does.
func fragFrames(seq wire.Seq, payload []byte, frag int) [][]byte {
	h := make(wire.Header, wire.HeaderLen)
	h.Encode(&wire.Fields{Sequence: seq, Sport: 1, Dport: 2, Len: uint32(len(payload))})
	h.SetChecksum()
	var out [][]byte
	for off := 0; ; {
		slot := make([]byte, datSlot)
		n := datFragment(slot, h, payload, off, frag, 0)
		out = append(out, slot[:wire.HeaderLen+n])
		if off += n; off >= len(payload) {
			return out
		}
	}
}

// reasm runs frames through a fresh reassembly.
func reasm(frames [][]byte) ([]byte, error) {
	var r datReasm
	var cur []byte
	for _, b := range frames {
		h, f, err := parseDatFrag(b)
		if err != nil {
			return nil, err
		}
		first, done, err := r.next(h, len(f))
		if err != nil {
			return nil, err
		}
		if first {
			cur = make([]byte, h.Len())
		}
		copy(cur[r.off-len(f):], f)
		if done {
			return cur, nil
		}
	}
	return nil, errors.New("incomplete")
}

// TestDATLargeFragments: a 64 KiB message on a connection of 16 KiB
// fragments is 5 Sends; the receiver takes the first fragment's size for
// the message's and holds the rest to it.
func TestDATLargeFragments(t *testing.T) {
	msg := make([]byte, 65536+5)
	for i := range msg {
		msg[i] = byte(i * 13)
	}
	big := fragFrames(3, msg, datFragMax)
	if len(big) != 5 || len(big[0]) != wire.HeaderLen+datFragMax || len(big[4]) != wire.HeaderLen+5 {
		t.Fatalf("%d frames", len(big))
	}
	for _, frag := range []int{0, 8 << 10, datFragMax} {
		if got, err := reasm(fragFrames(3, msg, frag)); err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("fragments of %d: %v", frag, err)
		}
	}
	small := fragFrames(3, msg, 0)
	mixed := [][]byte{big[0], small[4], small[5]}
	if _, err := reasm(mixed); !errors.Is(err, errDatFrag) {
		t.Errorf("4096 after 16 KiB: %v, want %v", err, errDatFrag)
	}
	if _, err := reasm(fragFrames(3, msg, 2048)); !errors.Is(err, errDatFrag) {
		t.Errorf("fragments of 2048: %v, want %v", err, errDatFrag)
	}
	one := fragFrames(4, msg[:datFragMax], datFragMax)
	if got, err := reasm(one); len(one) != 1 || err != nil || !bytes.Equal(got, msg[:datFragMax]) {
		t.Errorf("16 KiB in one fragment: %d frames, %v", len(one), err)
	}
}
