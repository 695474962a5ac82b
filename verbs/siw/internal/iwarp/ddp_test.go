package iwarp

import (
	"bytes"
	"errors"
	"testing"
)

func TestCtrlWireValues(t *testing.T) {
	// docs/WIRE.md, I3: byte 0 is C1/81 tagged, 41/01 untagged; byte 1
	// is 0x40 | opcode.
	for _, tc := range []struct {
		op   Opcode
		last bool
		want Ctrl
	}{
		{OpRDMAWrite, true, 0xC140},
		{OpRDMAWrite, false, 0x8140},
		{OpRDMAReadRequest, true, 0x4141},
		{OpRDMAReadResponse, true, 0xC142},
		{OpSend, true, 0x4143},
		{OpSend, false, 0x0143},
		{OpSendInv, true, 0x4144},
		{OpSendSE, true, 0x4145},
		{OpSendSEInv, true, 0x4146},
		{OpTerminate, true, 0x4147},
	} {
		c := MakeCtrl(tc.op, tc.last)
		if c != tc.want {
			t.Errorf("MakeCtrl(%v, %v) = %#04x, want %#04x", tc.op, tc.last, c, tc.want)
		}
		if c.Opcode() != tc.op || c.Last() != tc.last || c.Tagged() != tc.op.Tagged() ||
			c.DDPVersion() != DDPVersion || c.RDMAPVersion() != RDMAPVersion {
			t.Errorf("%#04x decodes wrongly", c)
		}
	}
}

func TestOpcodeTable(t *testing.T) {
	for op := Opcode(0); op < 16; op++ {
		if op.Valid() != (op <= 7) {
			t.Errorf("%d.Valid() = %v", op, op.Valid())
		}
		if !op.Valid() {
			if op.HeaderLen() != 0 || op.Tagged() || op.String() == "" {
				t.Errorf("invalid opcode %d: len %d tagged %v %q", op, op.HeaderLen(), op.Tagged(), op)
			}
			continue
		}
		want := UntaggedHeaderLen
		switch op {
		case OpRDMAWrite, OpRDMAReadResponse:
			want = TaggedHeaderLen
		case OpRDMAReadRequest:
			want = ReadRequestHeaderLen
		case OpTerminate:
			want = TerminateHeaderLen
		}
		if op.HeaderLen() != want || op.HeaderLen()%4 != 0 {
			t.Errorf("%v.HeaderLen() = %d, want %d", op, op.HeaderLen(), want)
		}
	}
	if OpRDMAReadRequest.QN() != QNReadRequest || OpSendSEInv.QN() != QNSend || OpTerminate.QN() != QNTerminate {
		t.Error("queue numbers")
	}
	if OpSend.String() != "Send" || Opcode(12).String() != "opcode(12)" {
		t.Errorf("names %q %q", OpSend, Opcode(12))
	}
}

func TestTaggedHeaderRoundTrip(t *testing.T) {
	h := taggedHeader(OpRDMAReadResponse, true, 0x13c3e400, 0x000055f84cd4ff40)
	h.SetULPDULength(0x4E)
	want := unhex(t, "004e c142 13c3e400 000055f84cd4ff40")
	if !bytes.Equal(h, want) {
		t.Fatalf("got % x\nwant % x", []byte(h), want)
	}
	th := TaggedHeader(h)
	if th.STag() != 0x13c3e400 || th.TO() != 0x55f84cd4ff40 || h.PayloadLen() != 64 || !h.Last() || !h.Tagged() {
		t.Fatalf("accessors: %#x %#x %d", th.STag(), th.TO(), h.PayloadLen())
	}
	if STag(0x13c3e4a7).Index() != 0x13c3e4 || STag(0x13c3e4a7).Key() != 0xa7 {
		t.Fatal("STag index/key")
	}
}

func TestUntaggedHeaderRoundTrip(t *testing.T) {
	h := sendHeader(OpSendSEInv, false, 0xFFFFFFFF, 0x12345678, 0xAABBCCDD)
	h.SetULPDULength(18 + 100)
	want := unhex(t, "0076 0146 aabbccdd 00000000 ffffffff 12345678")
	if !bytes.Equal(h, want) {
		t.Fatalf("got % x\nwant % x", []byte(h), want)
	}
	u := UntaggedHeader(h)
	if u.InvalidateSTag() != 0xAABBCCDD || u.QN() != QNSend || u.MSN() != 0xFFFFFFFF || u.MO() != 0x12345678 ||
		h.Opcode() != OpSendSEInv || h.Last() || h.PayloadLen() != 100 {
		t.Fatal("accessors")
	}
}

