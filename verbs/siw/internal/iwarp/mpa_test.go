package iwarp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// The 24-byte MPA Request siw sends for rping (docs/WIRE.md, I5).
const siwRpingRequest = "4d504120494420526571204672616d65 | 10 02 | 00 04 | 00 01 | 00 01"

// The Reply a Go server sends to it.
const goRpingReply = "4d504120494420526570204672616d65 | 10 02 | 00 04 | 00 01 | 00 01"

func TestMPASiwRpingRequest(t *testing.T) {
	b := unhex(t, siwRpingRequest)
	f, n, err := ParseMPA(b)
	if err != nil || n != 24 {
		t.Fatalf("ParseMPA = n %d, %v", n, err)
	}
	want := MPAFrame{Enhanced: true, Rev: 2, IRD: 1, ORD: 1}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %+v, want %+v", f, want)
	}
	if got := want.Append(nil); !bytes.Equal(got, b) {
		t.Fatalf("Append\n got % x\nwant % x", got, b)
	}

	reply := MPAFrame{Reply: true, Enhanced: true, Rev: f.Rev, IRD: f.ORD, ORD: f.IRD}
	if err := reply.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := reply.Append(nil), unhex(t, goRpingReply); !bytes.Equal(got, want) {
		t.Fatalf("reply\n got % x\nwant % x", got, want)
	}
	reply.CRC = true
	if got := reply.Append(nil); got[16] != 0x50 {
		t.Fatalf("reply with CRC flags %#x, want 0x50", got[16])
	}
}

func TestMPAHeaderAccessors(t *testing.T) {
	h := make(MPAHeader, MPAHeaderLen)
	h.SetKey(false)
	h.SetFlags(MPAFlagCRC | MPAFlagEnhanced)
	h.SetRev(2)
	h.SetPDLength(300)
	if !h.IsRequest() || h.IsReply() || h.Flags() != 0x50 || h.Rev() != 2 || h.PDLength() != 300 {
		t.Fatalf("request header accessors: % x", []byte(h))
	}
	h.SetKey(true)
	if h.IsRequest() || !h.IsReply() {
		t.Fatalf("reply key: % x", []byte(h))
	}
}

func TestMPARoundTrip(t *testing.T) {
	pd := bytes.Repeat([]byte{0xA5}, MaxUserPrivateData)
	for _, f := range []MPAFrame{
		{Rev: 1},
		{Rev: 1, CRC: true, PrivateData: []byte("hello")},
		{Rev: 0, Markers: true},
		{Rev: 2, PrivateData: []byte("rev 2, not enhanced: no block")},
		{Rev: 2, Enhanced: true, IRD: 128, ORD: 128},
		{Rev: 2, Enhanced: true, IRD: IRDORDMask, ORD: 1, P2P: true, RTR: RTRZeroWrite | RTRZeroRead, PrivateData: pd},
		{Rev: 2, Enhanced: true, P2P: true, RTR: RTRZeroSend},
		{Reply: true, Reject: true, Rev: 2, Enhanced: true, PrivateData: []byte("go away")},
		{Reply: true, Rev: 1, Enhanced: true, PrivateData: []byte("enhanced bit on rev 1 carries no block")},
	} {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: Validate: %v", f, err)
			continue
		}
		b := f.Append([]byte("prefix"))
		if !bytes.HasPrefix(b, []byte("prefix")) || len(b)-6 != f.Len() {
			t.Errorf("%+v: Append wrote %d bytes, Len %d", f, len(b)-6, f.Len())
		}
		b = append(b, "FPDU bytes follow"...)
		got, n, err := ParseMPA(b[6:])
		if err != nil || n != f.Len() {
			t.Errorf("%+v: ParseMPA n %d err %v", f, n, err)
			continue
		}
		if !reflect.DeepEqual(got, f) {
			t.Errorf("round trip\n got %+v\nwant %+v", got, f)
		}
	}
}

