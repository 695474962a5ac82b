package wire

import (
	"bytes"
	"testing"
)

// FuzzIBPrivate feeds arbitrary bytes to ParseIBPrivate in both forms: no
// input may panic, whatever parses re-encodes to the same bytes with the
// reserved bytes and padding zeroed, and IBNegotiate either agrees on 3.1
// or 4.x or refuses with ErrIBPrivateVersion.
func FuzzIBPrivate(f *testing.F) {
	recs := ibCapture(f)
	for _, name := range []string{"req_private_v4", "req_private_v6"} {
		f.Add(recs[name][cmaHeaderLen:], name == "req_private_v6")
	}
	f.Add(recs["rep_private_v4"], false)
	f.Add(recs["rep_private_v6"], true)
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, v6 bool) {
		p, err := ParseIBPrivate(b, v6)
		if err != nil {
			return
		}
		if p.IsV6() != v6 || len(p) > len(b) {
			t.Fatalf("view of %d bytes, v6 %v", len(p), p.IsV6())
		}
		want := bytes.Clone(p)
		c := IBPrivate(want).Common()
		clear(c[ibReservedOffset:ibAckSeqOffset])
		clear(c[ibPaddingOffset:])
		if p.Saddr().Is4In6() || p.Daddr().Is4In6() {
			return // Encode writes v4-mapped addresses in the IPv4 form
		}
		fl := p.Decode()
		again, err := EncodeIBPrivate(make([]byte, IB6PrivateLen), &fl)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", fl, err)
		}
		if !bytes.Equal(again, want) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", []byte(again), want)
		}
		if v, err := IBNegotiate(p); err == nil {
			if v != ProtocolVersion31 && v != ProtocolVersion40 && v != ProtocolVersion41 {
				t.Fatalf("negotiated %#x", v)
			}
		} else if err != ErrIBPrivateVersion {
			t.Fatal(err)
		}
	})
}
