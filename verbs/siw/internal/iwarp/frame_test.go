package iwarp

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// randomFrames builds a mix of every message shape, payload sizes from 0
// to a full ULPDU.
func randomFrames(rng *rand.Rand, n int) []testFrame {
	sizes := []int{0, 1, 2, 3, 4, 5, 16, 63, 64, 1023, 1024, 1025, 4095, 4096, 9000, MaxPayload(TaggedHeaderLen, 0)}
	var frames []testFrame
	for i := 0; i < n; i++ {
		size := sizes[rng.IntN(len(sizes))]
		payload := make([]byte, size)
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		switch rng.IntN(4) {
		case 0:
			frames = append(frames, testFrame{taggedHeader(OpRDMAWrite, rng.IntN(2) == 0, STag(rng.Uint32()), rng.Uint64()), payload})
		case 1:
			frames = append(frames, testFrame{sendHeader(OpSendSEInv, true, MSN(i), uint32(i), STag(rng.Uint32())), payload[:min(size, MaxPayload(UntaggedHeaderLen, 0))]})
		case 2:
			frames = append(frames, testFrame{readRequestHeader(ReadRequestFields{MSN: MSN(i), Size: uint32(size)}), nil})
		case 3:
			term := NewTerminate(TermLLPCRC, nil)
			if len(frames) > 0 {
				prev := frames[len(frames)-1]
				h := Header(bytes.Clone(prev.hdr))
				h.SetULPDULength(len(h) - 2 + len(prev.payload))
				term = NewTerminate(TermDDPUntaggedNoBuffer, h)
			}
			b := term.Append(nil)
			frames = append(frames, testFrame{Header(b[:TerminateHeaderLen]), b[TerminateHeaderLen:]})
		}
	}
	return frames
}

// readAll decodes frames from fr, reading payloads in random chunks and
// sometimes discarding the tail.
func readAll(t *testing.T, fr *FrameReader, rng *rand.Rand, want []testFrame) {
	t.Helper()
	for i, w := range want {
		h, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: Next: %v", i, err)
		}
		wantHdr := bytes.Clone(w.hdr)
		Header(wantHdr).SetULPDULength(len(w.hdr) - 2 + len(w.payload))
		if !bytes.Equal(h, wantHdr) || h.PayloadLen() != len(w.payload) || fr.PayloadLeft() != len(w.payload) {
			t.Fatalf("frame %d: header % x, want % x", i, []byte(h), wantHdr)
		}
		got := make([]byte, len(w.payload))
		keep := len(got)
		if rng.IntN(4) == 0 {
			keep = rng.IntN(len(got) + 1)
		}
		for off := 0; off < keep; {
			n, err := fr.ReadPayload(got[off:min(keep, off+1+rng.IntN(5000))])
			if err != nil || n == 0 {
				t.Fatalf("frame %d: ReadPayload %d %v", i, n, err)
			}
			off += n
		}
		if !bytes.Equal(got[:keep], w.payload[:keep]) {
			t.Fatalf("frame %d: payload differs", i)
		}
		if rng.IntN(2) == 0 { // else Next finishes the frame
			if err := fr.Finish(); err != nil {
				t.Fatalf("frame %d: Finish: %v", i, err)
			}
			if err := fr.Finish(); err != nil {
				t.Fatalf("frame %d: second Finish: %v", i, err)
			}
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("after %d frames: %v, want io.EOF", len(want), err)
	}
}

func TestFrameRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	frames := randomFrames(rng, 200)
	for _, crc := range []bool{false, true} {
		for _, wopt := range []WriterOptions{
			{},
			{BufferSize: 300, CopyThreshold: 64, MaxSegments: 5},
			{CopyThreshold: -1},
			{CopyThreshold: 1 << 20},
		} {
			wopt.CRC = crc
			var out bytes.Buffer
			fw := NewFrameWriter(&out, wopt)
			total := 0
			for _, f := range frames {
				if err := fw.Frame(f.hdr, f.payload); err != nil {
					t.Fatal(err)
				}
				total += FrameLen(len(f.hdr) - 2 + len(f.payload))
				if fw.Buffered()+out.Len() != total {
					t.Fatalf("Buffered %d + written %d != %d", fw.Buffered(), out.Len(), total)
				}
			}
			if err := fw.Flush(); err != nil || fw.Buffered() != 0 || out.Len() != total {
				t.Fatalf("Flush: %v, %d of %d bytes", err, out.Len(), total)
			}
			stream := out.Bytes()

			for _, ropt := range []ReaderOptions{{}, {BufferSize: 1}} {
				ropt.CRC = crc
				// Random TCP segmentation.
				var segs [][]byte
				for rest := stream; len(rest) > 0; {
					n := min(len(rest), 1+rng.IntN(20000))
					segs = append(segs, rest[:n])
					rest = rest[n:]
				}
				readAll(t, NewFrameReader(&segmentReader{segs: segs}, ropt), rng, frames)
			}
		}
	}
	// One byte per read, for the header and trailer state machines.
	small := randomFrames(rng, 30)
	for i := range small {
		small[i].payload = small[i].payload[:min(len(small[i].payload), 100)]
	}
	stream := encodeFrames(t, true, small...)
	readAll(t, NewFrameReader(byteReader{bytes.NewReader(stream)}, ReaderOptions{CRC: true}), rng, small)
}

