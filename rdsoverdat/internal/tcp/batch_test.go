package tcp

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The writer's batches and the reader's direct reads keep the stream
// byte-exact for every mix of small (staged) and large (direct) payloads,
// however the socket splits it.
func TestTCPBatchAndReaderStream(t *testing.T) {
	leakCheck(t)
	// Without a RawConn the reader reads a payload alone; with one, the
	// read that ends a large payload also takes the next header (readv).
	for _, readv := range []bool{false, true} {
		t.Run(fmt.Sprint("readv=", readv), func(t *testing.T) { testBatchAndReaderStream(t, readv) })
	}
}

func testBatchAndReaderStream(t *testing.T, readv bool) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	wc, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close()
	rc := <-accepted
	if rc == nil {
		t.Fatal("accept failed")
	}
	defer rc.Close()

	sizes := []int{0, 1, 64, tcpDirectMin - 1, tcpDirectMin, 70000, 48, tcpDirectReadMin - 1, tcpDirectReadMin, 300 << 10, 5, tcpBufSize, 3}
	var want []byte
	var msgs []*testMsg
	for i, n := range sizes {
		m := newTestMsg(n)
		for j := range m.buf {
			m.buf[j] = byte(i*7 + j)
		}
		m.Header().Encode(&wire.Fields{Len: uint32(n), Sequence: wire.Seq(i + 1)})
		want = append(append(want, m.hdr[:]...), m.buf...)
		msgs = append(msgs, m)
	}
	errc := make(chan error, 1)
	wraw, err := wc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		b := newTxBatch()
		for _, m := range msgs {
			if !b.fits(len(m.buf)) {
				if _, err := b.write(wraw, true); err != nil {
					errc <- err
					return
				}
			}
			b.add(m, m.hdr[:], m.buf)
			m.Release() // the batch holds what it references
		}
		_, err := b.write(wraw, true)
		errc <- err
	}()

	rd := newTCPReader(rc, nil)
	if readv {
		raw, err := rc.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rd = newTCPReader(rc, raw)
	}
	var got []byte
	var hdr [wire.HeaderLen]byte
	for range sizes {
		if err := rd.readFull(hdr[:]); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, wire.Header(hdr[:]).Len())
		if err := rd.readFull(p); err != nil {
			t.Fatal(err)
		}
		rd.big = len(p) >= tcpDirectReadMin
		got = append(append(got, hdr[:]...), p...)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if n := m.refs.Load(); n != 0 {
			t.Errorf("message %d: %d references left after the batch was written", i, n)
		}
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stream differs: got %d bytes, want %d", len(got), len(want))
	}
	wc.Close()
	if err := rd.readFull(hdr[:]); err != io.EOF {
		t.Fatalf("after the last message: %v, want EOF", err)
	}
}