func TestMPAValidate(t *testing.T) {
	for name, f := range map[string]MPAFrame{
		"rev 3":          {Rev: 3},
		"IRD too large":  {Rev: 2, Enhanced: true, IRD: 0x4000},
		"ORD too large":  {Rev: 2, Enhanced: true, ORD: 0xFFFF},
		"reject on req":  {Rev: 2, Reject: true},
		"PD too long":    {Rev: 2, Enhanced: true, PrivateData: make([]byte, MaxUserPrivateData+1)},
		"PD v1 too long": {Rev: 1, PrivateData: make([]byte, MaxPrivateData+1)},
	} {
		if err := f.Validate(); !errors.Is(err, ErrInvalidMPA) {
			t.Errorf("%s: Validate = %v, want ErrInvalidMPA", name, err)
		}
	}
	ok := MPAFrame{Rev: 1, PrivateData: make([]byte, MaxPrivateData)}
	if err := ok.Validate(); err != nil {
		t.Errorf("256 bytes on rev 1: %v", err)
	}
}

func TestParseMPAErrors(t *testing.T) {
	good := (&MPAFrame{Rev: 2, Enhanced: true, IRD: 1, ORD: 1, PrivateData: []byte("abc")}).Append(nil)
	mutate := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMPAIncomplete},
		{"header only", good[:19], ErrMPAIncomplete},
		{"private data cut", good[:len(good)-1], ErrMPAIncomplete},
		{"wrong key", mutate(func(b []byte) { b[10] = 'X' }), ErrMPAKey},
		{"rev 3", mutate(func(b []byte) { b[17] = 3 }), ErrMPARev},
		{"rev 255", mutate(func(b []byte) { b[17] = 255 }), ErrMPARev},
		{"PD_Length 257", mutate(func(b []byte) { b[18], b[19] = 0x01, 0x01 }), ErrMPAPrivateDataLen},
		{"PD_Length 65535", mutate(func(b []byte) { b[18], b[19] = 0xFF, 0xFF }), ErrMPAPrivateDataLen},
		// siw drops a bad revision or length silently and answers only a
		// bad key with a Terminate, so those are found first.
		{"rev 3 and wrong key", mutate(func(b []byte) { b[17], b[10] = 3, 'X' }), ErrMPARev},
		{"PD_Length 257 and wrong key", mutate(func(b []byte) { b[18], b[19], b[10] = 0x01, 0x01, 'X' }), ErrMPAPrivateDataLen},
		{"enhanced PD_Length 3", mutate(func(b []byte) { b[19] = 3 }), ErrMPAIRDORD},
		{"enhanced PD_Length 0", mutate(func(b []byte) { b[19] = 0 }), ErrMPAIRDORD},
	} {
		_, _, err := ParseMPA(tc.b)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
			continue
		}
		if tc.want == ErrMPAIncomplete {
			if _, ok := CauseOf(err); ok {
				t.Errorf("%s: incomplete input must not carry a Terminate cause", tc.name)
			}
			continue
		}
		if c, ok := CauseOf(err); !ok || c != TermLLPInvalidMPA {
			t.Errorf("%s: cause %v %v, want %v", tc.name, c, ok, TermLLPInvalidMPA)
		}
	}

	// Rev 0..2 are accepted, as siw does; rev 2 without the enhanced flag
	// and short private data is fine.
	for rev := byte(0); rev <= 2; rev++ {
		b := mutate(func(b []byte) { b[16], b[17], b[19] = 0, rev, 0 })
		if _, _, err := ParseMPA(b[:20]); err != nil {
			t.Errorf("rev %d without block: %v", rev, err)
		}
	}
	// A Reply with the siw GSO flag parses; the flag is ignored.
	b := mutate(func(b []byte) { b[16] |= byte(MPAFlagSiwGSO) })
	if f, _, err := ParseMPA(b); err != nil || f.IRD != 1 {
		t.Errorf("GSO flag: %+v %v", f, err)
	}
}

