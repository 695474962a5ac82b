package iwarp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
)

// capturedFPDU is one decoded FPDU of a captured stream.
type capturedFPDU struct {
	hdr     Header
	payload []byte
	raw     []byte // the FPDU as captured, length field through CRC slot
}

// decodeCapture reads a captured siw stream: one MPA frame, then FPDUs to
// the end, delivered segment by segment as TCP did.
func decodeCapture(t *testing.T, name string) (MPAFrame, []capturedFPDU) {
	t.Helper()
	segs := readHexSegments(t, name)
	stream := bytes.Join(segs, nil)
	fr := NewFrameReader(&segmentReader{segs: segs}, ReaderOptions{BufferSize: 512})
	mpa, err := fr.ReadMPA()
	if err != nil {
		t.Fatalf("%s: ReadMPA: %v", name, err)
	}
	off := mpa.Len()
	var out []capturedFPDU
	for {
		h, err := fr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: FPDU %d at offset %d: %v", name, len(out), off, err)
		}
		f := capturedFPDU{hdr: bytes.Clone(h), payload: make([]byte, h.PayloadLen())}
		if _, err := fr.ReadPayload(f.payload); err != nil {
			t.Fatal(err)
		}
		if err := fr.Finish(); err != nil {
			t.Fatal(err)
		}
		n := FrameLen(h.ULPDULength())
		f.raw = stream[off : off+n]
		off += n
		out = append(out, f)
	}
	if off != len(stream) {
		t.Fatalf("%s: decoded %d of %d bytes", name, off, len(stream))
	}
	return mpa, out
}

// rpingInfo is rping's 16-byte struct rping_rdma_info: buf, rkey, size.
type rpingInfo struct {
	buf  uint64
	rkey STag
	size uint32
}

func parseRpingInfo(t *testing.T, b []byte) rpingInfo {
	t.Helper()
	if len(b) != 16 {
		t.Fatalf("rping info of %d bytes", len(b))
	}
	return rpingInfo{binary.BigEndian.Uint64(b), STag(binary.BigEndian.Uint32(b[8:])), binary.BigEndian.Uint32(b[12:])}
}

// TestSiwRpingCapture decodes both directions of a real rping run between
// two Linux siw endpoints and checks rping's protocol (docs/WIRE.md, I5):
// the client advertises its start buffer, the server reads it, the client
// advertises its rdma buffer, the server writes it, each answered by a
// 16-byte go-ahead Send. Every FPDU is also re-encoded with FrameWriter
// and compared with the captured bytes.
func TestSiwRpingCapture(t *testing.T) {
	req, client := decodeCapture(t, "siw_rping_lo_client.hex")
	rep, server := decodeCapture(t, "siw_rping_lo_server.hex")

	if want := (MPAFrame{Enhanced: true, Rev: 2, IRD: 1, ORD: 1}); fmt.Sprint(req) != fmt.Sprint(want) {
		t.Errorf("MPA Request %+v, want %+v", req, want)
	}
	if want := (MPAFrame{Reply: true, Enhanced: true, Rev: 2, IRD: 1, ORD: 1}); fmt.Sprint(rep) != fmt.Sprint(want) {
		t.Errorf("MPA Reply %+v, want %+v", rep, want)
	}

	for _, stream := range [][]capturedFPDU{client, server} {
		for i, f := range stream {
			got := encodeFrames(t, false, testFrame{f.hdr, f.payload})
			if !bytes.Equal(got, f.raw) {
				t.Errorf("FPDU %d re-encoded\n got % x\nwant % x", i, got, f.raw)
			}
		}
	}

	// Client: per iteration Send(start info), Read Response, Send(rdma info).
	var starts, rdmas []rpingInfo
	var readResponses []capturedFPDU
	msn := MSN(1)
	for _, f := range client {
		switch f.hdr.Opcode() {
		case OpSend:
			u := UntaggedHeader(f.hdr)
			if u.MSN() != msn || u.QN() != QNSend || u.MO() != 0 || !f.hdr.Last() {
				t.Errorf("client Send: MSN %d QN %d MO %d, want MSN %d", u.MSN(), u.QN(), u.MO(), msn)
			}
			info := parseRpingInfo(t, f.payload)
			if msn%2 == 1 {
				starts = append(starts, info)
			} else {
				rdmas = append(rdmas, info)
			}
			msn++
		case OpRDMAReadResponse:
			readResponses = append(readResponses, f)
		default:
			t.Errorf("client sent %v", f.hdr.Opcode())
		}
	}
	iterations := len(readResponses)
	if iterations < 2 || len(starts) != iterations || len(rdmas) != iterations {
		t.Fatalf("client: %d reads, %d start and %d rdma adverts", iterations, len(starts), len(rdmas))
	}

	// Server: per iteration Read Request, Send, RDMA Write, Send.
	var reads, writes []capturedFPDU
	sends := 0
	for _, f := range server {
		switch f.hdr.Opcode() {
		case OpRDMAReadRequest:
			reads = append(reads, f)
		case OpRDMAWrite:
			writes = append(writes, f)
		case OpSend:
			sends++
			u := UntaggedHeader(f.hdr)
			if u.MSN() != MSN(sends) || !bytes.Equal(f.payload, make([]byte, 16)) {
				t.Errorf("server go-ahead %d: MSN %d payload % x", sends, u.MSN(), f.payload)
			}
		default:
			t.Errorf("server sent %v", f.hdr.Opcode())
		}
	}
	if len(reads) != iterations || len(writes) != iterations || sends != 2*iterations {
		t.Fatalf("server: %d reads, %d writes, %d sends for %d iterations", len(reads), len(writes), sends, iterations)
	}

	for i := 0; i < iterations; i++ {
		rr := ReadRequestHeader(reads[i].hdr)
		if UntaggedHeader(rr).MSN() != MSN(i+1) || UntaggedHeader(rr).QN() != QNReadRequest || len(reads[i].raw) != 52 {
			t.Errorf("read %d: MSN %d QN %d, %d bytes", i, UntaggedHeader(rr).MSN(), UntaggedHeader(rr).QN(), len(reads[i].raw))
		}
		// The server reads the start buffer the client advertised...
		if rr.SrcSTag() != starts[i].rkey || rr.SrcTO() != starts[i].buf || rr.Size() != starts[i].size {
			t.Errorf("read %d source %#x/%#x/%d, advert %+v", i, rr.SrcSTag(), rr.SrcTO(), rr.Size(), starts[i])
		}
		// ...and the client answers at the sink the server named.
		resp := TaggedHeader(readResponses[i].hdr)
		if resp.STag() != rr.SinkSTag() || resp.TO() != rr.SinkTO() || len(readResponses[i].payload) != int(rr.Size()) ||
			!Header(resp).Last() || len(readResponses[i].raw) != 84 {
			t.Errorf("response %d: %#x/%#x, %d bytes", i, resp.STag(), resp.TO(), len(readResponses[i].payload))
		}
		prefix := fmt.Sprintf("rdma-ping-%d: ", i)
		ping := readResponses[i].payload
		if !bytes.HasPrefix(ping, []byte(prefix)) || ping[len(ping)-1] != 0 || ping[len(prefix)] != byte('A'+i) {
			t.Errorf("ping %d: %q", i, ping)
		}
		// The server writes the same ping into the rdma buffer.
		w := TaggedHeader(writes[i].hdr)
		if w.STag() != rdmas[i].rkey || w.TO() != rdmas[i].buf || !bytes.Equal(writes[i].payload, ping) {
			t.Errorf("write %d to %#x/%#x: %q", i, w.STag(), w.TO(), writes[i].payload)
		}
	}
}
