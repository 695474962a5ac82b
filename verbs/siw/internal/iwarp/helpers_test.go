package iwarp

import (
	"bytes"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"testing"
)

// unhex decodes hex that may contain spaces and '|' separators, as the
// byte examples in docs/WIRE.md are written.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// readHexSegments loads a testdata/*.hex file: one TCP segment per line.
func readHexSegments(t testing.TB, name string) [][]byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var segs [][]byte
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		segs = append(segs, unhex(t, line))
	}
	return segs
}

// segmentReader returns one segment per Read, like a TCP socket delivering
// the captured segments; a segment longer than the caller's buffer is
// handed out in pieces.
type segmentReader struct{ segs [][]byte }

func (r *segmentReader) Read(p []byte) (int, error) {
	for len(r.segs) > 0 && len(r.segs[0]) == 0 {
		r.segs = r.segs[1:]
	}
	if len(r.segs) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.segs[0])
	r.segs[0] = r.segs[0][n:]
	return n, nil
}

// byteReader returns at most one byte per Read: the worst case split.
type byteReader struct{ r io.Reader }

func (b byteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return b.r.Read(p[:1])
}

// loopReader replays data forever without allocating, for allocation
// guards and benchmarks.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m := copy(p[n:], l.data[l.off:])
		n += m
		l.off = (l.off + m) % len(l.data)
	}
	return n, nil
}

// encodeFrames writes frames through a FrameWriter into a byte slice.
func encodeFrames(t testing.TB, crc bool, frames ...testFrame) []byte {
	t.Helper()
	var out bytes.Buffer
	fw := NewFrameWriter(&out, WriterOptions{CRC: crc})
	for _, f := range frames {
		if err := fw.Frame(f.hdr, f.payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

type testFrame struct {
	hdr     Header
	payload []byte
}

func sendHeader(op Opcode, last bool, msn MSN, mo uint32, inv STag) Header {
	h := make(Header, UntaggedHeaderLen)
	UntaggedHeader(h).Encode(&UntaggedFields{Opcode: op, Last: last, InvalidateSTag: inv, QN: QNSend, MSN: msn, MO: mo})
	return h
}

func taggedHeader(op Opcode, last bool, stag STag, to uint64) Header {
	h := make(Header, TaggedHeaderLen)
	TaggedHeader(h).Encode(&TaggedFields{Opcode: op, Last: last, STag: stag, TO: to})
	return h
}

func readRequestHeader(f ReadRequestFields) Header {
	h := make(Header, ReadRequestHeaderLen)
	ReadRequestHeader(h).Encode(&f)
	return h
}
