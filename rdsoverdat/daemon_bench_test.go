package rdsoverdat

import "testing"

// The daemon backend against the in-process one, on the same transport
// (tcp between two nodes), in one run: 64 B round trip, 64 KiB
// throughput, 64 B message rate. The daemon runs in the benchmark's
// process, so both sides share its cores as a separate daemon process
// shares the host's; BenchmarkRDSTCP* in bench_test.go are the
// in-process baselines.

func daemonBenchPair(b *testing.B) (a, r *Socket) {
	st, _ := daemonStack(b, tcpBenchCfg)
	as := testAddrs(2)
	a, r = st.Socket(), st.Socket()
	b.Cleanup(func() { a.Close(); r.Close() })
	for _, s := range []*Socket{a, r} {
		s.SetOption(SendBuffer(4 << 20))
		s.SetOption(RecvBuffer(8 << 20))
	}
	if err := a.Bind(ap(as[0], 0)); err != nil {
		b.Fatal(err)
	}
	if err := r.Bind(ap(as[1], 0)); err != nil {
		b.Fatal(err)
	}
	a.SendTo(nil, r.BoundAddr(), 0)
	r.RecvMsg(&Msg{}, 0)
	return a, r
}

func BenchmarkDaemonTCPRate64(b *testing.B) {
	a, r := daemonBenchPair(b)
	w := wakeupsNow(a, r)
	benchStreamOn(b, a, r, 64)
	w.report(b, a, r)
}

func BenchmarkDaemonTCPTput64K(b *testing.B) {
	a, r := daemonBenchPair(b)
	w := wakeupsNow(a, r)
	benchStreamOn(b, a, r, 64<<10)
	w.report(b, a, r)
}

func BenchmarkDaemonTCPRTT64(b *testing.B) {
	a, r := daemonBenchPair(b)
	w := wakeupsNow(a, r)
	benchRTTOn(b, a, r)
	w.report(b, a, r)
}

// BenchmarkDaemonTCPDrain64 is the receive path alone: a receiver
// draining a queue of 64 B messages that is already full (filled
// untimed, 20000 messages at a time), against BenchmarkRDSTCPDrain64.
// cpu-ns/op is the CPU of both processes' sides of a receive.
func BenchmarkDaemonTCPDrain64(b *testing.B) {
	a, r := daemonBenchPair(b)
	benchDrainOn(b, a, r, func() int {
		_, n := daemonSide(r.b.(*daemonSocket)).buffered()
		return n
	})
}

// wakeups counts the ring wake-ups (eventfd writes) of daemon sockets'
// connections, both ends.
type wakeups uint64

func wakeupsNow(socks ...*Socket) wakeups {
	var n uint64
	for _, s := range socks {
		k := s.b.(*daemonSocket)
		tx, rx := k.c.RingStats()
		n += tx.Signals + rx.Signals
		dtx, drx := daemonConnOf(k).c.RingStats()
		n += dtx.Signals + drx.Signals
	}
	return wakeups(n)
}

// report reports the wake-ups since w per iteration of b (wakeups/op).
func (w wakeups) report(b *testing.B, socks ...*Socket) {
	b.ReportMetric(float64(wakeupsNow(socks...)-w)/float64(b.N), "wakeups/op")
}

// A send and a receive through the daemon allocate nothing in steady
// state, in the client or in the daemon (both run in this process): the
// calls are pooled, the records framed in preallocated buffers, and a
// receive that waits runs on the connection's receiver goroutine.
func TestDaemonSendRecvAllocs(t *testing.T) {
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
		if _, err := a.SendTo(msg, dst, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.RecvMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 {
		round()
	}
	if n := testing.AllocsPerRun(500, round); n > 0.05 {
		t.Errorf("%.2f allocs per send+recv through the daemon", n)
	}
}