func TestFrameReaderCRC(t *testing.T) {
	payload := []byte("thirteen byte")
	good := encodeFrames(t, true, testFrame{sendHeader(OpSend, true, 1, 0, 0), payload})
	if len(good) != 20+13+3+4 {
		t.Fatalf("FPDU of %d bytes", len(good))
	}
	read := func(b []byte, crc bool, discard bool) error {
		fr := NewFrameReader(bytes.NewReader(b), ReaderOptions{CRC: crc})
		if _, err := fr.Next(); err != nil {
			return err
		}
		if !discard {
			if _, err := fr.ReadPayload(make([]byte, 13)); err != nil {
				return err
			}
		}
		return fr.Finish()
	}
	if err := read(good, true, false); err != nil {
		t.Fatal(err)
	}
	for _, pos := range []int{0 + 5, 20, 32, 33, 35, 36, 39} { // header, payload, pad, CRC
		bad := bytes.Clone(good)
		bad[pos] ^= 0x10
		for _, discard := range []bool{false, true} {
			err := read(bad, true, discard)
			if !errors.Is(err, ErrCRC) {
				t.Errorf("flip at %d: %v, want ErrCRC", pos, err)
			}
			if c, _ := CauseOf(err); c != TermLLPCRC {
				t.Errorf("flip at %d: cause %v", pos, c)
			}
		}
		if pos >= 33 { // pad and CRC are not checked without CRC
			if err := read(bad, false, false); err != nil {
				t.Errorf("flip at %d without CRC: %v", pos, err)
			}
		}
	}
	// Without CRC the field is zeros on the wire.
	plain := encodeFrames(t, false, testFrame{sendHeader(OpSend, true, 1, 0, 0), payload})
	if !bytes.Equal(plain[len(plain)-4:], []byte{0, 0, 0, 0}) || !bytes.Equal(plain[:36], good[:36]) {
		t.Fatalf("CRC-less FPDU % x", plain)
	}
	// Errors are sticky.
	bad := bytes.Clone(good)
	bad[39] ^= 1
	fr := NewFrameReader(bytes.NewReader(append(bad, good...)), ReaderOptions{CRC: true})
	fr.Next()
	if err := fr.Finish(); !errors.Is(err, ErrCRC) {
		t.Fatal(err)
	}
	if _, err := fr.Next(); !errors.Is(err, ErrCRC) {
		t.Fatalf("Next after CRC error: %v", err)
	}
	if _, err := fr.ReadPayload(make([]byte, 1)); !errors.Is(err, ErrCRC) {
		t.Fatalf("ReadPayload after CRC error: %v", err)
	}
}

func TestFrameReaderEOF(t *testing.T) {
	stream := encodeFrames(t, true,
		testFrame{sendHeader(OpSend, true, 1, 0, 0), []byte("abcdef")},
		testFrame{taggedHeader(OpRDMAWrite, true, 1, 0), make([]byte, 9000)})
	first := FrameLen(18 + 6)
	drain := func(fr *FrameReader) error {
		for {
			if _, err := fr.Next(); err != nil {
				return err
			}
			if _, err := fr.ReadPayload(make([]byte, fr.PayloadLeft())); err != nil {
				return err
			}
			if err := fr.Finish(); err != nil {
				return err
			}
		}
	}
	for cut := 0; cut <= len(stream); cut++ {
		want := io.ErrUnexpectedEOF
		if cut == 0 || cut == first || cut == len(stream) {
			want = io.EOF
		}
		if cut != 0 && cut != len(stream) && cut%7 != 0 && cut > first+100 {
			continue // sample the long payload
		}
		err := drain(NewFrameReader(bytes.NewReader(stream[:cut]), ReaderOptions{CRC: true, BufferSize: 1}))
		if err != want {
			t.Fatalf("cut at %d: %v, want %v", cut, err, want)
		}
	}
	// A Discard or Finish that runs out of stream.
	fr := NewFrameReader(bytes.NewReader(stream[:first+30]), ReaderOptions{})
	fr.Next()
	fr.Finish()
	fr.Next()
	if err := fr.Discard(); err != io.ErrUnexpectedEOF {
		t.Fatalf("Discard: %v", err)
	}
}

