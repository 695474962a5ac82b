package iwarp

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestTermCauseParts(t *testing.T) {
	for c := range termCauseNames {
		if MakeTermCause(c.Layer(), c.EType(), c.Code()) != c {
			t.Errorf("%v does not round-trip", c)
		}
	}
	if len(termCauseNames) != 34 {
		t.Errorf("%d named causes, want every code of RFC 5040/5041/5044/6581 (34)", len(termCauseNames))
	}
	c := MakeTermCause(TermLayerDDP, TermETypeDDPUntagged, 0x02)
	if c != TermDDPUntaggedNoBuffer || c.Layer() != TermLayerDDP || c.EType() != TermETypeDDPUntagged || c.Code() != 2 {
		t.Errorf("MakeTermCause = %#04x", uint16(c))
	}
	if MakeTermCause(TermLayerLLP, TermETypeMPA, 0x02) != TermLLPCRC {
		t.Error("LLP CRC")
	}
	if TermLLPCRC.String() != "MPA CRC error" || MakeTermCause(3, 4, 0x55).String() != "layer 3 etype 4 code 0x55" {
		t.Errorf("String: %q %q", TermLLPCRC, MakeTermCause(3, 4, 0x55))
	}
}

// siw's attach rules (siw_send_terminate), one case per branch.
func TestNewTerminateAttachRules(t *testing.T) {
	send := sendHeader(OpSend, true, 3, 0, 0)
	send.SetULPDULength(18 + 100)
	write := taggedHeader(OpRDMAWrite, false, 0x1234, 0x1000)
	write.SetULPDULength(14 + 64)
	rreq := readRequestHeader(ReadRequestFields{MSN: 1, SinkSTag: 7, Size: 64, SrcSTag: 9})

	withSegLen := func(h Header, n int) []byte {
		b := bytes.Clone(h)
		Header(b).SetULPDULength(n)
		return b
	}
	for _, tc := range []struct {
		name    string
		cause   TermCause
		hdr     Header
		m, d, r bool
		att     []byte
	}{
		{"LLP CRC", TermLLPCRC, send, false, false, false, nil},
		{"RDMAP catastrophic", TermRDMAPCatastrophicUnspecified, send, false, false, false, nil},
		{"RDMAP version", TermRDMAPVersion, send, false, false, false, nil},
		{"RDMAP opcode", TermRDMAPOpcode, write, false, false, false, nil},
		{"DDP tagged version", TermDDPTaggedVersion, write, false, false, false, nil},
		{"DDP untagged version", TermDDPUntaggedVersion, send, false, false, false, nil},
		{"DDP invalid STag", TermDDPTaggedInvalidSTag, write, true, true, false, withSegLen(write, 64)},
		{"DDP catastrophic", TermDDPCatastrophic, write, true, true, false, withSegLen(write, 64)},
		{"DDP no buffer", TermDDPUntaggedNoBuffer, send, true, true, false, withSegLen(send, 100)},
		{"RDMAP protection, read request", TermRDMAPAccessRights, rreq, true, true, true, withSegLen(rreq, 0)},
		{"RDMAP protection, send", TermRDMAPProtCannotInvalidate, send, true, true, true, withSegLen(send, 100)},
		{"RDMAP operation, stream", TermRDMAPCatastrophicStream, rreq, true, true, false, withSegLen(rreq[:20], 0)},
		{"RDMAP operation, tagged", TermRDMAPOpUnspecified, write, true, true, false, withSegLen(write, 64)},
		{"header too short", TermDDPUntaggedNoBuffer, send[:10], false, false, false, nil},
		{"no header", TermDDPUntaggedNoBuffer, nil, false, false, false, nil},
	} {
		term := NewTerminate(tc.cause, tc.hdr)
		if term.Cause != tc.cause || term.MSN != 1 || term.M != tc.m || term.D != tc.d || term.R != tc.r ||
			!bytes.Equal(term.Attached, tc.att) {
			t.Errorf("%s: got %+v\nwant M %v D %v R %v % x", tc.name, term, tc.m, tc.d, tc.r, tc.att)
			continue
		}
		if len(tc.hdr) >= 4 && tc.hdr.ULPDULength() == 0 {
			t.Errorf("%s: NewTerminate modified the offending header", tc.name)
		}

		b := term.Append(nil)
		if len(b) != term.Len() || len(b) != TerminateHeaderLen+len(tc.att) {
			t.Errorf("%s: Append %d bytes, Len %d", tc.name, len(b), term.Len())
		}
		if _, n, err := CheckHeader(b); err != nil || n != TerminateHeaderLen || Header(b).ULPDULength() != len(b)-2 {
			t.Errorf("%s: encoded Terminate fails CheckHeader: %v", tc.name, err)
		}
		got, err := ParseTerminate(b)
		if err != nil {
			t.Errorf("%s: ParseTerminate: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, term) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", tc.name, got, term)
		}
		off, ok := got.Offending()
		if ok != tc.d {
			t.Errorf("%s: Offending ok %v", tc.name, ok)
		}
		if ok && (off.Opcode() != tc.hdr.Opcode() || off.ULPDULength() != tc.hdr.PayloadLen()) {
			t.Errorf("%s: Offending % x", tc.name, []byte(off))
		}
	}
}

// A Terminate as siw sends it for a CRC error: 24 bytes, no headers.
func TestTerminateWireBytes(t *testing.T) {
	term := NewTerminate(TermLLPCRC, nil)
	want := unhex(t, "0016 4147 00000000 00000002 00000001 00000000 2002 0000")
	if got := term.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	h := TerminateHeader(want)
	if h.Cause() != TermLLPCRC || h.M() || h.D() || h.R() {
		t.Fatal("accessors")
	}
	h = TerminateHeader(bytes.Clone(want))
	h.SetFlags(true, true, true)
	h.SetCause(TermRDMAPAccessRights)
	if !bytes.Equal(h[20:], unhex(t, "0102 e000")) {
		t.Fatalf("control word % x", []byte(h[20:]))
	}
}

func TestParseTerminateErrors(t *testing.T) {
	offending := sendHeader(OpSend, true, 1, 0, 0)
	offending.SetULPDULength(18 + 5)
	good := NewTerminate(TermDDPUntaggedNoBuffer, offending).Append(nil)
	if len(good) != TerminateHeaderLen+UntaggedHeaderLen {
		t.Fatalf("Terminate of %d bytes", len(good))
	}
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for name, b := range map[string][]byte{
		"short":         good[:23],
		"cut attached":  good[:len(good)-1],
		"not terminate": mutate(func(b []byte) { b[3] = 0x43 }),
		"QN 0":          mutate(func(b []byte) { b[11] = 0 }),
		"MO 1":          mutate(func(b []byte) { b[19] = 1 }),
	} {
		if _, err := ParseTerminate(b); !errors.Is(err, ErrMalformedTerminate) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// D set with a too short attachment: parses, but Offending says no.
	b := mutate(func(b []byte) {})
	b = b[:TerminateHeaderLen+8]
	Header(b).SetULPDULength(len(b) - 2)
	term, err := ParseTerminate(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := term.Offending(); ok {
		t.Error("Offending on an 8-byte attachment")
	}
}
