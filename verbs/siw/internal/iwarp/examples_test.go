package iwarp

import (
	"bytes"
	"testing"
)

// The FPDUs of docs/WIRE.md (I5), built with this package's
// encoders and compared with the bytes siw put on the wire in the rping
// capture (testdata/siw_rping_lo_*.hex).
func TestSection7FPDUs(t *testing.T) {
	info := unhex(t, "000055f4e4d6d570 5ab65400 00000040") // buf, rkey, size
	ping := []byte("rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr\x00")
	for _, tc := range []struct {
		name    string
		hdr     Header
		payload []byte
		want    string
	}{
		{
			"first rping Send, 40 bytes",
			sendHeader(OpSend, true, 1, 0, 0), info,
			"0022 4143 00000000 00000000 00000001 00000000 000055f4e4d6d570 5ab65400 00000040 00000000",
		},
		{
			"Read Request, 52 bytes",
			readRequestHeader(ReadRequestFields{MSN: 1, SinkSTag: 0x13c3e400, SinkTO: 0x000055f84cd4ff40, Size: 64,
				SrcSTag: 0x5ab65400, SrcTO: 0x000055f4e4d6d570}), nil,
			"002e 4141 00000000 00000001 00000001 00000000 13c3e400 000055f84cd4ff40 00000040 5ab65400 000055f4e4d6d570 00000000",
		},
		{
			"Read Response, 84 bytes",
			taggedHeader(OpRDMAReadResponse, true, 0x13c3e400, 0x000055f84cd4ff40), ping,
			"004e c142 13c3e400 000055f84cd4ff40" +
				"72646d612d70696e672d303a204142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f70717200" +
				"00000000",
		},
	} {
		got := encodeFrames(t, false, testFrame{tc.hdr, tc.payload})
		if want := unhex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s\n got % x\nwant % x", tc.name, got, want)
		}
	}
}
