package rdsoverdat

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
)

// The dat transport's event role (internal/dat/dat_role.go): a RecvMsg
// lent the role takes the node's events itself.

// datRoleNode is the dat transport of the node of s, with its lent
// role kept for grace.
func datRoleNode(t *testing.T, st *Stack, s *Socket, grace time.Duration) rdsdat.Node {
	t.Helper()
	dn := datNodeOf(t, st.nodeAt(s.BoundAddr().Addr()))
	dn.SetRoleGrace(grace)
	return dn
}

// datLent binds a on one address and x on another of a dat stack of
// cfg, and lends x's node's role to x (no grace check).
func datLent(t *testing.T, cfg DATConfig) (st *Stack, as []netip.Addr, a, x *Socket, dn rdsdat.Node) {
	t.Helper()
	st = datStack(t, cfg)
	as = testAddrs(2)
	a = mustBind(t, st, ap(as[0], 0))
	x = mustBind(t, st, ap(as[1], 0))
	dn = datRoleNode(t, st, x, time.Hour)
	datLend(t, a, x)
	return st, as, a, x, dn
}

// datLend has a RecvMsg of x wait, sends it a message from a and returns
// once the role of x's node is lent to x.
func datLend(t *testing.T, a, x *Socket) {
	t.Helper()
	res := recvAsync(x, 64)
	eventually(t, 5*time.Second, "x waiting", func() bool { return x.sock().reader.waiters.Load() > 0 })
	if _, err := a.SendTo([]byte("lend"), x.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if r := waitResult(t, res); r.err != nil || string(r.data) != "lend" {
		t.Fatalf("lend: %q, %v", r.data, r.err)
	}
	eventually(t, 5*time.Second, "the role lent to x", func() bool { return lentTo(x) })
}

// Request and response: the receivers on both nodes take their node's
// events themselves, and every reply comes back intact and in order.
func TestDATRoleRoundTrips(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		x := mustBind(t, st, ap(as[1], 0))
		datRoleNode(t, st, a, time.Hour)
		datRoleNode(t, st, x, time.Hour)
		go echo(x, 256)
		const n = 300
		m := Msg{Data: make([]byte, 256)}
		for i := range n {
			want := []byte(fmt.Sprintf("request %d", i))
			if _, err := a.SendTo(want, x.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
			k, err := a.RecvMsg(&m, 0)
			if err != nil || !bytes.Equal(m.Data[:k], want) || m.Addr != x.BoundAddr() {
				t.Fatalf("reply %d: %q from %v, %v", i, m.Data[:k], m.Addr, err)
			}
		}
		for _, s := range []*Socket{a, x} {
			lends, held, resumes := datNodeOf(t, st.nodeAt(s.BoundAddr().Addr())).RoleCounts()
			t.Logf("%v: lends %d, RecvMsg runs %d, take-backs %d", s.BoundAddr(), lends, held, resumes)
			if lends == 0 || held == 0 {
				t.Errorf("%v: the role was lent %d times and run by RecvMsg %d times", s.BoundAddr(), lends, held)
			}
		}
	})
}

// A message that comes another way (the loop transport) interrupts a
// RecvMsg of x that holds the role; while one holds it, another socket's
// messages reach it through that RecvMsg, and x's RecvMsg does not
// return for them.
func TestDATRoleOtherSockets(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		x := mustBind(t, st, ap(as[1], 0))
		y := mustBind(t, st, ap(as[1], 0))
		z := mustBind(t, st, ap(as[1], 0))
		dn := datRoleNode(t, st, x, time.Hour)
		datLend(t, a, x)
		res := recvAsync(x, 64)
		eventually(t, 5*time.Second, "x holding the role", func() bool { return dn.RoleState() == "recv" })
		_, held, _ := dn.RoleCounts()
		z.SendTo([]byte("from z"), x.BoundAddr(), 0)
		if r := waitResult(t, res); r.err != nil || string(r.data) != "from z" || r.m.Addr != z.BoundAddr() {
			t.Fatalf("from z: %q from %v, %v", r.data, r.m.Addr, r.err)
		}
		if _, now, _ := dn.RoleCounts(); now <= held {
			t.Errorf("x's message came without the holder returning (RecvMsg runs %d before and after)", now)
		}

		res = recvAsync(x, 64)
		eventually(t, 5*time.Second, "x holding the role", func() bool { return dn.RoleState() == "recv" })
		for i := range 3 {
			msg := []byte{'y', byte(i)}
			a.SendTo(msg, y.BoundAddr(), 0)
			if k, _ := recvTimeout(t, y, make([]byte, 64), 5*time.Second); k != 2 {
				t.Fatalf("y got %d bytes", k)
			}
		}
		select {
		case r := <-res:
			t.Fatalf("x returned %q, %v", r.data, r.err)
		default:
		}
		a.SendTo([]byte("from a"), x.BoundAddr(), 0)
		if r := waitResult(t, res); r.err != nil || string(r.data) != "from a" {
			t.Fatalf("from a: %q, %v", r.data, r.err)
		}
	})
}

