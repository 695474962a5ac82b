package iwarp

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// vecReader is a segmentReader that also reads vectors: a segment fills a
// and then b, as one readv would.
type vecReader struct {
	segmentReader
	vecs, ahead int // ReadVec calls, and bytes they put into b
}

func (r *vecReader) ReadVec(a, b []byte) (int, error) {
	r.vecs++
	n, err := r.Read(a)
	if n < len(a) || err != nil || len(b) == 0 {
		return n, err
	}
	m, _ := r.Read(b) // the rest of the same segment, or the next one
	r.ahead += m
	return n + m, nil
}

// TestFrameReaderVector reads large payloads straight into place with the
// next bytes read ahead into the buffer, the buffer growing inside a
// frame halfway, and checks every header and payload.
func TestFrameReaderVector(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	frames := randomFrames(rng, 300)
	for _, crc := range []bool{false, true} {
		stream := encodeFrames(t, crc, frames...)
		var segs [][]byte
		for rest := stream; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(40000))
			segs = append(segs, rest[:n])
			rest = rest[n:]
		}
		r := &vecReader{segmentReader: segmentReader{segs: segs}}
		fr := NewFrameReader(r, ReaderOptions{CRC: crc, BufferSize: 1})
		for i, w := range frames {
			h, err := fr.Next()
			if err != nil {
				t.Fatalf("frame %d: Next: %v", i, err)
			}
			if h.PayloadLen() != len(w.payload) {
				t.Fatalf("frame %d: payload length %d, want %d", i, h.PayloadLen(), len(w.payload))
			}
			if i == len(frames)/2 {
				fr.Grow(256 << 10)
				fr.Grow(1024) // never shrinks
				if fr.BufferSize() != 256<<10 {
					t.Fatalf("BufferSize %d after Grow", fr.BufferSize())
				}
			}
			got := make([]byte, len(w.payload))
			if n, err := fr.ReadPayload(got); n != len(got) || err != nil {
				t.Fatalf("frame %d: ReadPayload %d %v", i, n, err)
			}
			if !bytes.Equal(got, w.payload) {
				t.Fatalf("frame %d: payload differs", i)
			}
			if err := fr.Finish(); err != nil {
				t.Fatalf("frame %d: Finish: %v", i, err)
			}
		}
		if _, err := fr.Next(); err != io.EOF {
			t.Fatalf("after the frames: %v, want io.EOF", err)
		}
		if r.vecs == 0 || r.ahead == 0 {
			t.Fatalf("%d vector reads put %d bytes ahead: large payloads were not read in place", r.vecs, r.ahead)
		}
	}
}
