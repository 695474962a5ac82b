package iwarp

import "testing"

func TestPadAndFrameLen(t *testing.T) {
	for _, tc := range []struct{ ulpdu, pad, frame int }{
		{0x12, 0, 24},   // zero-length Send
		{0x22, 0, 40},   // 16-byte Send (rping info)
		{0x2E, 0, 52},   // Read Request
		{0x4E, 0, 84},   // 64-byte Read Response
		{14 + 1, 3, 24}, // 1-byte Write
		{14 + 2, 2, 24},
		{14 + 3, 1, 24},
		{MaxULPDULength, 3, 2 + 65535 + 3 + 4},
	} {
		if got := PadLen(tc.ulpdu); got != tc.pad {
			t.Errorf("PadLen(%d) = %d, want %d", tc.ulpdu, got, tc.pad)
		}
		if got := FrameLen(tc.ulpdu); got != tc.frame {
			t.Errorf("FrameLen(%d) = %d, want %d", tc.ulpdu, got, tc.frame)
		}
		if FrameLen(tc.ulpdu)%4 != 0 {
			t.Errorf("FrameLen(%d) not a multiple of 4", tc.ulpdu)
		}
	}
}

func TestMaxPayload(t *testing.T) {
	for _, tc := range []struct{ hdr, max, want int }{
		{TaggedHeaderLen, 0, 65520},   // 65535-14 = 65521, rounded down
		{UntaggedHeaderLen, 0, 65516}, // 65535-18 = 65517
		{TaggedHeaderLen, 1 << 20, 65520},
		{TaggedHeaderLen, 1448, 1432},
		{UntaggedHeaderLen, 1448, 1428},
		{UntaggedHeaderLen, 10, 0},
	} {
		got := MaxPayload(tc.hdr, tc.max)
		if got != tc.want {
			t.Errorf("MaxPayload(%d, %d) = %d, want %d", tc.hdr, tc.max, got, tc.want)
		}
		if tc.max > 0 && tc.max <= MaxULPDULength && got > 0 && got+tc.hdr-2 > tc.max {
			t.Errorf("MaxPayload(%d, %d) = %d overflows the cap", tc.hdr, tc.max, got)
		}
	}
}
