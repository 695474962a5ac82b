package iwarp

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

// Fuzz targets for every parser, seeded from the encoders' output. The
// default `go test` runs the seeds and testdata/fuzz; `go test -fuzz
// FuzzX` explores.

func FuzzParseMPA(f *testing.F) {
	for _, fr := range []MPAFrame{
		{Enhanced: true, Rev: 2, IRD: 1, ORD: 1},
		{Reply: true, Enhanced: true, Rev: 2, CRC: true, IRD: 128, ORD: 128, P2P: true, RTR: RTRZeroWrite},
		{Reply: true, Reject: true, Rev: 1, PrivateData: []byte("rejected")},
		{Rev: 2, Enhanced: true, PrivateData: bytes.Repeat([]byte{1}, MaxUserPrivateData)},
		{Rev: 0, Markers: true},
	} {
		f.Add(fr.Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, n, err := ParseMPA(b)
		if err != nil {
			if _, ok := CauseOf(err); !ok && err != ErrMPAIncomplete {
				t.Fatalf("error without cause: %v", err)
			}
			if err != ErrMPAIncomplete {
				// A frame refused from its header alone is refused by the
				// streaming readers too, without reading private data.
				if _, err2 := ReadMPA(bytes.NewReader(b[:MPAHeaderLen])); !errors.Is(err2, errors.Unwrap(err)) {
					t.Fatalf("ParseMPA %v, ReadMPA %v", err, err2)
				}
			}
			return
		}
		if n != fr.Len() || n > len(b) || fr.Rev > MPAMaxRev || fr.PDLength() > MaxPrivateData {
			t.Fatalf("n %d, frame %+v", n, fr)
		}
		// Re-encoding reproduces the input except for ignored flag bits.
		enc := fr.Append(nil)
		want := bytes.Clone(b[:n])
		want[offMPAFlags] &^= byte(MPAFlagSiwGSO) | 0x07
		if !bytes.Equal(enc, want) {
			t.Fatalf("re-encoded\n got % x\nwant % x", enc, want)
		}
		for _, r := range []io.Reader{bytes.NewReader(b), byteReader{bytes.NewReader(b)}} {
			got, err := ReadMPA(r)
			if err != nil || !reflect.DeepEqual(got, fr) {
				t.Fatalf("ReadMPA %+v %v, want %+v", got, err, fr)
			}
		}
		frd := NewFrameReader(bytes.NewReader(b), ReaderOptions{})
		if got, err := frd.ReadMPA(); err != nil || !reflect.DeepEqual(got, fr) || frd.Buffered() != len(b)-n {
			t.Fatalf("FrameReader.ReadMPA %+v %v", got, err)
		}
	})
}

func FuzzCheckHeader(f *testing.F) {
	for op := Opcode(0); op <= 15; op++ {
		h := make(Header, 4)
		h.SetCtrl(MakeCtrl(op, true))
		h.SetULPDULength(op.HeaderLen() - 2)
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < CheckHeaderLen {
			return
		}
		op, n, err := CheckHeader(b)
		if err != nil {
			if c, ok := CauseOf(err); !ok || c.String() == "" {
				t.Fatalf("error without cause: %v", err)
			}
			return
		}
		h := Header(b)
		if !op.Valid() || n != op.HeaderLen() || h.Tagged() != op.Tagged() || h.PayloadLen() < 0 ||
			(op == OpRDMAReadRequest && h.PayloadLen() != 0) {
			t.Fatalf("accepted % x as %v, header %d", b[:4], op, n)
		}
	})
}

