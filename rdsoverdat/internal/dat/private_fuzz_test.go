package dat

import (
	"net/netip"
	"testing"
)

// FuzzDATPrivate feeds arbitrary connection private data (what a peer's
// connect request or accept carries) to the parser: it must never panic,
// and whatever it accepts must read back through every accessor and
// re-encode to the same fields.
func FuzzDATPrivate(f *testing.F) {
	var b [64]byte
	f.Add([]byte(encodeDatPrivate(b[:], netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), 7, 0x1234567, 0x89abcdef, 64)))
	withID := encodeDatPrivate(b[:], netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2"), 7, 0x1234567, 0x89abcdef, 64)
	putConnID(withID, 0x7fffffff)
	f.Add([]byte(withID))
	f.Add([]byte(withID[:datPrivateLenNoID]))
	f.Add([]byte(encodeDatPrivate(b[:], netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("10.0.0.1"), 0, 0, 0, 2)))
	f.Add([]byte{})
	f.Add(make([]byte, 8))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := parseDatPrivate(in)
		if err != nil {
			return
		}
		if p.Credit() < 2 || p.MinorMask()&datMinorMask == 0 {
			t.Fatalf("accepted credit %d mask %#x", p.Credit(), p.MinorMask())
		}
		var out [64]byte
		q := encodeDatPrivate(out[:], p.Saddr(), p.Daddr(), p.AckSeq(), p.AckGen(), p.MyGen(), p.Credit())
		putConnID(q, p.ConnID())
		if q.Saddr() != p.Saddr() || q.Daddr() != p.Daddr() || q.AckSeq() != p.AckSeq() || q.Credit() != p.Credit() ||
			q.AckGen() != p.AckGen() || q.MyGen() != p.MyGen() || q.ConnID() != p.ConnID() {
			t.Fatalf("re-encoding changed the fields: %x -> %x", in, []byte(q))
		}
		// The race rule reads any request against any connection's data
		// without panicking, and a request is never older than itself
		// unless it names a connection: only then can it be stale.
		if staleRequest(p, p) != (p.MyGen() != 0 && p.ConnID() != 0) {
			t.Fatalf("request %x against itself: stale %v", in, staleRequest(p, p))
		}
		if p.ConnID() != 0 && p.MyGen() != 0 {
			newer := datPrivate(append([]byte(nil), q...))
			putConnID(newer, p.ConnID()+1)
			if newer.ConnID() != 0 && staleRequest(p, newer) {
				t.Fatalf("a later request (conn_id %#x over %#x) taken for stale", newer.ConnID(), p.ConnID())
			}
		}
		if f := datFragFor(p); f < 4096 || f > datFragMax || (p.MyGen() == 0 && f != 4096) {
			t.Fatalf("fragment size %d from %x", f, in)
		}
		if _, err := parseDatPrivate(q); err != nil {
			t.Fatalf("own encoding refused: %v", err)
		}
	})
}
