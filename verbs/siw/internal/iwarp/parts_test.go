package iwarp

import (
	"bytes"
	"testing"
)

// TestFrameParts checks that an FPDU queued as a prefix and a payload is
// byte for byte the FPDU of their concatenation, CRC included, whether
// the payload is copied or referenced.
func TestFrameParts(t *testing.T) {
	data := make([]byte, 70000)
	for i := range data {
		data[i] = byte(i * 7)
	}
	cases := []struct{ prefix, payload int }{{0, 0}, {48, 0}, {0, 5000}, {48, 16384}, {1, 3}, {1024, 60000 - 1024}, {7, 1500}}
	for _, crc := range []bool{false, true} {
		for _, wopt := range []WriterOptions{{}, {CopyThreshold: -1}, {CopyThreshold: 1 << 20}, {BufferSize: 2000, CopyThreshold: 64, MaxSegments: 5}} {
			wopt.CRC = crc
			var parts, whole bytes.Buffer
			fp, fw := NewFrameWriter(&parts, wopt), NewFrameWriter(&whole, wopt)
			for i, c := range cases {
				prefix := data[:c.prefix]
				payload := data[c.prefix+100 : c.prefix+100+c.payload]
				hdr := sendHeader(OpSend, true, MSN(i+1), 0, 0)
				if err := fp.FrameParts(hdr, prefix, payload); err != nil {
					t.Fatalf("case %v: FrameParts: %v", c, err)
				}
				if err := fw.Frame(hdr, append(bytes.Clone(prefix), payload...)); err != nil {
					t.Fatalf("case %v: Frame: %v", c, err)
				}
			}
			if err := fp.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := fw.Flush(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(parts.Bytes(), whole.Bytes()) {
				t.Fatalf("crc=%v %+v: FrameParts wrote other bytes than Frame", crc, wopt)
			}
		}
	}
	// A prefix that cannot fit the batch buffer is refused, not truncated.
	fw := NewFrameWriter(&bytes.Buffer{}, WriterOptions{BufferSize: 300})
	if err := fw.FrameParts(sendHeader(OpSend, true, 1, 0, 0), data[:400], nil); err != ErrFrameTooLong {
		t.Fatalf("oversized prefix: %v, want ErrFrameTooLong", err)
	}
}
