package rdsoverdat

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// heldCount returns the messages a daemon socket holds ahead.
func heldCount(s *Socket) int {
	k := s.b.(*daemonSocket)
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.held.msgs) - k.held.head
}

// queueAt sends msgs from a to b and waits until the daemon's socket
// of b has them all (queued, or handed ahead and unread).
func queueAt(t *testing.T, a, b *Socket, msgs [][]byte) {
	t.Helper()
	ds := daemonSide(b.b.(*daemonSocket))
	count := func() int {
		ds.mu.Lock()
		defer ds.mu.Unlock()
		return ds.rxq.n + ds.aheadN
	}
	want := count() + len(msgs)
	for _, p := range msgs {
		if _, err := a.SendTo(p, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "messages queued in the daemon", func() bool { return count() == want })
}

// Messages handed ahead stay the socket's until read: they count in
// Buffered (SO_RCVBUF), keep the socket readable, MSG_PEEK sees them,
// and they come in order; reading the last one settles the count.
func TestDaemonHeldCounted(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	msgs := [][]byte{bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 50), bytes.Repeat([]byte{3}, 30), nil}
	queueAt(t, a, b, msgs)
	m := Msg{Data: make([]byte, 200)}
	recv := func(flags MsgFlags, want []byte) {
		t.Helper()
		n, err := b.RecvMsg(&m, flags)
		if err != nil || !bytes.Equal(m.Data[:n], want) || m.Addr != a.BoundAddr() {
			t.Fatalf("RecvMsg(%v) = %d %v from %v, want %d bytes from %v", flags, n, err, m.Addr, len(want), a.BoundAddr())
		}
	}
	recv(0, msgs[0])
	if n := heldCount(b); n != 3 {
		t.Fatalf("%d messages held after the first receive, want 3", n)
	}
	if _, rcv := b.Buffered(); rcv != 80 {
		t.Errorf("Buffered recv = %d with 80 bytes held, want 80", rcv)
	}
	if ev := b.Poll(); ev&PollIn == 0 {
		t.Errorf("Poll = %v with messages held", ev)
	}
	if n, err := b.RecvMsg(&Msg{Data: make([]byte, 8)}, MsgOOB); n != 0 || err != nil {
		t.Errorf("MSG_OOB with messages held = %d %v, want 0 at once as in process", n, err)
	}
	recv(MsgPeek, msgs[1])
	recv(0, msgs[1])
	small := Msg{Data: make([]byte, 10)}
	if n, err := b.RecvMsg(&small, MsgTrunc); err != nil || n != 30 || small.Flags&MsgTrunc == 0 {
		t.Fatalf("truncated receive of a held message = %d %v %v, want 30 and MSG_TRUNC", n, err, small.Flags)
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("Buffered recv = %d with only a 0-byte message held, want 0", rcv)
	}
	if ev := b.Poll(); ev&PollIn == 0 {
		t.Errorf("Poll = %v with a 0-byte message held", ev)
	}
	recv(MsgDontWait, nil)
	if ev := b.Poll(); ev&PollIn != 0 {
		t.Errorf("Poll = %v with every message read", ev)
	}
	if _, err := b.RecvMsg(&m, MsgDontWait); !errors.Is(err, eAGAIN) {
		t.Errorf("RecvMsg on an empty socket = %v, want EAGAIN", err)
	}
}

// A port congested by messages that were then handed ahead is
// uncongested once the client has read them, as by a receive in
// process.
func TestDaemonHeldUncongests(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(1000))
	msg := make([]byte, 300)
	queueAt(t, a, b, [][]byte{msg, msg, msg, msg})
	ds := daemonSide(b.b.(*daemonSocket))
	congested := func() bool {
		ds.mu.Lock()
		defer ds.mu.Unlock()
		return ds.congested
	}
	if !congested() {
		t.Fatal("1200 bytes queued against SO_RCVBUF 1000 did not congest the port")
	}
	m := Msg{Data: make([]byte, 300)}
	if _, err := b.RecvMsg(&m, 0); err != nil {
		t.Fatal(err)
	}
	if heldCount(b) == 0 {
		t.Fatal("nothing handed ahead")
	}
	if !congested() {
		t.Error("uncongested with 900 bytes still unread")
	}
	for heldCount(b) > 0 {
		if _, err := b.RecvMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, rcv := b.Buffered(); rcv != 0 { // after the credit, in order
		t.Fatalf("Buffered recv = %d after reading everything", rcv)
	}
	if congested() {
		t.Error("the port stays congested with every message read")
	}
}

