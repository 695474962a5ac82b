package rdsoverdat

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// directStack is a tcp stack whose reader goroutines never lend their
// role (internal/tcp/tcp_reader.go), so that receivers offer their buffers.
func directStack(t *testing.T) *Stack {
	return newTestStack(t, Config{Transports: []Transport{TCP(TCPConfig{ReaderGrace: -1})}})
}

// offered reports whether s has a RecvMsg's buffer on offer.
func offered(s *Socket) bool {
	s.sock().mu.Lock()
	defer s.sock().mu.Unlock()
	return s.sock().rxw.state == waitOffered
}

// recvAsync runs one RecvMsg on s into a size-byte buffer.
type recvResult struct {
	n    int
	data []byte
	m    Msg
	err  error
}

func recvAsync(s *Socket, size int) <-chan recvResult {
	out := make(chan recvResult, 1)
	go func() {
		m := Msg{Data: make([]byte, size)}
		n, err := s.RecvMsg(&m, 0)
		out <- recvResult{n, m.Data[:n], m, err}
	}()
	return out
}

func waitResult(t *testing.T, c <-chan recvResult) recvResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("RecvMsg did not return")
		return recvResult{}
	}
}

func directPattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*13)
	}
	return p
}

// Over the tcp transport, a large message to a socket whose RecvMsg is
// already waiting lands in the caller's buffer without being queued; a
// message arriving while nobody waits is queued as before; both are
// byte-exact and in order, and nothing stays counted against SO_RCVBUF.
func TestDirectRecvTCP(t *testing.T) {
	leakCheck(t)
	st := directStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(1<<20))
	// Room for the queued messages below; the connection comes up first.
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(1<<20))
	a.SendTo([]byte("up"), b.BoundAddr(), 0)
	recvTimeout(t, b, make([]byte, 64), 5*time.Second)

	for i, size := range []int{directRecvMin, 65536, 300 << 10} {
		before := st.nodeAt(as[1]).Stats().RecvDirect
		res := recvAsync(b, 300<<10)
		eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
		msg := directPattern(size, byte(i))
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		r := waitResult(t, res)
		if r.err != nil || !bytes.Equal(r.data, msg) || r.m.Addr != a.BoundAddr() || r.m.Flags != 0 {
			t.Fatalf("size %d: %d bytes from %v, flags %v, err %v", size, r.n, r.m.Addr, r.m.Flags, r.err)
		}
		if got := st.nodeAt(as[1]).Stats().RecvDirect; got != before+1 {
			t.Errorf("size %d: RecvDirect %d -> %d, want one more", size, before, got)
		}
	}
	// Nobody waiting: queued, then read in order with direct ones mixed in.
	var want [][]byte
	for i := range 4 {
		msg := directPattern(40<<10+i, byte(10+i))
		want = append(want, msg)
		a.SendTo(msg, b.BoundAddr(), 0)
	}
	buf := make([]byte, 64<<10)
	for i := range want {
		n, _ := recvTimeout(t, b, buf, 5*time.Second)
		if !bytes.Equal(buf[:n], want[i]) {
			t.Fatalf("message %d: %d bytes, want %d", i, n, len(want[i]))
		}
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("%d bytes still counted against SO_RCVBUF", rcv)
	}
}

// directFixture binds a and b over tcp, brings their connection up and
// returns b's node's path from a's node, for a test to act as its
// transport.
func directFixture(t *testing.T) (a, b *Socket, p *connPath) {
	st := directStack(t)
	as := testAddrs(2)
	a = mustBind(t, st, ap(as[0], 0))
	b = mustBind(t, st, ap(as[1], 0))
	a.SendTo([]byte("up"), b.BoundAddr(), 0)
	recvTimeout(t, b, make([]byte, 64), 5*time.Second)
	c := st.nodeAt(as[1]).Conn(as[0], TransTCP)
	if c == nil {
		t.Fatal("no connection")
	}
	return a, b, c.Path(0)
}

// header builds the header of a data message from a to b on p, numbered
// after everything the path has received.
func directHeader(p *connPath, a, b *Socket, n int) wire.Header {
	_, rx := p.NextSeqs()
	h := make(wire.Header, wire.HeaderLen)
	h.Encode(&wire.Fields{Len: uint32(n), Sequence: rx + 100, Sport: wire.Port(a.BoundAddr().Port()), Dport: wire.Port(b.BoundAddr().Port())})
	return h
}

