package iwarp

import (
	"bytes"
	"io"
	"net"
	"testing"
)

// Allocation guards for the per-FPDU hot paths: encoding and writing, and
// reading and decoding, must not allocate in steady state.

func TestFrameWriterAllocs(t *testing.T) {
	hdr := sendHeader(OpSend, true, 1, 0, 0)
	small := make([]byte, 64)
	large := make([]byte, 16<<10) // referenced, not copied
	fw := NewFrameWriter(io.Discard, WriterOptions{CRC: true})
	for name, payload := range map[string][]byte{"64B": small, "16KiB": large} {
		allocs := testing.AllocsPerRun(100, func() {
			for i := 0; i < 8; i++ {
				if err := fw.Frame(hdr, payload); err != nil {
					t.Fatal(err)
				}
			}
			if err := fw.Flush(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per batch", name, allocs)
		}
	}
}

func TestFrameReaderAllocs(t *testing.T) {
	stream := encodeFrames(t, true,
		testFrame{sendHeader(OpSend, true, 1, 0, 0), make([]byte, 64)},
		testFrame{taggedHeader(OpRDMAWrite, true, 1, 0), make([]byte, 9000)},
		testFrame{readRequestHeader(ReadRequestFields{MSN: 1}), nil})
	fr := NewFrameReader(&loopReader{data: stream}, ReaderOptions{CRC: true})
	dst := make([]byte, 9000)
	allocs := testing.AllocsPerRun(200, func() {
		for i := 0; i < 3; i++ {
			h, err := fr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fr.ReadPayload(dst[:h.PayloadLen()]); err != nil {
				t.Fatal(err)
			}
			if err := fr.Finish(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 3 frames", allocs)
	}
}

func TestDecodeAllocs(t *testing.T) {
	rr := readRequestHeader(ReadRequestFields{MSN: 1, Size: 64})
	bad := unhex(t, "0012 4148")
	var sink uint64
	allocs := testing.AllocsPerRun(100, func() {
		_, _, err := CheckHeader(rr)
		_, _, err2 := CheckHeader(bad)
		if err != nil || err2 == nil {
			t.Fatal("CheckHeader")
		}
		r := ReadRequestHeader(rr)
		sink += r.SinkTO() + r.SrcTO() + uint64(r.Size()) + uint64(UntaggedHeader(rr).MSN())
	})
	if allocs != 0 {
		t.Errorf("%v allocations", allocs)
	}
}

// On a *net.TCPConn, Flush with referenced payloads is one writev and
// allocates nothing once the connection's iovec cache is warm. The writes
// are small enough to sit in the socket buffers, so no reader goroutine is
// needed; the bytes are checked afterwards.
func TestFrameWriterTCPWritevAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback TCP:", err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if _, ok := client.(*net.TCPConn); !ok {
		t.Fatalf("%T", client)
	}

	hdr := taggedHeader(OpRDMAWrite, true, 0x100, 0)
	payload := bytes.Repeat([]byte("x"), 2000) // above the copy threshold: referenced
	send := sendHeader(OpSend, true, 1, 0, 0)
	fw := NewFrameWriter(client, WriterOptions{CRC: true})
	write := func() {
		if err := fw.Frame(send, payload[:64]); err != nil {
			t.Fatal(err)
		}
		if err := fw.Frame(hdr, payload); err != nil {
			t.Fatal(err)
		}
		if err := fw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	const runs = 20
	allocs := testing.AllocsPerRun(runs, write) // AllocsPerRun adds one warm-up run
	if allocs != 0 {
		t.Errorf("%v allocations per writev flush", allocs)
	}
	client.Close()

	fr := NewFrameReader(server, ReaderOptions{CRC: true})
	dst := make([]byte, len(payload))
	for i := 0; i < 2*(runs+1); i++ {
		h, err := fr.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		n, _ := fr.ReadPayload(dst)
		if err := fr.Finish(); err != nil || !bytes.Equal(dst[:n], payload[:n]) {
			t.Fatalf("frame %d (%v): %v", i, h.Opcode(), err)
		}
	}
	if _, err := fr.Next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}
