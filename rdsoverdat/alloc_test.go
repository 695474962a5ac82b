package rdsoverdat

import (
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// Sending and receiving a message in steady state allocates nothing:
// messages and payload buffers come from the pool, the wake-ups are
// preallocated channels, and RecvMsg fills a caller-owned Msg.
func TestSendRecvAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"loop", Config{}},
		{"tcp", Config{Transports: []Transport{TCP(TCPConfig{})}}},
		{"dat-mem", Config{Transports: []Transport{DAT(DATConfig{Registry: registryOn(mem.New()), IA: "mem"})}}},
		{"dat-siw", Config{Transports: []Transport{DAT(DATConfig{})}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			st := newTestStack(t, c.cfg)
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
			for range 200 { // warm the pools and bring the connection up
				round()
			}
			eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
			if n := testing.AllocsPerRun(500, round); n > 0.05 {
				t.Errorf("%.2f allocs per send+recv", n)
			}
		})
	}
}

// Messages of every size up to RDS_MAX_MSG_SIZE reuse their storage, the
// large ones from their own size class (bigPools), and a small message
// never comes back with a large buffer.
func TestMessagePoolSizes(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	for _, n := range []int{0, 64, 4096, maxPooledBuf, maxPooledBuf + 1, 2 * maxPooledBuf, 1 << 20} {
		newMessage(n).release()
		if a := testing.AllocsPerRun(50, func() { newMessage(n).release() }); a != 0 {
			t.Errorf("newMessage(%d): %.1f allocs per message", n, a)
		}
		m := newMessage(n)
		if len(m.buf) != n {
			t.Errorf("newMessage(%d): len %d", n, len(m.buf))
		}
		m.release()
	}
	newMessage(1 << 20).release()
	m := newMessage(100)
	if cap(m.buf) > maxPooledBuf {
		t.Errorf("a 100-byte message got a %d-byte buffer", cap(m.buf))
	}
	m.release()
}