// The claim rules, driven directly as a transport would: only a large,
// plain, in-window data message to a waiting socket with an empty queue
// and room is claimed; a message queued the ordinary way takes the offer
// back; a failed claim leaves the receiver waiting; a receiver whose
// deadline or Close comes while its buffer is being filled returns the
// message once the claim ends, never before.
func TestDirectRecvClaim(t *testing.T) {
	leakCheck(t)
	a, b, p := directFixture(t)
	const size = 40 << 10

	// Nobody waits: no claim.
	if _, ok := p.ClaimDirect(directHeader(p, a, b, size)); ok {
		t.Fatal("claimed without a waiting receiver")
	}
	res := recvAsync(b, 64<<10)
	eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
	for _, bad := range []struct {
		name string
		h    func() wire.Header
	}{
		{"small", func() wire.Header { return directHeader(p, a, b, directRecvMin-1) }},
		{"bigger than the buffer", func() wire.Header { return directHeader(p, a, b, 64<<10+1) }},
		{"ping", func() wire.Header {
			h := directHeader(p, a, b, size)
			h.SetDport(wire.PingPort)
			return h
		}},
		{"extension header", func() wire.Header {
			h := directHeader(p, a, b, size)
			if err := h.AddExt(wire.NPathsExt(2)); err != nil {
				t.Fatal(err)
			}
			return h
		}},
		{"old retransmission", func() wire.Header {
			h := directHeader(p, a, b, size)
			h.SetSequence(0)
			h.SetFlags(wire.FlagRetransmitted)
			return h
		}},
		{"other port", func() wire.Header {
			h := directHeader(p, a, b, size)
			h.SetDport(h.Dport() + 1)
			return h
		}},
	} {
		if _, ok := p.ClaimDirect(bad.h()); ok {
			t.Fatalf("%s: claimed", bad.name)
		}
	}

	// A failed claim: the receiver keeps waiting, offers again, and a
	// message queued the ordinary way takes the offer back.
	d, ok := p.ClaimDirect(directHeader(p, a, b, size))
	if !ok {
		t.Fatal("not claimed")
	}
	if _, ok := p.ClaimDirect(directHeader(p, a, b, size)); ok {
		t.Fatal("claimed twice")
	}
	d.Done(false)
	eventually(t, 5*time.Second, "offer again", func() bool { return offered(b) })
	small := directPattern(100, 1)
	a.SendTo(small, b.BoundAddr(), 0)
	if r := waitResult(t, res); r.err != nil || !bytes.Equal(r.data, small) {
		t.Fatalf("after a failed claim: %d bytes, %v", r.n, r.err)
	}

	// A deadline while the buffer is filled: RecvMsg returns the message.
	res = recvAsync(b, 64<<10)
	eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
	if d, ok = p.ClaimDirect(directHeader(p, a, b, size)); !ok {
		t.Fatal("not claimed")
	}
	b.SetReadDeadline(time.Now().Add(-time.Second))
	select {
	case r := <-res:
		t.Fatalf("RecvMsg returned during the claim: %d, %v", r.n, r.err)
	case <-time.After(20 * time.Millisecond):
	}
	copy(d.Buf, directPattern(size, 7))
	d.Done(true)
	if r := waitResult(t, res); r.err != nil || !bytes.Equal(r.data, directPattern(size, 7)) || r.m.Addr != a.BoundAddr() {
		t.Fatalf("claimed then deadline: %d bytes from %v, %v", r.n, r.m.Addr, r.err)
	}
	b.SetReadDeadline(time.Time{})

	// Close during a claim: the message still reaches the caller; the
	// next receive fails.
	res = recvAsync(b, 64<<10)
	eventually(t, 5*time.Second, "offer", func() bool { return offered(b) })
	if d, ok = p.ClaimDirect(directHeader(p, a, b, size)); !ok {
		t.Fatal("not claimed")
	}
	b.Close()
	d.Done(true)
	if r := waitResult(t, res); r.err != nil || r.n != size {
		t.Fatalf("claimed then closed: %d bytes, %v", r.n, r.err)
	}
	if _, err := b.RecvMsg(&Msg{Data: make([]byte, 64<<10)}, 0); !errors.Is(err, errClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// Large messages through a waiting receiver allocate nothing either.
func TestDirectRecvAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	dst := b.BoundAddr()
	msg := make([]byte, 64<<10)
	m := Msg{Data: make([]byte, 64<<10)}
	round := func() {
		if _, err := a.SendTo(msg, dst, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.RecvMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		round()
	}
	eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
	if n := testing.AllocsPerRun(200, round); n > 0.05 {
		t.Errorf("%.2f allocs per 64 KiB send+recv", n)
	}
	t.Logf("%d of %d messages took the direct path", st.nodeAt(as[1]).Stats().RecvDirect, st.nodeAt(as[1]).Stats().RecvDelivered)
}