// A header error leaves enough of the header for NewTerminate.
func TestFrameReaderProtocolError(t *testing.T) {
	rr := readRequestHeader(ReadRequestFields{MSN: 1, Size: 8})
	stream := encodeFrames(t, false, testFrame{rr, nil})
	Header(stream).SetULPDULength(46 + 4) // smuggle 4 payload bytes in
	stream = append(stream[:48], 1, 2, 3, 4, 0, 0, 0, 0)
	fr := NewFrameReader(bytes.NewReader(stream), ReaderOptions{})
	h, err := fr.Next()
	c, ok := CauseOf(err)
	if !errors.Is(err, ErrReadRequestLength) || !ok || c != TermRDMAPCatastrophicStream {
		t.Fatalf("Next: %v", err)
	}
	if len(h) != ReadRequestHeaderLen || ReadRequestHeader(h).Size() != 8 {
		t.Fatalf("offending header % x", []byte(h))
	}
	term := NewTerminate(c, h)
	if !term.M || !term.D || term.R || len(term.Attached) != UntaggedHeaderLen || Header(term.Attached).ULPDULength() != 4 {
		t.Fatalf("terminate %+v", term)
	}

	fr = NewFrameReader(bytes.NewReader(unhex(t, "0012 4148 0000")), ReaderOptions{})
	h, err = fr.Next()
	if !errors.Is(err, ErrOpcode) || len(h) != CheckHeaderLen {
		t.Fatalf("opcode 8: % x %v", []byte(h), err)
	}
	if term := NewTerminate(TermRDMAPOpcode, h); term.D || term.Attached != nil {
		t.Fatalf("opcode error attaches %+v", term)
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, io.ErrClosedPipe
	}
	w.n--
	return len(p), nil
}

func TestFrameWriterErrors(t *testing.T) {
	fw := NewFrameWriter(io.Discard, WriterOptions{})
	send := sendHeader(OpSend, true, 1, 0, 0)
	for name, hdr := range map[string]Header{
		"empty":              nil,
		"short":              send[:3],
		"send as tagged len": send[:16],
		"opcode 9":           unhex(t, "0000 4149 00000000 00000000 00000000"),
	} {
		if err := fw.Frame(hdr, nil); err != ErrHeaderLen {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := fw.Frame(send, make([]byte, 65535-17)); err != ErrFrameTooLong {
		t.Errorf("oversized: %v", err)
	}
	if err := fw.Frame(send, make([]byte, 65535-18)); err != nil {
		t.Errorf("largest Send: %v", err)
	}
	if fw.Buffered() != FrameLen(65535) {
		t.Errorf("Buffered %d", fw.Buffered())
	}

	fw = NewFrameWriter(&failWriter{}, WriterOptions{})
	if err := fw.Frame(send, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := fw.Flush(); err != io.ErrClosedPipe {
		t.Fatalf("Flush: %v", err)
	}
	if err := fw.Frame(send, nil); err != io.ErrClosedPipe {
		t.Fatalf("sticky: %v", err)
	}
	if err := fw.Flush(); err != io.ErrClosedPipe {
		t.Fatalf("sticky flush: %v", err)
	}
}

// Frame flushes by itself when the buffer or iovec list fills, keeping the
// stream intact.
func TestFrameWriterAutoFlush(t *testing.T) {
	var out bytes.Buffer
	fw := NewFrameWriter(&out, WriterOptions{BufferSize: 256, CopyThreshold: 100, MaxSegments: 4})
	big := bytes.Repeat([]byte{7}, 5000)
	var frames []testFrame
	for i := 0; i < 20; i++ {
		f := testFrame{sendHeader(OpSend, true, MSN(i), 0, 0), big[:(i*251)%len(big)]}
		frames = append(frames, f)
		if err := fw.Frame(f.hdr, f.payload); err != nil {
			t.Fatal(err)
		}
		if len(fw.iov) > fw.maxSeg || fw.n > len(fw.buf) {
			t.Fatalf("iov %d buf %d", len(fw.iov), fw.n)
		}
	}
	fw.Flush()
	readAll(t, NewFrameReader(bytes.NewReader(out.Bytes()), ReaderOptions{}), rand.New(rand.NewPCG(3, 4)), frames)
}

// CRC is switched on after the MPA exchange decided it; frames queued
// before and after the switch differ only in the CRC field.
func TestSetCRC(t *testing.T) {
	var out bytes.Buffer
	fw := NewFrameWriter(&out, WriterOptions{})
	hdr := sendHeader(OpSend, true, 1, 0, 0)
	fw.Frame(hdr, nil)
	fw.SetCRC(true)
	fw.Frame(hdr, nil)
	fw.Flush()
	b := out.Bytes()
	if !bytes.Equal(b[20:24], []byte{0, 0, 0, 0}) || !bytes.Equal(b[44:48], []byte{0x58, 0x7B, 0xE8, 0xC4}) {
		t.Fatalf("% x", b)
	}
	fr := NewFrameReader(bytes.NewReader(b), ReaderOptions{})
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if err := fr.Finish(); err != nil {
		t.Fatal(err)
	}
	fr.SetCRC(true)
	if _, err := fr.Next(); err != nil {
		t.Fatal(err)
	}
	if err := fr.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestProtocolErrorText(t *testing.T) {
	err := error(errCRC)
	if got, want := err.Error(), "iwarp: MPA CRC mismatch (terminate: MPA CRC error)"; got != want {
		t.Fatalf("%q, want %q", got, want)
	}
	if _, ok := CauseOf(io.EOF); ok {
		t.Fatal("io.EOF has no cause")
	}
}
