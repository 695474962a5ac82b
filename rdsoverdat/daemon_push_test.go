package rdsoverdat

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// pushPair returns a sender and a receiver through one daemon, the
// receiver's first receive made, so that the daemon pushes to it.
func pushPair(t *testing.T, opts ...Option) (a, b *Socket) {
	t.Helper()
	st, _ := daemonStack(t, Config{})
	as := testAddrs(2)
	a = mustBind(t, st, ap(as[0], 0))
	b = mustBind(t, st, ap(as[1], 0), opts...)
	if _, err := a.SendTo([]byte{0}, b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecvMsg(&Msg{Data: make([]byte, 1)}, 0); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// A receiver that keeps up with a stream asks the daemon nothing after
// its first receive: every message comes pushed, and what it read
// reaches the daemon's count through shared memory, so that Buffered
// and Poll see it.
func TestDaemonPushNoRequests(t *testing.T) {
	leakCheck(t)
	a, b := pushPair(t)
	dc := daemonConnOf(b.b.(*daemonSocket))
	before := dc.recvs.Load()
	m := Msg{Data: make([]byte, 16)}
	for i := range 200 {
		want := []byte{byte(i), byte(i >> 8), 7}
		if _, err := a.SendTo(want, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		n, err := b.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:n], want) || m.Addr != a.BoundAddr() {
			t.Fatalf("message %d: %d %v %x from %v", i, n, err, m.Data[:n], m.Addr)
		}
	}
	if got := dc.recvs.Load() - before; got != 0 {
		t.Errorf("%d receive requests for 200 pushed messages, want 0", got)
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("Buffered recv = %d with every message read", rcv)
	}
	if ev := b.Poll(); ev&PollIn != 0 {
		t.Errorf("Poll = %v with every message read", ev)
	}
}

// A receive waiting for a push ends at the read deadline, set before or
// during the wait, as in process; nothing is lost to it.
func TestDaemonPushDeadline(t *testing.T) {
	leakCheck(t)
	a, b := pushPair(t)
	m := Msg{Data: make([]byte, 16)}
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := b.RecvMsg(&m, 0); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvMsg past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	b.SetReadDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() {
		_, err := b.RecvMsg(&Msg{Data: make([]byte, 16)}, 0)
		errc <- err
	}()
	b.SetReadDeadline(time.Now().Add(-time.Second)) // wakes the wait
	if err := <-errc; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvMsg whose deadline passed while it waited = %v", err)
	}
	b.SetReadDeadline(time.Time{})
	if _, err := a.SendTo([]byte("after"), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := b.RecvMsg(&m, 0); err != nil || string(m.Data[:n]) != "after" {
		t.Fatalf("RecvMsg after the deadlines = %q %v", m.Data[:n], err)
	}
}

// Close ends a receive waiting for a push with net.ErrClosed.
func TestDaemonPushClose(t *testing.T) {
	leakCheck(t)
	_, b := pushPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := b.RecvMsg(&Msg{Data: make([]byte, 16)}, 0)
		errc <- err
	}()
	b.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("RecvMsg across Close = %v, want net.ErrClosed", err)
	}
}