func TestMSN(t *testing.T) {
	if MSN(0xFFFFFFFF).Next() != 0 {
		t.Error("MSN wrap")
	}
	if !MSN(0xFFFFFFF0).LessThan(5) || MSN(5).LessThan(0xFFFFFFF0) || MSN(3).LessThan(3) {
		t.Error("serial comparison")
	}
}

func TestReadRequestHeaderRoundTrip(t *testing.T) {
	f := ReadRequestFields{MSN: 1, SinkSTag: 0x13c3e400, SinkTO: 0x000055f84cd4ff40, Size: 64,
		SrcSTag: 0x5ab65400, SrcTO: 0x000055f4e4d6d570}
	h := readRequestHeader(f)
	// The 48 header bytes of the rping server's Read Request (section 7).
	want := unhex(t, "002e 4141 00000000 00000001 00000001 00000000 13c3e400 000055f84cd4ff40 00000040 5ab65400 000055f4e4d6d570")
	if !bytes.Equal(h, want) {
		t.Fatalf("got % x\nwant % x", []byte(h), want)
	}
	r := ReadRequestHeader(h)
	got := ReadRequestFields{MSN: UntaggedHeader(h).MSN(), SinkSTag: r.SinkSTag(), SinkTO: r.SinkTO(), Size: r.Size(),
		SrcSTag: r.SrcSTag(), SrcTO: r.SrcTO()}
	if got != f {
		t.Fatalf("got %+v want %+v", got, f)
	}
	if op, n, err := CheckHeader(h); err != nil || op != OpRDMAReadRequest || n != 48 {
		t.Fatalf("CheckHeader %v %d %v", op, n, err)
	}
}

func TestCheckHeader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     string
		op    Opcode
		n     int
		kind  error
		cause TermCause
	}{
		{"send", "0012 4143", OpSend, 20, nil, 0},
		{"send not last", "0100 0143", OpSend, 20, nil, 0},
		{"zero-length write", "000e c140", OpRDMAWrite, 16, nil, 0},
		{"read response", "004e c142", OpRDMAReadResponse, 16, nil, 0},
		{"read request", "002e 4141", OpRDMAReadRequest, 48, nil, 0},
		{"terminate", "0016 4147", OpTerminate, 24, nil, 0},
		{"terminate with headers", "002a 4147", OpTerminate, 24, nil, 0},
		{"reserved bits ignored", "0012 7d73", OpSend, 20, nil, 0},
		{"DDP version 0 tagged", "000e c040", 0, 0, ErrDDPVersion, TermDDPTaggedVersion},
		{"DDP version 2 untagged", "0012 4243", 0, 0, ErrDDPVersion, TermDDPUntaggedVersion},
		{"RDMAP version 0", "0012 4103", 0, 0, ErrRDMAPVersion, TermRDMAPVersion},
		{"RDMAP version 3", "0012 41c3", 0, 0, ErrRDMAPVersion, TermRDMAPVersion},
		{"opcode 8", "0012 4148", 0, 0, ErrOpcode, TermRDMAPOpcode},
		{"opcode 15", "000e c14f", 0, 0, ErrOpcode, TermRDMAPOpcode},
		{"tagged send", "0012 c143", 0, 0, ErrTaggedMismatch, TermRDMAPOpcode},
		{"untagged write", "000e 4140", 0, 0, ErrTaggedMismatch, TermRDMAPOpcode},
		{"send too short", "0011 4143", 0, 0, ErrULPDULength, TermLLPFPDUStart},
		{"write too short", "000d c140", 0, 0, ErrULPDULength, TermLLPFPDUStart},
		{"terminate too short", "0015 4147", 0, 0, ErrULPDULength, TermLLPFPDUStart},
		{"read request with payload", "002f 4141", 0, 0, ErrReadRequestLength, TermRDMAPCatastrophicStream},
		{"read request short", "002d 4141", 0, 0, ErrULPDULength, TermLLPFPDUStart},
	} {
		op, n, err := CheckHeader(unhex(t, tc.b))
		if tc.kind == nil {
			if err != nil || op != tc.op || n != tc.n {
				t.Errorf("%s: %v %d %v, want %v %d", tc.name, op, n, err, tc.op, tc.n)
			}
			continue
		}
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.kind)
			continue
		}
		if c, ok := CauseOf(err); !ok || c != tc.cause {
			t.Errorf("%s: cause %v, want %v", tc.name, c, tc.cause)
		}
	}
}
