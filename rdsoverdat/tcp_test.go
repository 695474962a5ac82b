package rdsoverdat

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

func tcpStack(t *testing.T) *Stack {
	return newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{})}})
}

func TestTCPSendRecv(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	for _, dir := range [][2]int{{0, 1}, {1, 0}} { // smaller->larger and larger->smaller first
		t.Run(fmt.Sprint(dir), func(t *testing.T) {
			a := mustBind(t, st, ap(as[dir[0]], 0))
			b := mustBind(t, st, ap(as[dir[1]], 0))
			buf := make([]byte, 70000)
			for i, size := range []int{0, 1, 100, 4096, 65536, 8192} {
				msg := bytes.Repeat([]byte{byte(i + 1)}, size)
				if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
					t.Fatal(err)
				}
				n, from := recvTimeout(t, b, buf, 5*time.Second)
				if !bytes.Equal(buf[:n], msg) || from != a.BoundAddr() {
					t.Fatalf("size %d: got %d bytes from %v", size, n, from)
				}
			}
			eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
		})
	}
	if t.Failed() {
		return // a subtest failed, perhaps before any node existed
	}
	n := st.nodeAt(as[0])
	if n == nil {
		t.Fatal("no node for", as[0])
	}
	c := n.Conn(as[1], TransTCP)
	if c == nil || !c.Path(0).IsUp() {
		t.Fatal("no tcp connection up")
	}
	eventually(t, 5*time.Second, "handshake", func() bool { return c.NPaths() == 1 && c.PeerGenNum() == st.GenNum() })
}

func TestTCPReconnectRetransmit(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[1], 4000)) // the larger address sends
	b := mustBind(t, st, ap(as[0], 5000))
	const N = 2000
	done := make(chan error, 1)
	go func() {
		for i := range N {
			if _, err := a.SendTo([]byte(fmt.Sprint(i)), b.BoundAddr(), 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, 64)
	na, nb := st.nodeAt(as[1]), st.nodeAt(as[0])
	for i := range N {
		if i%300 == 150 {
			if i%600 == 150 {
				na.Conn(as[0], TransTCP).Reset()
			} else {
				nb.Conn(as[1], TransTCP).Reset()
			}
		}
		n, _ := recvTimeout(t, b, buf, 10*time.Second)
		if got := string(buf[:n]); got != fmt.Sprint(i) {
			t.Fatalf("message %d: got %q", i, got)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
	t.Logf("a: %+v", na.Stats())
	t.Logf("b: %+v", nb.Stats())
}

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
	var msgs []*message
	for i, n := range sizes {
		m := newMessage(n)
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
				if err := b.write(wraw); err != nil {
					errc <- err
					return
				}
			}
			b.add(m, m.hdr[:], m.buf)
			m.release() // the batch holds what it references
		}
		errc <- b.write(wraw)
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
	if !bytes.Equal(got, want) {
		t.Fatalf("stream differs: got %d bytes, want %d", len(got), len(want))
	}
	wc.Close()
	if err := rd.readFull(hdr[:]); err != io.EOF {
		t.Fatalf("after the last message: %v, want EOF", err)
	}
}