// FuzzFrameReader reads FPDUs from arbitrary bytes, with CRC checking on
// or off, and checks that each accepted FPDU re-encodes to the bytes it
// came from: once through a plain reader in small payload reads, once
// through a vector reader in segments with payload reads large enough to
// go straight into place (readDirect).
func FuzzFrameReader(f *testing.F) {
	seed := func(crc bool) []byte {
		stream := encodeFrames(f, crc,
			testFrame{sendHeader(OpSend, true, 1, 0, 0), []byte("rping info 16 by")},
			testFrame{readRequestHeader(ReadRequestFields{MSN: 1, SinkSTag: 2, Size: 64, SrcSTag: 3}), nil},
			testFrame{taggedHeader(OpRDMAReadResponse, true, 2, 0), bytes.Repeat([]byte{'p'}, 61)},
			testFrame{sendHeader(OpSendInv, false, 2, 0, 9), nil})
		term := NewTerminate(TermLLPCRC, nil).Append(nil)
		return append(stream, encodeFrames(f, crc, testFrame{Header(term[:24]), term[24:]})...)
	}
	f.Add(seed(false), false)
	f.Add(seed(true), true)
	f.Fuzz(func(t *testing.T, b []byte, crc bool) {
		fuzzFrames(t, NewFrameReader(bytes.NewReader(b), ReaderOptions{CRC: crc}), b, crc, 100)
		var segs [][]byte
		for rest, i := b, 0; len(rest) > 0; i++ {
			n := min(len(rest), 1+int(rest[0])*(i%7+1)*13)
			segs = append(segs, rest[:n])
			rest = rest[n:]
		}
		fuzzFrames(t, NewFrameReader(&vecReader{segmentReader: segmentReader{segs: segs}}, ReaderOptions{CRC: crc}), b, crc, 8<<10)
	})
}

// fuzzFrames is FuzzFrameReader's check of the FPDUs fr reads from b,
// reading payloads dstLen bytes at a time.
func fuzzFrames(t *testing.T, fr *FrameReader, b []byte, crc bool, dstLen int) {
	off := 0
	dst := make([]byte, dstLen)
	for {
		h, err := fr.Next()
		if err != nil {
			if err == io.EOF && off != len(b) {
				t.Fatalf("io.EOF at %d of %d", off, len(b))
			}
			if pe := (*ProtocolError)(nil); errors.As(err, &pe) {
				NewTerminate(pe.Cause, h) // must not panic on any offending header
			}
			return
		}
		payload := make([]byte, 0, h.PayloadLen())
		for fr.PayloadLeft() > 0 {
			n, err := fr.ReadPayload(dst)
			if err != nil {
				return
			}
			payload = append(payload, dst[:n]...)
		}
		if err := fr.Finish(); err != nil {
			return
		}
		// Pad bytes need not be zero, so compare up to the ULPDU's end.
		n := FrameLen(h.ULPDULength())
		enc := encodeFrames(t, crc, testFrame{h, payload})[:2+h.ULPDULength()]
		if want := b[off : off+2+h.ULPDULength()]; !bytes.Equal(enc, want) {
			t.Fatalf("FPDU at %d re-encoded\n got % x\nwant % x", off, enc, want)
		}
		if h.Opcode() == OpTerminate {
			if term, err := ParseTerminate(b[off : off+2+h.ULPDULength()]); err == nil {
				term.Offending()
			}
		}
		off += n
	}
}

func FuzzParseTerminate(f *testing.F) {
	send := sendHeader(OpSend, true, 4, 0, 0)
	send.SetULPDULength(18 + 10)
	rreq := readRequestHeader(ReadRequestFields{MSN: 1, Size: 5})
	write := taggedHeader(OpRDMAWrite, true, 1, 2)
	write.SetULPDULength(14 + 3)
	for _, tc := range []struct {
		cause TermCause
		h     Header
	}{
		{TermLLPCRC, nil},
		{TermDDPUntaggedNoBuffer, send},
		{TermRDMAPAccessRights, rreq},
		{TermDDPTaggedBaseBounds, write},
		{TermRDMAPOpUnspecified, write},
	} {
		f.Add(NewTerminate(tc.cause, tc.h).Append(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		term, err := ParseTerminate(b)
		if err != nil {
			if err != ErrMalformedTerminate {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if off, ok := term.Offending(); ok {
			if !term.D || !off.Opcode().Valid() || len(off) > len(term.Attached) {
				t.Fatalf("Offending % x from %+v", []byte(off), term)
			}
		}
		again, err := ParseTerminate(term.Append(nil))
		if err != nil || !reflect.DeepEqual(again, term) {
			t.Fatalf("round trip %+v %v, want %+v", again, err, term)
		}
	})
}
