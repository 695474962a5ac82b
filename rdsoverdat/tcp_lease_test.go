package rdsoverdat

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// leased reports whether a connection is lent to s.
func leased(s *Socket) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rxw.lease != nil
}

// leaseFixture binds a, b and c (b and c on one node) over tcp, brings the
// connection up, lets b receive one large message through a lease (so
// that b streams), then sends b a second one, which stays lent to b: the
// reader waits for b's next RecvMsg.
func leaseFixture(t *testing.T) (a, b, c *Socket, second []byte) {
	st := tcpStack(t)
	as := testAddrs(2)
	a = mustBind(t, st, ap(as[0], 0))
	b = mustBind(t, st, ap(as[1], 0))
	c = mustBind(t, st, ap(as[1], 0))
	a.SendTo([]byte("up"), b.BoundAddr(), 0)
	recvTimeout(t, b, make([]byte, 64), 5*time.Second)
	res := recvAsync(b, 64<<10)
	eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
	first := directPattern(64<<10, 1)
	a.SendTo(first, b.BoundAddr(), 0)
	if r := waitResult(t, res); r.err != nil || !bytes.Equal(r.data, first) || r.m.Addr != a.BoundAddr() {
		t.Fatalf("first message: %d bytes from %v, %v", r.n, r.m.Addr, r.err)
	}
	if n := st.Node(as[1]).Stats().RecvDirect; n != 1 {
		t.Fatalf("RecvDirect %d after the first message, want 1", n)
	}
	second = directPattern(50<<10, 2)
	a.SendTo(second, b.BoundAddr(), 0)
	eventually(t, 5*time.Second, "lease", func() bool { return leased(b) })
	return a, b, c, second
}

// A stream of large messages to a receiver in a loop goes through the
// lease, byte-exact and in order, with small messages mixed in (which the
// lessee's RecvMsg or the reader delivers the ordinary way) and a message
// bigger than the receiver's buffer (queued, returned truncated).
func TestLeaseStream(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(4<<20))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(4<<20))
	var want [][]byte
	for i := range 120 {
		size := 64 << 10
		switch i % 10 {
		case 3:
			size = 100
		case 7:
			size = 40<<10 + i
		}
		want = append(want, directPattern(size, byte(i)))
	}
	big := directPattern(80<<10, 99)
	go func() {
		for i, msg := range want {
			a.SendTo(msg, b.BoundAddr(), 0)
			if i == 60 {
				a.SendTo(big, b.BoundAddr(), 0)
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for i := 0; i < len(want); i++ {
		m := Msg{Data: buf}
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := b.RecvMsg(&m, 0)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if i == 61 && m.Flags&MsgTrunc != 0 {
			if !bytes.Equal(buf[:n], big[:len(buf)]) {
				t.Fatal("truncated message: wrong bytes")
			}
			i--
			continue
		}
		if !bytes.Equal(buf[:n], want[i]) || m.Addr != a.BoundAddr() || m.Flags != 0 {
			t.Fatalf("message %d: %d bytes from %v flags %v, want %d", i, n, m.Addr, m.Flags, len(want[i]))
		}
	}
	ns := st.Node(as[1]).Stats()
	if ns.RecvDirect == 0 {
		t.Error("no message took the lease or the direct path")
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("%d bytes still counted against SO_RCVBUF", rcv)
	}
	t.Logf("%d of %d messages read straight into the receiver's buffer", ns.RecvDirect, ns.RecvDelivered)
}

// A lessee that stops receiving holds up the messages behind its pending
// one only until the reader takes the lease back (leaseIdle); its own
// message is then queued for it.
func TestLeaseIdleReclaim(t *testing.T) {
	leakCheck(t)
	a, b, c, second := leaseFixture(t)
	other := []byte("behind the lent message")
	a.SendTo(other, c.BoundAddr(), 0)
	buf := make([]byte, 64<<10)
	if n, _ := recvTimeout(t, c, buf, 5*time.Second); !bytes.Equal(buf[:n], other) {
		t.Fatalf("other socket: %q", buf[:n])
	}
	if leased(b) {
		t.Error("b still holds the lease")
	}
	if n, _ := recvTimeout(t, b, buf, 5*time.Second); !bytes.Equal(buf[:n], second) {
		t.Fatalf("lessee's message: %d bytes", n)
	}
}

// MsgPeek and MsgDontWait do not drive a lease: they give it back, and
// the message arrives the ordinary way.
func TestLeaseRecall(t *testing.T) {
	leakCheck(t)
	for _, flags := range []MsgFlags{MsgDontWait, MsgPeek} {
		_, b, _, second := leaseFixture(t)
		buf := make([]byte, 64<<10)
		var n int
		var err error
		eventually(t, 5*time.Second, "message", func() bool {
			n, err = b.RecvMsg(&Msg{Data: buf}, flags)
			return !errors.Is(err, eAGAIN)
		})
		if err != nil || !bytes.Equal(buf[:n], second) {
			t.Fatalf("flags %v: %d bytes, %v", flags, n, err)
		}
		if leased(b) {
			t.Errorf("flags %v: b still holds the lease", flags)
		}
		if flags == MsgPeek {
			if n, _ := recvTimeout(t, b, buf, 5*time.Second); !bytes.Equal(buf[:n], second) {
				t.Fatalf("after peek: %d bytes", n)
			}
		}
	}
}

// Closing a lessee gives the connection back at once: a message behind
// the lent one reaches another socket, and the lent one is dropped with
// the closed socket.
func TestLeaseClose(t *testing.T) {
	leakCheck(t)
	a, b, c, _ := leaseFixture(t)
	b.Close()
	if leased(b) {
		t.Error("closed socket still holds the lease")
	}
	other := []byte("after close")
	a.SendTo(other, c.BoundAddr(), 0)
	buf := make([]byte, 64)
	if n, _ := recvTimeout(t, c, buf, 5*time.Second); !bytes.Equal(buf[:n], other) {
		t.Fatalf("other socket: %q", buf[:n])
	}
}