// A stream of receives served from held messages allocates nothing in
// the client or the daemon.
func TestDaemonHeldAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	dst := b.BoundAddr()
	msg := make([]byte, 64)
	m := Msg{Data: make([]byte, 64)}
	round := func() {
		for range 8 {
			if _, err := a.SendTo(msg, dst, 0); err != nil {
				t.Fatal(err)
			}
		}
		for range 8 {
			if _, err := b.RecvMsg(&m, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 200 {
		round()
	}
	if n := testing.AllocsPerRun(200, round); n > 0.05 {
		t.Errorf("%.2f allocs per 8 sends and 8 receives through the daemon", n)
	}
}

// Once a socket can get notifications (RDS_CONG_MONITOR here), the
// messages it holds come only through the daemon's CodeAhead answers,
// in order, and no more are handed ahead.
func TestDaemonHeldAfterMonitor(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	msgs := [][]byte{{1}, {2}, {3}}
	queueAt(t, a, b, msgs)
	m := Msg{Data: make([]byte, 8)}
	if _, err := b.RecvMsg(&m, 0); err != nil {
		t.Fatal(err)
	}
	if heldCount(b) != 2 {
		t.Fatalf("%d held, want 2", heldCount(b))
	}
	if err := b.SetOption(CongMonitor{Enable: true}); err != nil {
		t.Fatal(err)
	}
	queueAt(t, a, b, [][]byte{{4}, {5}})
	for i, want := range []byte{2, 3, 4} {
		n, err := b.RecvMsg(&m, 0)
		if err != nil || n != 1 || m.Data[0] != want {
			t.Fatalf("receive %d = %d %v %v, want message %d", i, n, err, m.Data[:n], want)
		}
	}
	if heldCount(b) != 0 {
		t.Errorf("%d handed ahead to a socket that monitors congestion", heldCount(b))
	}
}

// FuzzHeld hands arbitrary records to a client as a batch of messages
// ahead: it keeps a well-formed one, whose messages receives return
// whole and in order, and refuses the rest, keeping none of it.
func FuzzHeld(f *testing.F) {
	var body []byte
	for i, s := range []string{"one", "", "three"} {
		e := make([]byte, rdsdproto.AheadHeaderLen)
		rdsdproto.AheadEntry(e).Set(len(s), netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(9+i)))
		body = append(append(body, e...), s...)
	}
	ok := rdsdproto.New(nil, rdsdproto.OpRecv, 0, len(body))
	ok.SetFlags(rdsdproto.FlagReply)
	ok.SetB(uint64(len(body)))
	ok.SetC(3)
	copy(ok.Body(), body)
	f.Add([]byte(ok))
	f.Add([]byte(rdsdproto.New(nil, rdsdproto.OpRecv, 0, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		buf := append([]byte(nil), b...) // the batch keeps the buffer it was read into
		r, err := rdsdproto.Parse(buf)
		if err != nil {
			return
		}
		k := &daemonSocket{}
		if k.hold(r, &buf) != nil {
			if heldCount(&Socket{b: k}) != 0 {
				t.Fatal("a refused record was kept")
			}
			return
		}
		n := 0
		for rest := r.Body(); len(rest) > 0; n++ {
			from, data, next, err := rdsdproto.NextAhead(rest)
			if err != nil {
				t.Fatalf("kept a batch whose message %d is malformed: %v", n, err)
			}
			rest = next
			m := Msg{Data: make([]byte, len(data))}
			got, ok := k.takeHeld(&m, 0, false)
			if !ok || got != len(data) || !bytes.Equal(m.Data, data) || m.Addr != from {
				t.Fatalf("message %d read back as %d %v %x from %v", n, got, ok, m.Data, m.Addr)
			}
		}
		if uint64(n) != r.C() || heldCount(&Socket{b: k}) != 0 {
			t.Fatalf("kept %d messages of a batch of %d, %d left", n, r.C(), heldCount(&Socket{b: k}))
		}
	})
}

// A stream over tcp whose receiver mixes blocking receives (served by
// the connection's receiver goroutine, which hands ahead the messages
// queued behind the one it waited for) and MSG_DONTWAIT ones (served by
// the reader, which hands ahead too) gets every message once, in order:
// the two goroutines' batches never overtake each other.
func TestDaemonAheadOrderBothGoroutines(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, tcpBenchCfg)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	for _, s := range []*Socket{a, b} {
		if err := s.SetOption(RecvBuffer(8 << 20)); err != nil {
			t.Fatal(err)
		}
	}
	const n = 20000
	sent := make(chan error, 1)
	go func() {
		p := make([]byte, 64)
		for i := range n {
			dle.PutUint64(p, uint64(i))
			if _, err := a.SendTo(p, b.BoundAddr(), 0); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	m := Msg{Data: make([]byte, 64)}
	for want, i := uint64(0), 0; want < n; i++ {
		flags := MsgFlags(0)
		if i%3 == 1 {
			flags = MsgDontWait
		}
		got, err := b.RecvMsg(&m, flags)
		if errors.Is(err, eAGAIN) && flags != 0 {
			continue
		}
		if err != nil || got != 64 {
			t.Fatalf("receive %d (flags %v) = %d %v", want, flags, got, err)
		}
		if seq := dle.Uint64(m.Data); seq != want {
			t.Fatalf("message %d came where %d was due", seq, want)
		}
		want++
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}