// ReadMPA must not read a byte beyond the frame: siw as responder may send
// FPDUs right behind its Reply.
func TestReadMPAExact(t *testing.T) {
	frame := (&MPAFrame{Reply: true, Rev: 2, Enhanced: true, IRD: 4, ORD: 8, PrivateData: []byte("pd")}).Append(nil)
	fpdu := encodeFrames(t, false, testFrame{sendHeader(OpSend, true, 1, 0, 0), []byte("first")})
	stream := append(bytes.Clone(frame), fpdu...)
	for _, name := range []string{"whole", "bytewise"} {
		br := bytes.NewReader(stream)
		var r io.Reader = br
		if name == "bytewise" {
			r = byteReader{br}
		}
		f, err := ReadMPA(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !f.Reply || f.IRD != 4 || f.ORD != 8 || string(f.PrivateData) != "pd" {
			t.Fatalf("%s: %+v", name, f)
		}
		if br.Len() != len(fpdu) {
			t.Fatalf("%s: ReadMPA left %d bytes, want %d", name, br.Len(), len(fpdu))
		}
	}

	if _, err := ReadMPA(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	if _, err := ReadMPA(bytes.NewReader(frame[:10])); err != io.ErrUnexpectedEOF {
		t.Errorf("cut header: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadMPA(bytes.NewReader(frame[:len(frame)-1])); err != io.ErrUnexpectedEOF {
		t.Errorf("cut private data: %v, want io.ErrUnexpectedEOF", err)
	}
	// An invalid header is refused before its private data is read.
	bad := bytes.Clone(frame)
	bad[18], bad[19] = 0x10, 0x00
	br := bytes.NewReader(bad)
	if _, err := ReadMPA(br); !errors.Is(err, ErrMPAPrivateDataLen) {
		t.Errorf("PD_Length 4096: %v", err)
	}
	if br.Len() != len(bad)-MPAHeaderLen {
		t.Errorf("read %d bytes of a refused frame", len(bad)-br.Len())
	}
}

// The initiator may get the Reply and the first FPDUs in one TCP read;
// FrameReader.ReadMPA keeps the FPDU bytes for Next.
func TestFrameReaderReadMPAThenFrames(t *testing.T) {
	frame := (&MPAFrame{Reply: true, Rev: 2, Enhanced: true, CRC: true, IRD: 1, ORD: 1}).Append(nil)
	fpdus := encodeFrames(t, true,
		testFrame{sendHeader(OpSend, true, 1, 0, 0), []byte("one")},
		testFrame{sendHeader(OpSend, true, 2, 0, 0), []byte("two")})
	stream := append(frame, fpdus...)
	for _, r := range []io.Reader{bytes.NewReader(stream), byteReader{bytes.NewReader(stream)}} {
		fr := NewFrameReader(r, ReaderOptions{})
		f, err := fr.ReadMPA()
		if err != nil || !f.CRC {
			t.Fatalf("ReadMPA %+v %v", f, err)
		}
		fr.SetCRC(f.CRC)
		for i, want := range []string{"one", "two"} {
			h, err := fr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if UntaggedHeader(h).MSN() != MSN(i+1) {
				t.Fatalf("frame %d MSN %d", i, UntaggedHeader(h).MSN())
			}
			got := make([]byte, h.PayloadLen())
			if _, err := fr.ReadPayload(got); err != nil || string(got) != want {
				t.Fatalf("payload %q %v", got, err)
			}
			if err := fr.Finish(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("after last frame: %v, want io.EOF", err)
		}
	}

	fr := NewFrameReader(bytes.NewReader(stream[:22]), ReaderOptions{})
	if _, err := fr.ReadMPA(); err != io.ErrUnexpectedEOF {
		t.Fatalf("cut frame: %v", err)
	}
	bad := bytes.Clone(stream)
	bad[0] = 'X'
	fr = NewFrameReader(bytes.NewReader(bad), ReaderOptions{})
	if _, err := fr.ReadMPA(); !errors.Is(err, ErrMPAKey) {
		t.Fatalf("bad key: %v", err)
	}
	if _, err := fr.Next(); !errors.Is(err, ErrMPAKey) {
		t.Fatalf("errors must be sticky, got %v", err)
	}
}