// A stream into a receive buffer far smaller than what the daemon hands
// ahead congests the port again and again; each time the client's
// reads must uncongest it (it reports them when the daemon asks), or
// the sender would wait for good.
func TestDaemonPushCongestion(t *testing.T) {
	leakCheck(t)
	a, b := pushPair(t, RecvBuffer(2000))
	const count = 3000
	errc := make(chan error, 1)
	go func() {
		msg := make([]byte, 500)
		for i := range count {
			msg[0], msg[1] = byte(i), byte(i>>8)
			if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	b.SetReadDeadline(time.Now().Add(60 * time.Second))
	m := Msg{Data: make([]byte, 600)}
	for i := range count {
		n, err := b.RecvMsg(&m, 0)
		if err != nil || n != 500 || m.Data[0] != byte(i) || m.Data[1] != byte(i>>8) {
			t.Fatalf("message %d: %d %v %x", i, n, err, m.Data[:2])
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	ds := daemonSide(b.b.(*daemonSocket))
	if ds.congestedNow() {
		// The last reads may not have been reported: a request settles them.
		b.Buffered()
		if ds.congestedNow() {
			t.Error("port congested with every message read")
		}
	}
}

// A message too large to hand ahead stops the pushes: the daemon asks
// the client to ask, and the message and those behind it come in order.
func TestDaemonPushLarge(t *testing.T) {
	leakCheck(t)
	a, b := pushPair(t, RecvBuffer(1<<20))
	big := bytes.Repeat([]byte{9}, aheadBytes+1)
	msgs := [][]byte{{1}, big, {2}, {3}}
	for _, p := range msgs {
		if _, err := a.SendTo(p, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	m := Msg{Data: make([]byte, len(big))}
	for i, want := range msgs {
		n, err := b.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:n], want) {
			t.Fatalf("message %d: %d bytes, %v; want %d bytes", i, n, err, len(want))
		}
	}
	// And pushing resumes: the next message needs no request.
	dc := daemonConnOf(b.b.(*daemonSocket))
	if _, err := a.SendTo([]byte{4}, b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecvMsg(&m, 0); err != nil {
		t.Fatal(err)
	}
	before := dc.recvs.Load()
	for i := range 20 {
		if _, err := a.SendTo([]byte{byte(i)}, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if n, err := b.RecvMsg(&m, 0); err != nil || n != 1 || m.Data[0] != byte(i) {
			t.Fatalf("message %d after the large one: %d %v", i, n, err)
		}
	}
	if got := dc.recvs.Load() - before; got != 0 {
		t.Errorf("%d receive requests once pushing resumed, want 0", got)
	}
}

// A round trip over tcp through the daemon allocates nothing once warm,
// with the receivers waiting for pushes: the transport's reader hands
// each message ahead from the socket's sink into the ring record.
func TestDaemonPushRoundTripAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	leakCheck(t)
	st, _ := daemonStack(t, tcpBenchCfg)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	done := make(chan struct{})
	go func() {
		defer close(done)
		echo(b, 64)
	}()
	t.Cleanup(func() { b.Close(); <-done })
	msg := make([]byte, 64)
	m := Msg{Data: make([]byte, 64)}
	round := func() {
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := a.RecvMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 300 {
		round()
	}
	if n := testing.AllocsPerRun(500, round); n > 0.05 {
		t.Errorf("%.2f allocs per round trip through the daemon over tcp", n)
	}
}

// A stream over tcp, pushed (by the transport's reader at the end of its
// reads, and by the pusher for what that could not place), arrives
// whole and in order, of every size up to a few hundred bytes, and
// leaves nothing counted once read.
func TestDaemonPushStreamTCP(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, Config{Transports: []Transport{TCP(TCPConfig{})}})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(1<<20))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(4<<20))
	const n = 5000
	payload := func(i int) []byte {
		p := make([]byte, 1+i%300)
		for j := range p {
			p[j] = byte(i + j)
		}
		return p
	}
	sent := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := a.SendTo(payload(i), b.BoundAddr(), 0); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	m := Msg{Data: make([]byte, 512)}
	for i := range n {
		k, err := b.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:k], payload(i)) || m.Addr != a.BoundAddr() {
			t.Fatalf("message %d: %d bytes, %v, from %v", i, k, err, m.Addr)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("Buffered recv = %d with every message read", rcv)
	}
}

// A socket closed in the daemon while its client's connection lives on
// (the close request, before the client hangs up) stops its pusher,
// which would otherwise look at the closed socket over and over until
// the connection ended.
func TestDaemonPushStopsOnClose(t *testing.T) {
	leakCheck(t)
	_, b := pushPair(t)
	dc := daemonConnOf(b.b.(*daemonSocket))
	if !dc.push.Load() {
		t.Fatal("not pushing after the first receive")
	}
	if err := dc.s.Close(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); dc.push.Load(); {
		if time.Now().After(end) {
			t.Fatal("still pushing to a closed socket")
		}
		runtime.Gosched()
	}
}

// pushIdle waits (polling the state) until the pusher of b's daemon
// connection sleeps waiting for messages.
func pushIdle(t *testing.T, b *Socket) *daemonConn {
	t.Helper()
	dc := daemonConnOf(b.b.(*daemonSocket))
	sk := dc.s.b.(*sock)
	for end := time.Now().Add(10 * time.Second); !sk.pushIdle.Load(); {
		if time.Now().After(end) {
			t.Fatal("the pusher never went to sleep")
		}
		runtime.Gosched()
	}
	return dc
}

// Over tcp, the transport's reader hands a sleeping pusher's messages
// ahead itself at the end of its read: a receiver that keeps up gets
// every message with the pusher never woken.
func TestDaemonPushFromReader(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, tcpBenchCfg)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	m := Msg{Data: make([]byte, 16)}
	if _, err := a.SendTo([]byte{0}, b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecvMsg(&m, 0); err != nil {
		t.Fatal(err)
	}
	dc := pushIdle(t, b)
	steps, recvs := dc.steps.Load(), dc.recvs.Load()
	for i := range 100 {
		pushIdle(t, b)
		want := []byte{byte(i), 3}
		if _, err := a.SendTo(want, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		n, err := b.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:n], want) || m.Addr != a.BoundAddr() {
			t.Fatalf("message %d: %d %v %x from %v", i, n, err, m.Data[:n], m.Addr)
		}
	}
	// The reader hands each message ahead. The pusher can still wake
	// now and then on a loaded host (a wake-up token left from before it
	// slept, or the reader finding the ring's reservation taken for an
	// instant) and then take a step; a pusher that delivered the stream
	// would take one a message.
	if got := dc.steps.Load() - steps; got > 10 {
		t.Errorf("the pusher took %d steps for 100 messages the reader handed ahead, want at most 10", got)
	}
	if got := dc.recvs.Load() - recvs; got != 0 {
		t.Errorf("%d receive requests, want 0", got)
	}
	if _, rcv := b.Buffered(); rcv != 0 {
		t.Errorf("Buffered recv = %d with every message read", rcv)
	}
}

// A client that stops reading holds up no other socket of its
// connection's peer: the reader leaves what exceeds its allowance to its
// pusher and goes on delivering, the other receiver's stream arrives
// whole, and the stopped one finds all of its messages in order later.
func TestDaemonPushStoppedReader(t *testing.T) {
	leakCheck(t)
	st, _ := daemonStack(t, tcpBenchCfg)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(1<<20))
	slow := mustBind(t, st, ap(as[1], 0), RecvBuffer(1<<20))
	fast := mustBind(t, st, ap(as[1], 0))
	m := Msg{Data: make([]byte, 16)}
	for _, b := range []*Socket{slow, fast} {
		if _, err := a.SendTo([]byte{0}, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.RecvMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	const n = 3 * aheadMsgs
	msg := func(i int) []byte { return []byte{byte(i), byte(i >> 8), 9} }
	for i := range n {
		if _, err := a.SendTo(msg(i), slow.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if _, err := a.SendTo(msg(i), fast.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		k, err := fast.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:k], msg(i)) {
			t.Fatalf("fast message %d: %d %v %x", i, k, err, m.Data[:k])
		}
	}
	for i := range n {
		k, err := slow.RecvMsg(&m, 0)
		if err != nil || !bytes.Equal(m.Data[:k], msg(i)) || m.Addr != a.BoundAddr() {
			t.Fatalf("slow message %d: %d %v %x from %v", i, k, err, m.Data[:k], m.Addr)
		}
	}
	for _, b := range []*Socket{slow, fast} {
		if _, rcv := b.Buffered(); rcv != 0 {
			t.Errorf("Buffered recv = %d with every message read", rcv)
		}
	}
}
