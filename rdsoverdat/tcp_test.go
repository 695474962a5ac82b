package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"
	"time"
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
