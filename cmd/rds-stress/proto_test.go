package main

import "testing"

func TestHdrRoundTrip(t *testing.T) {
	b := make([]byte, 100)
	stressHdr(b).encode(opRequest, 7, 1<<40, -5, 1000)
	h, err := parseHdr(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Op() != opRequest || h.Task() != 7 || h.Seq() != 1<<40 || h.Stamp() != -5 || h.Reply() != 1000 || h.Status() != 0 {
		t.Fatalf("decoded %v %d %d %d %d", h.Op(), h.Task(), h.Seq(), h.Stamp(), h.Reply())
	}
	h.SetRDMA(65536, true)
	if n, w := h.RDMA(); n != 65536 || !w {
		t.Errorf("RDMA() = %d, %v", n, w)
	}
	h.SetRDMA(4096, false)
	if n, w := h.RDMA(); n != 4096 || w {
		t.Errorf("RDMA() = %d, %v", n, w)
	}
	for _, c := range []struct {
		name string
		mod  func([]byte) []byte
		want error
	}{
		{"short", func(b []byte) []byte { return b[:hdrLen-1] }, errShort},
		{"magic", func(b []byte) []byte { b[0]++; return b }, errMagic},
		{"version", func(b []byte) []byte { b[offVersion] = 9; return b }, errVersion},
		{"op", func(b []byte) []byte { b[offOp] = 0; return b }, errOp},
		{"reply small", func(b []byte) []byte { stressHdr(b).encode(opAck, 0, 0, 0, hdrLen-1); return b }, errReply},
		{"reply big", func(b []byte) []byte { stressHdr(b).encode(opAck, 0, 0, 0, maxMsg+1); return b }, errReply},
	} {
		bb := make([]byte, 64)
		stressHdr(bb).encode(opRequest, 1, 2, 3, hdrLen)
		if _, err := parseHdr(c.mod(bb)); err != c.want {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzParseHdr: no input panics the parser, and what it accepts
// re-encodes to the same bytes.
func FuzzParseHdr(f *testing.F) {
	for _, o := range []op{opHello, opHelloReply, opRequest, opAck, opBye} {
		b := make([]byte, hdrLen+8)
		stressHdr(b).encode(o, 3, 42, 123456789, 4096)
		f.Add(b)
	}
	f.Add([]byte("RDSt"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := parseHdr(b)
		if err != nil {
			return
		}
		again := make([]byte, hdrLen)
		stressHdr(again).encode(h.Op(), h.Task(), h.Seq(), h.Stamp(), h.Reply())
		stressHdr(again).SetStatus(h.Status())
		if string(again) != string(h) {
			t.Fatalf("re-encoded %x, parsed %x", again, []byte(h))
		}
	})
}

// The status field of a request carries the RDMA length and direction,
// the -v bit and, in an answer, the damaged bit, each without disturbing
// the others.
func TestHdrFlags(t *testing.T) {
	h := stressHdr(make([]byte, hdrLen))
	h.encode(opRequest, 0, 5, 0, hdrLen)
	h.setFlag(verifyBit)
	h.SetRDMA(1<<20, true)
	h.setFlag(corruptBit)
	if n, w := h.RDMA(); n != 1<<20 || !w || !h.flag(verifyBit) || !h.flag(corruptBit) {
		t.Errorf("RDMA %d %v, verify %v, corrupt %v", n, w, h.flag(verifyBit), h.flag(corruptBit))
	}
	h.SetRDMA(7, false)
	if n, w := h.RDMA(); n != 7 || w || !h.flag(verifyBit) {
		t.Errorf("after SetRDMA: %d %v verify %v", n, w, h.flag(verifyBit))
	}
}

// The -v pattern differs between messages and catches any changed byte.
func TestPattern(t *testing.T) {
	b := make([]byte, 1000)
	fillPattern(b, 9)
	if off := checkPattern(b, 9); off != -1 {
		t.Fatalf("own pattern fails at %d", off)
	}
	if checkPattern(b, 10) == -1 {
		t.Error("another message's pattern passes")
	}
	b[777]++
	if off := checkPattern(b, 9); off != 777 {
		t.Errorf("damage found at %d, want 777", off)
	}
}

// -M 0 alternates READ and WRITE; 1 and 2 keep to one.
func TestRDMAModeWrites(t *testing.T) {
	for _, c := range []struct {
		m    rdmaMode
		want [4]bool
	}{
		{rdmaBoth, [4]bool{false, true, false, true}},
		{rdmaRead, [4]bool{}},
		{rdmaWrite, [4]bool{true, true, true, true}},
	} {
		for seq, w := range c.want {
			if c.m.writes(uint64(seq)) != w {
				t.Errorf("%v seq %d: writes %v", c.m, seq, !w)
			}
		}
	}
}

func TestHelloRoundTrip(t *testing.T) {
	p := helloParams{ack: 64, depth: 8, oneway: true, verify: true, sizes: []int{32, 1 << 20, 4096}}
	got, err := parseHello(p.append(nil))
	if err != nil || got.ack != 64 || got.depth != 8 || !got.oneway || !got.verify || len(got.sizes) != 3 || got.sizes[1] != 1<<20 {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []helloParams{
		{ack: 31, depth: 1, sizes: []int{64}}, {ack: 64, depth: 0, sizes: []int{64}}, {ack: 64, depth: 4097, sizes: []int{64}},
		{ack: 64, depth: 1}, {ack: 64, depth: 1, sizes: []int{maxMsg + 1}},
	} {
		if _, err := parseHello(bad.append(nil)); err != errHello {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := parseHello(p.append(nil)[:20]); err != errHello {
		t.Errorf("truncated: %v", err)
	}
}

// FuzzParseHello: no input panics the hello parser, and what it accepts
// re-encodes to what it read.
func FuzzParseHello(f *testing.F) {
	f.Add(helloParams{ack: 64, depth: 8, sizes: []int{64, 4096}}.append(nil))
	f.Add([]byte{0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 3, 0, 1, 0, 0, 0, 0, 0, 32})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseHello(b)
		if err != nil {
			return
		}
		again := p.append(nil)
		if string(again[:12]) != string(b[:12]) || string(again[16:]) != string(b[16:len(again)]) {
			t.Fatalf("re-encoded %x from %x", again, b)
		}
	})
}
