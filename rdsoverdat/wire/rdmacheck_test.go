package wire

import (
	"errors"
	"testing"
)

func checkFrame(recs ...CheckFields) (Header, []byte) {
	h := make(Header, HeaderLen)
	EncodeRDMACheckHeader(h, len(recs), 7, 3)
	h.SetChecksum()
	b := make([]byte, len(recs)*RDMACheckLen)
	for i := range recs {
		RDMACheck(b[i*RDMACheckLen:]).Encode(&recs[i])
	}
	return h, b
}

func TestRDMACheckRoundTrip(t *testing.T) {
	recs := []CheckFields{
		{Kind: CheckRequest, Write: true, ID: 1, RKey: 0xdeadbeef, Length: 65536, Address: 0x7f0012345678},
		{Kind: CheckAnswer, Status: RDS_RDMA_REMOTE_ERROR, ID: 1},
		{Kind: CheckAnswer, Write: true, Lease: true, ID: 2, RKey: 7, Length: 100, Address: 1 << 44},
		{Kind: CheckRelease, ID: 0xffffffff},
		{Kind: CheckRevoke, RKey: 7},
		{Kind: CheckRevoked, RKey: 7},
	}
	h, b := checkFrame(recs...)
	if !IsRDMACheckFrame(h) || !h.ChecksumOK() || h.Ack() != 7 || h.Credit() != 3 {
		t.Fatalf("header %x", []byte(h))
	}
	n, err := ParseRDMAChecks(h, b)
	if err != nil || n != len(recs) {
		t.Fatalf("ParseRDMAChecks = %d, %v", n, err)
	}
	for i := range n {
		if got := RDMACheck(b[i*RDMACheckLen:]).Decode(); got != recs[i] {
			t.Errorf("record %d: %+v, want %+v", i, got, recs[i])
		}
	}
}

func TestRDMACheckMalformed(t *testing.T) {
	h, b := checkFrame(CheckFields{Kind: CheckRequest, ID: 1})
	for name, tc := range map[string]struct {
		mod  func(h Header, b []byte) []byte
		want error
	}{
		"short":        {func(h Header, b []byte) []byte { return b[:10] }, ErrCheckLen},
		"len mismatch": {func(h Header, b []byte) []byte { h.SetLen(48); return b }, ErrCheckLen},
		"empty":        {func(h Header, b []byte) []byte { h.SetLen(0); return nil }, ErrCheckLen},
		"kind 0":       {func(h Header, b []byte) []byte { b[0] = 0; return b }, ErrCheckKind},
		"kind 6":       {func(h Header, b []byte) []byte { b[0] = 6; return b }, ErrCheckKind},
		"flags":        {func(h Header, b []byte) []byte { b[1] = 0x80; return b }, ErrCheckFlags},
		"version":      {func(h Header, b []byte) []byte { h.ExtArea()[1] = 2; return b }, ErrCheckVersion},
		"no ext":       {func(h Header, b []byte) []byte { h.ExtArea()[0] = 0; return b }, ErrCheckVersion},
	} {
		hh := append(Header(nil), h...)
		bb := append([]byte(nil), b...)
		bb = tc.mod(hh, bb)
		if _, err := ParseRDMAChecks(hh, bb); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	data := make(Header, HeaderLen)
	data.Encode(&Fields{Sequence: 1, Len: 24, Sport: 1, Dport: 2})
	_ = data.AddExt(RDMACheckExt())
	if IsRDMACheckFrame(data) {
		t.Error("a message with ports is a check frame")
	}
}

// FuzzRDMAChecks: no input panics the check-frame parser, and whatever
// parses re-encodes to the same bytes.
func FuzzRDMAChecks(f *testing.F) {
	h, b := checkFrame(CheckFields{Kind: CheckRequest, Write: true, ID: 9, RKey: 5, Length: 100, Address: 1 << 40},
		CheckFields{Kind: CheckAnswer, ID: 9, Status: 1}, CheckFields{Kind: CheckRelease, ID: 3},
		CheckFields{Kind: CheckAnswer, ID: 10, Lease: true, Write: true, RKey: 5, Length: 4096, Address: 1 << 40},
		CheckFields{Kind: CheckRevoke, RKey: 5}, CheckFields{Kind: CheckRevoked, RKey: 5})
	f.Add(append([]byte(h), b...))
	h1, b1 := checkFrame(CheckFields{Kind: CheckAnswer, ID: 1})
	f.Add(append([]byte(h1), b1...))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := ParseHeader(in)
		if err != nil {
			return
		}
		_ = IsRDMACheckFrame(h)
		body := in[HeaderLen:]
		n, err := ParseRDMAChecks(h, body)
		if err != nil {
			return
		}
		for i := range n {
			c := RDMACheck(body[i*RDMACheckLen : (i+1)*RDMACheckLen])
			f := c.Decode()
			again := make(RDMACheck, RDMACheckLen)
			again.Encode(&f)
			if string(again) != string(c) {
				t.Fatalf("record %d re-encodes as %x, was %x", i, []byte(again), []byte(c))
			}
		}
	})
}
