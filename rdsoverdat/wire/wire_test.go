package wire

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Headers as the Linux 6.1 kernel sent them to the lab's host peer
// (a capture on the bridge of the lab in tests/lab).
const (
	capCongMap = `00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
		00 00 20 00 00 00 00 00 01 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00`
	capProbe = `00 00 00 00 00 00 00 01 00 00 00 00 00 00 00 00
		00 00 00 00 00 01 00 00 00 00 00 00 00 00 00 00
		05 00 08 00 00 00 00 00 00 00 00 00 00 00 00 00`
	capData = `00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 00
		00 00 00 20 46 55 0f a0 00 00 00 00 00 00 00 00
		00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00`
)

func TestKernelCaptures(t *testing.T) {
	h, err := ParseHeader(unhex(t, capCongMap))
	if err != nil {
		t.Fatal(err)
	}
	if !h.IsCongMap() || h.Len() != CongMapBytes || h.Sequence() != 0 {
		t.Errorf("cong map header decoded as %+v", h.Decode())
	}
	want := make(Header, HeaderLen)
	f := CongMapFields()
	want.Encode(&f)
	if !bytes.Equal(want, h) {
		t.Errorf("CongMapFields encodes\n%x\nkernel sent\n%x", []byte(want), []byte(h))
	}

	h, _ = ParseHeader(unhex(t, capProbe))
	if h.Sequence() != 1 || h.Sport() != ProbePort || h.Dport() != PingPort || !IsProbe(h.Sport(), h.Dport()) {
		t.Errorf("probe decoded as %+v", h.Decode())
	}
	it := h.Exts()
	if !it.Next() {
		t.Fatal("no extension in the probe")
	}
	if n, ok := it.Ext().NPaths(); !ok || n != MPathWorkers {
		t.Errorf("probe NPATHS = %d, %v", n, ok)
	}
	if it.Next() || it.Err() != nil {
		t.Errorf("more than one extension in a 6.1 probe: %v", it.Err())
	}
	// The same probe built with our encoder.
	own := make(Header, HeaderLen)
	own.Encode(&Fields{Sequence: 1, Sport: ProbePort})
	if err := own.AddExt(NPathsExt(8)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(own, h) {
		t.Errorf("our probe\n%x\nkernel probe\n%x", []byte(own), []byte(h))
	}

	h, _ = ParseHeader(unhex(t, capData))
	d := h.Decode()
	if d.Sequence != 2 || d.Len != 32 || d.Sport != 18005 || d.Dport != 4000 || d.Flags != 0 || !h.ChecksumOK() {
		t.Errorf("data decoded as %+v", d)
	}
}

// EncodeData writes what Encode writes for a data message's length and
// ports, over a header that held something else.
func TestEncodeDataMatchesEncode(t *testing.T) {
	want := make(Header, HeaderLen)
	want.Encode(&Fields{Len: 0x01020304, Sport: 0x1112, Dport: 0x2122})
	h := make(Header, HeaderLen)
	for i := range h {
		h[i] = 0xee
	}
	h.EncodeData(0x01020304, 0x1112, 0x2122)
	if !bytes.Equal(h, want) {
		t.Errorf("EncodeData\n%x\nEncode\n%x", []byte(h), []byte(want))
	}
}

func TestAccessorsRoundTrip(t *testing.T) {
	f := Fields{Sequence: 0x0102030405060708, Ack: 0x1112131415161718, Len: 0x21222324,
		Sport: 0x3132, Dport: 0x4142, Flags: FlagRetransmitted | FlagAckRequired, Credit: 200}
	f.Ext[0] = byte(ExtRDMA)
	h := make(Header, HeaderLen)
	for i := range h {
		h[i] = 0xee // padding and csum must be cleared by Encode
	}
	h.Encode(&f)
	if got := h.Decode(); got != f {
		t.Fatalf("Decode(Encode(f)) = %+v, want %+v", got, f)
	}
	if h.Csum() != 0 || !bytes.Equal(h[PaddingOffset:CsumOffset], []byte{0, 0, 0, 0}) {
		t.Errorf("padding/csum not zero: %x", []byte(h))
	}
	if !bytes.Equal(h[:8], []byte{1, 2, 3, 4, 5, 6, 7, 8}) || h[FlagsOffset] != 0x06 || h[CreditOffset] != 200 {
		t.Errorf("byte layout: %x", []byte(h))
	}
	if _, err := ParseHeader(h[:HeaderLen-1]); err != ErrShortHeader {
		t.Errorf("short header: %v", err)
	}
}

func TestChecksum(t *testing.T) {
	h := make(Header, HeaderLen)
	h.Encode(&Fields{Sequence: 7, Ack: 3, Len: 4096, Sport: 4000, Dport: 5000, Credit: 9})
	if !h.ChecksumOK() {
		t.Fatal("csum 0 must be accepted (rds_tcp never sets it)")
	}
	h.SetChecksum()
	if h.Csum() == 0 || !h.ChecksumOK() {
		t.Fatalf("csum %#x not accepted", h.Csum())
	}
	// RFC 1071 by hand over the 24 big-endian words.
	var sum uint32
	for i := 0; i < HeaderLen; i += 2 {
		if i != CsumOffset {
			sum += uint32(h[i])<<8 | uint32(h[i+1])
		}
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	if want := ^uint16(sum); h.Csum() != want {
		t.Errorf("csum %#x, want %#x", h.Csum(), want)
	}
	h.SetCredit(10)
	if h.ChecksumOK() {
		t.Error("a changed header still passes its old checksum")
	}
}

// TestChecksumWords checks the checksum against RFC 1071 word by word
// over headers of random bytes and of runs of 0x00 and 0xff, where the
// end-around carries pile up: the sum in words of the other byte order
// must land on the same 16 bits, 0x0000 and 0xffff kept apart.
func TestChecksumWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := make(Header, HeaderLen)
	for i := range 20000 {
		switch i % 4 {
		case 0:
			for j := range h {
				h[j] = byte(rng.Uint32())
			}
		case 1:
			for j := range h {
				h[j] = 0xff * byte(rng.Uint32()&1)
			}
		case 2:
			n := rng.IntN(HeaderLen + 1)
			for j := range h {
				h[j] = 0
				if j < n {
					h[j] = 0xff
				}
			}
		default:
			for j := range h {
				h[j] = 0xff - byte(rng.Uint32()&3)
			}
		}
		var sum uint32
		for j := 0; j < HeaderLen; j += 2 {
			sum += uint32(h[j])<<8 | uint32(h[j+1])
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if got, want := h.checksum(), ^uint16(sum); got != want {
			t.Fatalf("checksum of %x: %#x, want %#x", []byte(h), got, want)
		}
	}
}

func TestExtensions(t *testing.T) {
	h := make(Header, HeaderLen)
	for _, e := range []Ext{NPathsExt(1), GenNumExt(0xdeadbeef), SportIdxExt()} {
		if err := h.AddExt(e); err != nil {
			t.Fatalf("AddExt(%d): %v", e.Type, err)
		}
	}
	// Mainline's handshake layout (rds-wire.md §2.7).
	want := unhex(t, "05 0001 06 deadbeef 08 00 000000000000")
	if !bytes.Equal(h.ExtArea(), want) {
		t.Errorf("ext area %x, want %x", h.ExtArea(), want)
	}
	var got []Ext
	for it := h.Exts(); it.Next(); {
		got = append(got, it.Ext())
	}
	if len(got) != 3 {
		t.Fatalf("parsed %d extensions", len(got))
	}
	if g, _ := got[1].GenNum(); g != 0xdeadbeef {
		t.Errorf("gen %#x", g)
	}
	if err := h.AddExt(RDMADestExt(1, 2)); err != ErrExtNoSpace {
		t.Errorf("overfull area: %v", err)
	}
	if err := h.AddExt(Ext{Type: 7}); err != ErrExtType {
		t.Errorf("sizeless type: %v", err)
	}

	// Exactly filled area: no terminator needed.
	h2 := make(Header, HeaderLen)
	for _, e := range []Ext{RDMADestExt(0x01020304, 0x05060708), RDMAExt(0xa0b0c0d0), SportIdxExt()} {
		if err := h2.AddExt(e); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	it := h2.Exts()
	for it.Next() {
		e := it.Ext()
		if e.Len() != len(e.Append(nil)) {
			t.Errorf("Len %d != encoded %d", e.Len(), len(e.Append(nil)))
		}
		n += e.Len()
	}
	if n != ExtSpace || it.Err() != nil {
		t.Errorf("filled area parsed %d bytes, err %v", n, it.Err())
	}
	e, _, _ := ParseExt(RDMADestExt(0x01020304, 0x05060708).Append(nil))
	if k, _ := e.RKey(); k != 0x01020304 {
		t.Errorf("rkey %#x", k)
	}
	if o, _ := e.Offset(); o != 0x05060708 {
		t.Errorf("offset %#x", o)
	}
	e, _, _ = ParseExt(RDMAAddrExt(0x7ffe_1234_5678).Append(nil))
	if a, ok := e.RDMAAddr(); !ok || a != 0x7ffe_1234_5678 || e.Len() != 7 {
		t.Errorf("rdma addr %#x %v len %d", a, ok, e.Len())
	}
	var ah Header = make([]byte, HeaderLen)
	if err := ah.AddExt(RDMADestExt(7, 0)); err != nil {
		t.Fatal(err)
	}
	if err := ah.AddExt(RDMAAddrExt(MaxRDMAAddr)); err != nil {
		t.Fatalf("RDMA_DEST and RDMA_ADDR must fill the 16 bytes exactly: %v", err)
	}
	e, _, _ = ParseExt(RDMABytesExt(65536, RDMAWriteBytes).Append(nil))
	if nb, dir, ok := e.RDMABytes(); !ok || nb != 65536 || dir != RDMAWriteBytes {
		t.Errorf("rdma bytes %d %d %v", nb, dir, ok)
	}
}

// The kernel quirk: an undefined type below 16 parses as an empty body and
// parsing continues at the next byte.
func TestExtUnknownType(t *testing.T) {
	area := unhex(t, "07 05 0003 00")
	e, n, err := ParseExt(area)
	if err != nil || e.Type != 7 || n != 1 || len(e.Body()) != 0 {
		t.Fatalf("unknown type: %v %d %v", e, n, err)
	}
	e, n, err = ParseExt(area[1:])
	if p, _ := e.NPaths(); err != nil || p != 3 || n != 3 {
		t.Fatalf("after unknown type: %v %d %v", e, n, err)
	}
	if _, _, err := ParseExt([]byte{byte(ExtGenNum), 1, 2}); err != ErrExtOverflow {
		t.Errorf("overflow: %v", err)
	}
	if _, _, err := ParseExt([]byte{16, 1}); err != ErrExtEnd {
		t.Errorf("type 16: %v", err)
	}
}

func TestCongMap(t *testing.T) {
	var m CongMap
	for _, p := range []Port{0, 1, 7, 8, 4000, 65535} {
		if m.Test(p) {
			t.Fatalf("port %d set in a zero map", p)
		}
		m.Set(p)
		if !m.Test(p) {
			t.Fatalf("port %d not set", p)
		}
	}
	// Bit order: port 4000 = byte 500, bit 0 (LSB); 65535 = byte 8191, bit 7.
	if m[500] != 0x01 || m[8191] != 0x80 || m[0] != 0x83 || m[1] != 0x01 {
		t.Errorf("bit layout: %x %x %x %x", m[0], m[1], m[500], m[8191])
	}
	old := m
	m.Clear(4000)
	m.Clear(7)
	if m.Test(4000) || !m.Test(65535) {
		t.Error("Clear")
	}
	want := CongMonitorMask(4000) | CongMonitorMask(7)
	if got := Uncongested(&old, &m); got != want {
		t.Errorf("Uncongested = %#x, want %#x", got, want)
	}
	if Uncongested(&m, &old) != 0 {
		t.Error("newly congested ports reported as uncongested")
	}
	if CongMonitorMask(64+3) != 1<<3 {
		t.Error("monitor bit is port % 64")
	}
}

func TestPing(t *testing.T) {
	for _, c := range []struct {
		s, d       Port
		ping, prob bool
	}{{5, 0, true, false}, {1, 0, true, true}, {0, 1, false, true}, {0, 0, false, false}, {0, 5, false, false}} {
		if IsPing(c.s, c.d) != c.ping || IsProbe(c.s, c.d) != c.prob {
			t.Errorf("%d->%d: ping %v probe %v", c.s, c.d, IsPing(c.s, c.d), IsProbe(c.s, c.d))
		}
	}
	f := PongFields(9, 4000)
	if f.Sport != 0 || f.Dport != 4000 || f.Sequence != 9 || f.Len != 0 {
		t.Errorf("pong %+v", f)
	}
}

// Decoding and encoding headers is on every message's path: no allocation.
func TestHeaderAllocs(t *testing.T) {
	buf := make([]byte, HeaderLen)
	f := Fields{Sequence: 1, Len: 64, Sport: 1, Dport: 2}
	var sink uint64
	n := testing.AllocsPerRun(100, func() {
		h, _ := ParseHeader(buf)
		h.Encode(&f)
		_ = h.AddExt(NPathsExt(1))
		h.SetChecksum()
		for it := h.Exts(); it.Next(); {
			sink += uint64(it.Ext().Type)
		}
		g := h.Decode()
		sink += uint64(g.Sequence) + uint64(h.Len())
		if !h.ChecksumOK() {
			sink++
		}
		clear(h.ExtArea())
	})
	if n != 0 {
		t.Errorf("%v allocs per header encode/decode", n)
	}
	_ = sink
}

func BenchmarkHeaderEncodeDecode(b *testing.B) {
	b.ReportAllocs()
	buf := make(Header, HeaderLen)
	f := Fields{Sequence: 1, Len: 64, Sport: 1, Dport: 2}
	var sink uint64
	for i := 0; b.Loop(); i++ {
		f.Sequence = Seq(i)
		buf.Encode(&f)
		h, _ := ParseHeader(buf)
		sink += uint64(h.Sequence()) + uint64(h.Len()) + uint64(h.Sport())
	}
	_ = sink
}

func BenchmarkChecksum(b *testing.B) {
	b.ReportAllocs()
	h := make(Header, HeaderLen)
	h.Encode(&Fields{Sequence: 1, Len: 64})
	for b.Loop() {
		h.SetChecksum()
	}
}

// The word-wise checksum against the RFC 1071 sum of 16-bit words, on
// headers whose sums carry at every width.
func TestChecksumMatchesWordSum(t *testing.T) {
	ref := func(h Header) uint16 {
		var sum uint32
		for i := 0; i < HeaderLen; i += 2 {
			sum += uint32(h[i])<<8 | uint32(h[i+1])
		}
		for sum>>16 != 0 {
			sum = sum&0xffff + sum>>16
		}
		return ^uint16(sum)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	h := make(Header, HeaderLen)
	for i := range 20000 {
		switch i % 4 {
		case 0: // all ones, all zeros and mixes: the carry extremes
			for j := range h {
				h[j] = [3]byte{0xff, 0, 0xfe}[(i/4+j)%3]
			}
		default:
			for j := range h {
				h[j] = byte(rng.Uint32())
			}
		}
		if got, want := h.checksum(), ref(h); got != want {
			t.Fatalf("header % x: checksum %#04x, want %#04x", []byte(h), got, want)
		}
		h.SetChecksum()
		if !h.ChecksumOK() {
			t.Fatalf("header % x: own checksum not valid", []byte(h))
		}
	}
	for j := range h {
		h[j] = 0xff
	}
	if got, want := h.checksum(), ref(h); got != want {
		t.Fatalf("all ones: checksum %#04x, want %#04x", got, want)
	}
}
