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
	for _, o := range []op{opHello, opHelloReply, opRequest, opAck} {
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