// A receiver that stops receiving leaves the role idle; the event
// goroutine takes it back after the grace, and at once when the socket
// reads with MsgDontWait or a deadline, polls, closes or blocks in a
// send.
func TestDATRoleGiveBack(t *testing.T) {
	leakCheck(t)
	for _, give := range []string{"grace", "MsgDontWait", "deadline", "Poll", "Close", "send"} {
		t.Run(give, func(t *testing.T) {
			grace := time.Hour
			if give == "grace" {
				grace = 20 * time.Millisecond
			}
			st := datStack(t, DATConfig{})
			as := testAddrs(2)
			a := mustBind(t, st, ap(as[0], 0))
			x := mustBind(t, st, ap(as[1], 0))
			y := mustBind(t, st, ap(as[1], 0))
			dn := datRoleNode(t, st, x, grace)
			datLend(t, a, x)
			switch give {
			case "grace":
				eventually(t, 5*time.Second, "the role taken back", func() bool {
					_, _, resumes := dn.RoleCounts()
					return resumes > 0
				})
			case "MsgDontWait":
				if _, err := x.RecvMsg(&Msg{Data: make([]byte, 64)}, MsgDontWait); !errors.Is(err, eAGAIN) {
					t.Fatalf("MsgDontWait: %v", err)
				}
			case "deadline":
				x.SetReadDeadline(time.Now().Add(time.Hour))
				res := recvAsync(x, 64)
				eventually(t, 5*time.Second, "the role given back", func() bool { return dn.RoleState() == "goroutine" })
				a.SendTo([]byte("x"), x.BoundAddr(), 0)
				if r := waitResult(t, res); r.err != nil || string(r.data) != "x" {
					t.Fatalf("with a deadline: %q, %v", r.data, r.err)
				}
				return // the role is lent to x again, for an hour
			case "Poll":
				x.Poll()
			case "Close":
				x.Close()
			case "send":
				// The second message waits for the first one's ack,
				// which only the node's events bring.
				x.SetOption(SendBuffer(4))
				x.SetWriteDeadline(time.Now().Add(10 * time.Second))
				for i := range 2 {
					if _, err := x.SendTo([]byte("to a"), a.BoundAddr(), 0); err != nil {
						t.Fatalf("send %d: %v", i, err)
					}
				}
			}
			if s := dn.RoleState(); give != "grace" && s != "goroutine" {
				t.Fatalf("role %s, want the event goroutine's", s)
			}
			a.SendTo([]byte("y"), y.BoundAddr(), 0)
			recvTimeout(t, y, make([]byte, 64), 5*time.Second)
		})
	}
}

// Closing the stack under a RecvMsg that holds the role ends both.
func TestDATRoleHolderClose(t *testing.T) {
	leakCheck(t)
	st := NewStack(Config{Transports: []Transport{DAT(DATConfig{})}})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	x := mustBind(t, st, ap(as[1], 0))
	dn := datRoleNode(t, st, x, time.Hour)
	datLend(t, a, x)
	res := recvAsync(x, 64)
	eventually(t, 5*time.Second, "x holding the role", func() bool { return dn.RoleState() == "recv" })
	st.Close()
	if r := waitResult(t, res); r.err == nil {
		t.Fatalf("RecvMsg returned %q after Close", r.data)
	}
	if s := dn.RoleState(); s != "dead" {
		t.Errorf("role %s after Close, want dead", s)
	}
}

// A message for the holder's socket that fits its buffer goes straight
// into that buffer: the holder returns it without queueing it (the
// node's RecvDirect counts it), with its source.
func TestDATRoleDirect(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st, as, a, x, dn := datLent(t, cfg())
		for i := range 3 {
			res := recvAsync(x, 64)
			eventually(t, 5*time.Second, "x holding the role", func() bool { return dn.RoleState() == "recv" })
			before := st.nodeAt(as[1]).Stats().RecvDirect
			_, held, _ := dn.RoleCounts()
			want := []byte(fmt.Sprintf("direct %d", i))
			if _, err := a.SendTo(want, x.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
			r := waitResult(t, res)
			if r.err != nil || !bytes.Equal(r.data, want) || r.m.Addr != a.BoundAddr() || r.m.Flags&MsgTrunc != 0 {
				t.Fatalf("message %d: %q from %v, flags %v, %v", i, r.data, r.m.Addr, r.m.Flags, r.err)
			}
			if got := st.nodeAt(as[1]).Stats().RecvDirect; got != before+1 {
				t.Errorf("message %d: RecvDirect %d -> %d, want one more", i, before, got)
			}
			if _, now, _ := dn.RoleCounts(); now != held+1 {
				t.Errorf("message %d: RecvMsg runs %d -> %d, want one more", i, held, now)
			}
			x.sock().mu.Lock()
			q := x.sock().rxq.n
			x.sock().mu.Unlock()
			if q != 0 {
				t.Errorf("message %d: %d messages queued", i, q)
			}
		}
	})
}

// Messages that reach the holder's node while nobody takes its events
// come in one batch when the holder takes the role: the first does not
// fit the holder's buffer and is queued (and comes back truncated), and
// the next ones, which would fit, are queued behind it rather than
// overtaking it.
func TestDATRoleDirectOrder(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st, as, a, x, dn := datLent(t, cfg())
		if s := dn.RoleState(); s != "idle" {
			t.Fatalf("role %s, want idle", s)
		}
		big := bytes.Repeat([]byte{'b'}, 100)
		msgs := [][]byte{big, []byte("small 1"), []byte("small 2")}
		for _, msg := range msgs {
			if _, err := a.SendTo(msg, x.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
		}
		before := st.nodeAt(as[1]).Stats().RecvDirect
		for i, want := range msgs {
			r := waitResult(t, recvAsync(x, 64))
			trunc := len(want) > 64
			if trunc {
				want = want[:64]
			}
			if r.err != nil || !bytes.Equal(r.data, want) || (r.m.Flags&MsgTrunc != 0) != trunc {
				t.Fatalf("message %d: %q, flags %v, %v; want %q", i, r.data, r.m.Flags, r.err, want)
			}
		}
		t.Logf("%d of the small messages took the direct path", st.nodeAt(as[1]).Stats().RecvDirect-before)
	})
}
