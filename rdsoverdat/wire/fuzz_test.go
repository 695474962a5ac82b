package wire

import "testing"

// FuzzHeader feeds arbitrary bytes to the header parser, the extension
// iterator and AddExt: no input may panic, and whatever parses must
// re-encode to the same bytes.
func FuzzHeader(f *testing.F) {
	for _, s := range []string{capCongMap, capProbe, capData} {
		f.Add(unhex(f, s))
	}
	seed := make(Header, HeaderLen)
	seed.Encode(&Fields{Sequence: 1, Sport: ProbePort})
	_ = seed.AddExt(NPathsExt(1))
	_ = seed.AddExt(GenNumExt(42))
	_ = seed.AddExt(SportIdxExt())
	f.Add([]byte(seed))
	seed2 := make(Header, HeaderLen)
	seed2.Encode(&Fields{Sequence: 9, Ack: 8, Len: 4096, Sport: 4000, Dport: 5000, Credit: 3})
	_ = seed2.AddExt(RDMADestExt(1, 2))
	_ = seed2.AddExt(RDMAExt(3))
	seed2.SetChecksum()
	f.Add([]byte(seed2))
	seed3 := make(Header, HeaderLen)
	seed3.Encode(&Fields{Sequence: 10, Len: 0, Sport: 4000, Dport: 5000})
	_ = seed3.AddExt(RDMADestExt(4, 0))
	_ = seed3.AddExt(RDMAAddrExt(0xc000123456))
	seed3.SetChecksum()
	f.Add([]byte(seed3))
	f.Add([]byte{1, 2, 3})

	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			if len(b) >= HeaderLen {
				t.Fatalf("%d bytes refused: %v", len(b), err)
			}
			return
		}
		fl := h.Decode()
		again := make(Header, HeaderLen)
		again.Encode(&fl)
		copy(again[PaddingOffset:CsumOffset+2], h[PaddingOffset:CsumOffset+2])
		if string(again) != string(h) {
			t.Fatalf("re-encode differs:\n%x\n%x", []byte(again), []byte(h))
		}
		_ = h.ChecksumOK()
		n := 0
		for it := h.Exts(); it.Next(); n++ {
			e := it.Ext()
			if e.Len() > ExtSpace || len(e.Append(nil)) != e.Len() {
				t.Fatalf("ext %v len %d", e.Type, e.Len())
			}
			if n > ExtSpace {
				t.Fatal("iterator does not terminate")
			}
		}
		cp := make(Header, HeaderLen)
		copy(cp, h)
		_ = cp.AddExt(NPathsExt(1))
	})
}

// FuzzExt checks the parse/append/len trio on arbitrary extension bytes.
func FuzzExt(f *testing.F) {
	for _, e := range []Ext{NPathsExt(8), GenNumExt(7), SportIdxExt(), RDMAExt(1), RDMADestExt(2, 3), RDMABytesExt(4, RDMAReadBytes)} {
		f.Add(e.Append(nil))
	}
	f.Add([]byte{9, 1, 2})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, n, err := ParseExt(b)
		if err != nil {
			return
		}
		if n != e.Len() || n > len(b) {
			t.Fatalf("n %d Len %d len(b) %d", n, e.Len(), len(b))
		}
		if enc := e.Append(nil); string(enc) != string(b[:n]) {
			t.Fatalf("append %x != input %x", enc, b[:n])
		}
	})
}

// FuzzCongMap: a received map of any content yields a mask without panics
// and Uncongested(m, m) is always 0.
func FuzzCongMap(f *testing.F) {
	var m CongMap
	m.Set(4000)
	f.Add(m[:], uint16(4000))
	f.Fuzz(func(t *testing.T, b []byte, p uint16) {
		var a, c CongMap
		copy(a[:], b)
		c = a
		if Uncongested(&a, &c) != 0 {
			t.Fatal("identical maps report uncongestion")
		}
		c.Clear(Port(p))
		if a.Test(Port(p)) && Uncongested(&a, &c)&CongMonitorMask(Port(p)) == 0 {
			t.Fatal("cleared port missing from the mask")
		}
	})
}
