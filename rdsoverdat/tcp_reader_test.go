package rdsoverdat

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/tcp"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// graceStack is a tcp stack whose lent reader roles stay lent for grace.
func graceStack(t *testing.T, grace time.Duration) *Stack {
	return newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{ReaderGrace: grace})}})
}

// curReader returns the tcp connection that carries path 0 from node n
// to faddr, once there is one, as a handle on its reader role.
func curReader(t *testing.T, n *rdsNode, faddr netip.Addr) tcp.Conn {
	t.Helper()
	var r tcp.Conn
	eventually(t, 5*time.Second, "a tcp connection", func() bool {
		c := n.Conn(faddr, TransTCP)
		if c == nil {
			return false
		}
		var ok bool
		r, ok = tcp.CurrentConn((*xpath)(c.Path(0)))
		return ok
	})
	return r
}

// lentTo reports whether a role is lent to s.
func lentTo(s *Socket) bool {
	s.sock().mu.Lock()
	defer s.sock().mu.Unlock()
	return s.sock().reader.lent != nil
}

// rawPeer connects to node to's tcp port from address from (the smaller
// one, so that the node accepts) as an rds_tcp peer would, and discards
// what the node sends; the test writes messages on the returned
// connection.
func rawPeer(t *testing.T, from, to netip.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: from.AsSlice()}}
	c, err := d.Dial("tcp4", netip.AddrPortFrom(to, wire.TCPPort).String())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, c)
		close(done)
	}()
	t.Cleanup(func() {
		c.Close()
		<-done
	})
	return c
}

// rawMsg is a data message as a peer writes it.
func rawMsg(seq wire.Seq, sport, dport uint16, payload []byte) []byte {
	h := make(wire.Header, wire.HeaderLen)
	h.Encode(&wire.Fields{Len: uint32(len(payload)), Sequence: seq, Sport: wire.Port(sport), Dport: wire.Port(dport)})
	return append([]byte(h), payload...)
}

func mustWrite(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// A steady stream to one receiver: after the first message the receiver
// reads the connection itself, and the reader goroutine neither hands
// messages over nor takes the role back.
func TestTCPReaderSteadyStream(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Second)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(4<<20))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(8<<20))
	const n = 300
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := a.SendTo(directPattern(64<<10, byte(i)), b.BoundAddr(), 0); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	buf := make([]byte, 64<<10)
	for i := range n {
		k, _ := recvTimeout(t, b, buf, 10*time.Second)
		if !bytes.Equal(buf[:k], directPattern(64<<10, byte(i))) {
			t.Fatalf("message %d differs (%d bytes)", i, k)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	r := curReader(t, st.nodeAt(as[1]), as[0])
	lends, held, resumes := r.RoleCounts()
	t.Logf("lends %d, messages read by RecvMsg %d, take-backs %d", lends, held, resumes)
	if held < n-5 || lends > 5 || resumes > 0 {
		t.Errorf("of %d messages RecvMsg read %d itself; the reader goroutine lent the role %d times and took it back %d times", n, held, lends, resumes)
	}
}

// While a RecvMsg of one socket reads the connection, another socket's
// messages reach it through that RecvMsg; a message from another
// connection interrupts it.
func TestTCPReaderOtherSockets(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Hour) // the reader goroutine stays parked
	as := testAddrs(3)
	a := mustBind(t, st, ap(as[0], 0))
	c := mustBind(t, st, ap(as[2], 0))
	x := mustBind(t, st, ap(as[1], 0))
	y := mustBind(t, st, ap(as[1], 0))
	res := recvAsync(x, 64)
	eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
	a.SendTo([]byte("first"), x.BoundAddr(), 0)
	if r := waitResult(t, res); r.err != nil || string(r.data) != "first" {
		t.Fatalf("first: %q, %v", r.data, r.err)
	}
	eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
	role := curReader(t, st.nodeAt(as[1]), as[0])
	res = recvAsync(x, 64)
	eventually(t, 5*time.Second, "x reading", func() bool { return role.ReaderState() == tcp.RoleRecv })
	_, held, _ := role.RoleCounts()

	for i := range 3 {
		msg := []byte{'y', byte(i)}
		a.SendTo(msg, y.BoundAddr(), 0)
		k, _ := recvTimeout(t, y, make([]byte, 64), 5*time.Second)
		if k != 2 {
			t.Fatalf("y got %d bytes", k)
		}
	}
	// At least y's three (a late handshake pong may come the same way).
	if _, now, _ := role.RoleCounts(); now-held < 3 {
		t.Errorf("x's RecvMsg read %d of y's 3 messages", now-held)
	}
	select {
	case r := <-res:
		t.Fatalf("x returned %q, %v", r.data, r.err)
	default:
	}
	c.SendTo([]byte("from c"), x.BoundAddr(), 0)
	if r := waitResult(t, res); r.err != nil || string(r.data) != "from c" || r.m.Addr != c.BoundAddr() {
		t.Fatalf("from c: %q from %v, %v", r.data, r.m.Addr, r.err)
	}
	a.SendTo([]byte("from a"), x.BoundAddr(), 0)
	if k, from := recvTimeout(t, x, make([]byte, 64), 5*time.Second); k != 6 || from != a.BoundAddr() {
		t.Fatalf("from a: %d bytes from %v", k, from)
	}
}

