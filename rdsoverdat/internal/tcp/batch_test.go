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
	wc, rc := tcpPair(t)

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

// A lone message the socket does not take whole, written without waiting
// (a sender's own write), leaves its rest in the staging buffer as the
// batch's unwritten part, and the next write finishes it: the stream stays
// byte-exact and the message is not referenced after writeLone.
func TestTCPWriteLoneStagesRest(t *testing.T) {
	leakCheck(t)
	wc, rc := tcpPair(t)
	wc.(*net.TCPConn).SetWriteBuffer(4096)
	rc.(*net.TCPConn).SetReadBuffer(4096)
	wraw, err := wc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}

	b := newTxBatch()
	var want []byte
	var msgs []*testMsg
	for i := 0; !b.pending(); i++ {
		if i == 1<<16 {
			t.Fatal("the socket took 64 MiB without a reader")
		}
		m := newTestMsg(1000)
		for j := range m.buf {
			m.buf[j] = byte(i + j)
		}
		m.Header().Encode(&wire.Fields{Len: 1000, Sequence: wire.Seq(i + 1)})
		want = append(append(want, m.hdr[:]...), m.buf...)
		done, err := b.writeLone(wraw, m.hdr[:], m.buf, false)
		if err != nil {
			t.Fatal(err)
		}
		if done == b.pending() {
			t.Fatalf("message %d: done %v, pending %v", i, done, b.pending())
		}
		if done && b.bytes != 0 {
			t.Fatalf("message %d written whole, %d bytes left in the batch", i, b.bytes)
		}
		m.Release()
		if n := m.refs.Load(); n != 0 {
			t.Fatalf("message %d: %d references left", i, n)
		}
	}
	if b.bytes == 0 || b.bytes > wire.HeaderLen+1000 {
		t.Fatalf("the unwritten rest is %d bytes", b.bytes)
	}

	// Then lone writes that wait, into the full socket, which the reader
	// drains meanwhile: they wait for room, or finish a rest at once.
	rest := len(want)
	for i := 0; i < 20; i++ {
		n := tcpDirectMin - 1 - i
		m := newTestMsg(n)
		for j := range m.buf {
			m.buf[j] = byte(3*i + j)
		}
		m.Header().Encode(&wire.Fields{Len: uint32(n), Sequence: wire.Seq(i + 1)})
		want = append(append(want, m.hdr[:]...), m.buf...)
		msgs = append(msgs, m)
	}
	got := make(chan []byte, 1)
	go func() {
		p := make([]byte, len(want))
		n, _ := io.ReadFull(rc, p)
		got <- p[:n]
	}()
	if done, err := b.write(wraw, true); err != nil || !done {
		t.Fatalf("finishing the rest: done %v, %v", done, err)
	}
	if b.pending() || b.bytes != 0 {
		t.Fatalf("after the write: pending %v, %d bytes", b.pending(), b.bytes)
	}
	for i, m := range msgs {
		if done, err := b.writeLone(wraw, m.hdr[:], m.buf, true); err != nil || !done || b.pending() {
			t.Fatalf("waiting lone write %d: done %v, pending %v, %v", i, done, b.pending(), err)
		}
	}
	if g := <-got; !bytes.Equal(g[:rest], want[:rest]) || !bytes.Equal(g[rest:], want[rest:]) {
		t.Fatalf("stream differs: got %d bytes, want %d", len(g), len(want))
	}
}

// tcpPair returns the two ends of a loopback TCP connection, closed when
// the test ends: wc the dialer's, rc the acceptor's.
func tcpPair(t *testing.T) (wc, rc net.Conn) {
	t.Helper()
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
	wc, err = net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wc.Close() })
	if rc = <-accepted; rc == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { rc.Close() })
	return wc, rc
}
