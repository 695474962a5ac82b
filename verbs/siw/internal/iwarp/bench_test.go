package iwarp

import (
	"io"
	"testing"
)

// BenchmarkWriteSend64 encodes a 64-byte Send FPDU (header, copy, pad,
// CRC) and flushes it, one FPDU per write: the unbatched worst case.
func BenchmarkWriteSend64(b *testing.B) {
	for _, crc := range []bool{false, true} {
		b.Run(crcName(crc), func(b *testing.B) {
			hdr := sendHeader(OpSend, true, 1, 0, 0)
			payload := make([]byte, 64)
			fw := NewFrameWriter(io.Discard, WriterOptions{CRC: crc})
			b.ReportAllocs()
			b.SetBytes(int64(FrameLen(18 + 64)))
			for b.Loop() {
				UntaggedHeader(hdr).SetMSN(UntaggedHeader(hdr).MSN() + 1)
				fw.Frame(hdr, payload)
				fw.Flush()
			}
		})
	}
}

// BenchmarkWriteSend64Batch16 queues 16 Sends per Flush, as the QP's
// transmit loop does when several WRs are pending.
func BenchmarkWriteSend64Batch16(b *testing.B) {
	hdr := sendHeader(OpSend, true, 1, 0, 0)
	payload := make([]byte, 64)
	fw := NewFrameWriter(io.Discard, WriterOptions{CRC: true})
	b.ReportAllocs()
	b.SetBytes(int64(FrameLen(18 + 64)))
	i := 0
	for b.Loop() {
		fw.Frame(hdr, payload)
		if i++; i%16 == 0 {
			fw.Flush()
		}
	}
}

// BenchmarkWriteWrite64KiB writes a full-size RDMA Write segment whose
// payload is referenced, not copied.
func BenchmarkWriteWrite64KiB(b *testing.B) {
	n := MaxPayload(TaggedHeaderLen, 0)
	hdr := taggedHeader(OpRDMAWrite, true, 1, 0)
	payload := make([]byte, n)
	for _, crc := range []bool{false, true} {
		b.Run(crcName(crc), func(b *testing.B) {
			fw := NewFrameWriter(io.Discard, WriterOptions{CRC: crc})
			b.ReportAllocs()
			b.SetBytes(int64(n))
			for b.Loop() {
				fw.Frame(hdr, payload)
				fw.Flush()
			}
		})
	}
}

// BenchmarkReadSend64 decodes a stream of 64-byte Send FPDUs: header
// check, payload copy into the receive buffer, pad and CRC.
func BenchmarkReadSend64(b *testing.B) {
	for _, crc := range []bool{false, true} {
		b.Run(crcName(crc), func(b *testing.B) {
			stream := encodeFrames(b, crc, testFrame{sendHeader(OpSend, true, 1, 0, 0), make([]byte, 64)})
			fr := NewFrameReader(&loopReader{data: stream}, ReaderOptions{CRC: crc})
			dst := make([]byte, 64)
			b.ReportAllocs()
			b.SetBytes(int64(len(stream)))
			for b.Loop() {
				h, err := fr.Next()
				if err != nil {
					b.Fatal(err)
				}
				fr.ReadPayload(dst[:h.PayloadLen()])
				if err := fr.Finish(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCRC32c64KiB(b *testing.B) {
	data := make([]byte, 64<<10)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var sum uint32
	for b.Loop() {
		sum = UpdateCRC32c(sum, data)
	}
}

func crcName(crc bool) string {
	if crc {
		return "crc"
	}
	return "nocrc"
}