// A receiver that stops receiving leaves the role idle; the reader
// goroutine takes it back after the grace, and at once when the socket
// reads with MsgDontWait, polls or closes.
func TestTCPReaderGiveBack(t *testing.T) {
	leakCheck(t)
	for _, give := range []string{"grace", "MsgDontWait", "Poll", "Close"} {
		t.Run(give, func(t *testing.T) {
			grace := time.Hour
			if give == "grace" {
				grace = 20 * time.Millisecond
			}
			st := graceStack(t, grace)
			as := testAddrs(2)
			a := mustBind(t, st, ap(as[0], 0))
			x := mustBind(t, st, ap(as[1], 0))
			y := mustBind(t, st, ap(as[1], 0))
			res := recvAsync(x, 64)
			eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
			a.SendTo([]byte("x"), x.BoundAddr(), 0)
			if r := waitResult(t, res); r.err != nil {
				t.Fatal(r.err)
			}
			eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
			r := curReader(t, st.nodeAt(as[1]), as[0])
			switch give {
			case "grace":
			case "MsgDontWait":
				if _, err := x.RecvMsg(&Msg{Data: make([]byte, 64)}, MsgDontWait); !errors.Is(err, eAGAIN) {
					t.Fatalf("MsgDontWait: %v", err)
				}
			case "Poll":
				x.Poll()
			case "Close":
				x.Close()
			}
			if give != "grace" {
				if s := r.ReaderState(); s != tcp.RoleReader {
					t.Fatalf("role %d, want the reader goroutine's", s)
				}
			}
			a.SendTo([]byte("y"), y.BoundAddr(), 0)
			recvTimeout(t, y, make([]byte, 64), 2*time.Second)
			if _, _, resumes := r.RoleCounts(); give == "grace" && resumes == 0 {
				t.Error("y's message came without the reader goroutine taking the role back")
			}
		})
	}
}

// A RecvMsg reading its own message is interrupted in the middle of the
// payload by its deadline, then by Close: it returns at once, and the
// message is completed by whoever reads next, byte for byte.
func TestTCPReaderMidMessage(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Hour)
	as := testAddrs(2)
	x := mustBind(t, st, ap(as[1], 0))
	y := mustBind(t, st, ap(as[1], 0))
	peer := rawPeer(t, as[0], as[1])
	xp, yp := x.BoundAddr().Port(), y.BoundAddr().Port()
	seq := wire.Seq(0)
	msg := func(dport uint16, p []byte) []byte {
		seq++
		return rawMsg(seq, 4000, dport, p)
	}
	lent := func() tcp.Conn {
		t.Helper()
		if !lentTo(x) {
			res := recvAsync(x, 64<<10)
			eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
			mustWrite(t, peer, msg(xp, []byte("lend")))
			if r := waitResult(t, res); r.err != nil || string(r.data) != "lend" {
				t.Fatalf("lend: %q, %v", r.data, r.err)
			}
			eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
		}
		return curReader(t, st.nodeAt(as[1]), as[0])
	}
	big := directPattern(60<<10, 3)
	whole := msg(xp, big)
	half := wire.HeaderLen + len(big)/2

	// The deadline: RecvMsg returns; the next one gets the message.
	r := lent()
	res := recvAsync(x, 64<<10)
	eventually(t, 5*time.Second, "x reading", func() bool { return r.ReaderState() == tcp.RoleRecv })
	mustWrite(t, peer, whole[:half])
	time.Sleep(100 * time.Millisecond) // x reads the first half
	x.SetReadDeadline(time.Now())
	if r := waitResult(t, res); !errors.Is(r.err, errDeadline) {
		t.Fatalf("deadline in the middle: %d bytes, %v", r.n, r.err)
	}
	x.SetReadDeadline(time.Time{})
	mustWrite(t, peer, whole[half:])
	if k, from := recvTimeout(t, x, make([]byte, 64<<10), 5*time.Second); k != len(big) || from.Port() != 4000 {
		t.Fatalf("after the deadline: %d bytes from %v", k, from)
	}

	// Close: RecvMsg returns; the reader goroutine finishes the message
	// (dropped: x is gone) and reads on.
	r = lent()
	res = recvAsync(x, 64<<10)
	eventually(t, 5*time.Second, "x reading", func() bool { return r.ReaderState() == tcp.RoleRecv })
	whole = msg(xp, big)
	mustWrite(t, peer, whole[:half])
	time.Sleep(100 * time.Millisecond)
	x.Close()
	if r := waitResult(t, res); !errors.Is(r.err, errClosed) {
		t.Fatalf("close in the middle: %d bytes, %v", r.n, r.err)
	}
	mustWrite(t, peer, append(whole[half:], msg(yp, big)...))
	buf := make([]byte, 64<<10)
	if k, _ := recvTimeout(t, y, buf, 5*time.Second); !bytes.Equal(buf[:k], big) {
		t.Fatalf("y after x closed: %d bytes", k)
	}
}

