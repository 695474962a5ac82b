package iwarp

import (
	"bytes"
	"testing"
)

// The three vectors of docs/WIRE.md, I2.
func TestCRC32cVectors(t *testing.T) {
	if got := CRC32c([]byte("123456789")); got != 0xE3069283 {
		t.Errorf("CRC32c(123456789) = %#08x, want 0xE3069283", got)
	}

	zeros := make([]byte, 32)
	if got := CRC32c(zeros); got != 0x8A9136AA {
		t.Errorf("CRC32c(32 zeros) = %#08x, want 0x8A9136AA", got)
	}
	var wire [4]byte
	PutCRC(wire[:], CRC32c(zeros))
	if want := []byte{0xAA, 0x36, 0x91, 0x8A}; !bytes.Equal(wire[:], want) {
		t.Errorf("wire order % x, want % x", wire, want)
	}

	// A zero-length Send FPDU: the CRC field is stored little-endian.
	hdr := unhex(t, "00 12 41 43 | 00000000 00000000 | 00 00 00 01 | 00 00 00 00")
	if got := CRC32c(hdr); got != 0xC4E87B58 {
		t.Errorf("CRC32c(zero-length Send) = %#08x, want 0xC4E87B58", got)
	}
	fpdu := encodeFrames(t, true, testFrame{sendHeader(OpSend, true, 1, 0, 0), nil})
	if want := append(hdr, 0x58, 0x7B, 0xE8, 0xC4); !bytes.Equal(fpdu, want) {
		t.Errorf("FrameWriter FPDU\n got % x\nwant % x", fpdu, want)
	}
	if GetCRC(fpdu[20:]) != 0xC4E87B58 {
		t.Errorf("GetCRC = %#08x", GetCRC(fpdu[20:]))
	}
}

func TestCRC32cIncremental(t *testing.T) {
	data := []byte("the MPA CRC covers length, header, payload and pad")
	whole := CRC32c(data)
	for i := 0; i <= len(data); i++ {
		if got := UpdateCRC32c(UpdateCRC32c(0, data[:i]), data[i:]); got != whole {
			t.Fatalf("split at %d: %#08x, want %#08x", i, got, whole)
		}
	}
}