// A connection that resets under a reading RecvMsg: the receiver gets
// the following messages over the new connection, and reads that one
// itself after its first message.
func TestTCPReaderReconnect(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Hour)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	x := mustBind(t, st, ap(as[1], 0))
	nb := st.nodeAt(as[1])
	for round := range 3 {
		if round == 0 {
			res := recvAsync(x, 64)
			eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
			a.SendTo([]byte("lend"), x.BoundAddr(), 0)
			waitResult(t, res)
		}
		// Later rounds: the message after the reset lent the new
		// connection's role.
		eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
		r := curReader(t, nb, as[0])
		res := recvAsync(x, 64)
		eventually(t, 5*time.Second, "x reading", func() bool { return r.ReaderState() == tcp.RoleRecv })
		nb.Conn(as[0], TransTCP).Reset()
		eventually(t, 5*time.Second, "the old reader's end", func() bool { return r.ReaderState() == tcp.RoleDead })
		a.SendTo([]byte("after"), x.BoundAddr(), 0)
		if r := waitResult(t, res); r.err != nil || string(r.data) != "after" {
			t.Fatalf("round %d: %q, %v", round, r.data, r.err)
		}
		if curReader(t, nb, as[0]) == r {
			t.Fatalf("round %d: the same connection", round)
		}
	}
}

// A RecvMsg running the role with MsgPeek, or with a buffer too short,
// queues its message the ordinary way and returns it as recvmsg(2) does;
// the next RecvMsg gets it whole.
func TestTCPReaderPeekTrunc(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Hour)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	x := mustBind(t, st, ap(as[1], 0))
	res := recvAsync(x, 64)
	eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
	a.SendTo([]byte("lend"), x.BoundAddr(), 0)
	waitResult(t, res)
	eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
	r := curReader(t, st.nodeAt(as[1]), as[0])
	for _, c := range []struct {
		name  string
		size  int
		flags MsgFlags
		want  int
		wantF MsgFlags
	}{
		{"peek", 64, MsgPeek, 5, 0},
		{"short", 3, 0, 3, MsgTrunc},
		{"short, MsgTrunc", 3, MsgTrunc, 5, MsgTrunc},
	} {
		_, held, _ := r.RoleCounts()
		out := make(chan recvResult, 1)
		go func() {
			m := Msg{Data: make([]byte, c.size)}
			n, err := x.RecvMsg(&m, c.flags)
			out <- recvResult{n, nil, m, err}
		}()
		eventually(t, 5*time.Second, "x reading", func() bool { return r.ReaderState() == tcp.RoleRecv })
		a.SendTo([]byte("hello"), x.BoundAddr(), 0)
		got := waitResult(t, out)
		if got.err != nil || got.n != c.want || got.m.Flags != c.wantF || got.m.Addr != a.BoundAddr() {
			t.Fatalf("%s: %d bytes, flags %v from %v, %v", c.name, got.n, got.m.Flags, got.m.Addr, got.err)
		}
		if _, now, _ := r.RoleCounts(); now == held {
			t.Fatalf("%s: the message did not come through the RecvMsg", c.name)
		}
		if c.flags&MsgPeek != 0 {
			if n, _ := recvTimeout(t, x, make([]byte, 64), 5*time.Second); n != 5 {
				t.Fatalf("after the peek: %d bytes", n)
			}
		}
	}
}

// Map changes do not wake a receiver that gets no notification from
// them: woken for nothing, it is off the count of waiting receivers for
// a moment, and the reader goroutine that delivers its message then does
// not lend it the role (TestTCPReaderGiveBack timed out so under load,
// a new connection's congestion maps arriving as its first message did).
func TestTCPReaderLendDespiteMapChanges(t *testing.T) {
	leakCheck(t)
	st := graceStack(t, time.Hour)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	x := mustBind(t, st, ap(as[1], 0))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			st.congUpdated(0)
			runtime.Gosched()
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	const rounds = 200
	missed := 0
	for range rounds {
		res := recvAsync(x, 64)
		eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
		a.SendTo([]byte("x"), x.BoundAddr(), 0)
		if r := waitResult(t, res); r.err != nil {
			t.Fatal(r.err)
		}
		end := time.Now().Add(time.Second)
		for !lentTo(x) && time.Now().Before(end) {
			time.Sleep(time.Millisecond)
		}
		if !lentTo(x) {
			missed++
		}
		x.Poll() // the role goes back to the reader goroutine
	}
	if missed > 0 {
		t.Errorf("the role was not lent to the waiting receiver in %d of %d rounds", missed, rounds)
	}
}
