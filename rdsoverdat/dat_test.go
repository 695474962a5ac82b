package rdsoverdat

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// datProviders are the providers the dat transport is tested over: the
// in-memory one (fast, one fabric per transport value) and soft-iWARP
// over 127.0.0.x.
var datProviders = []struct {
	name string
	cfg  func() DATConfig
}{
	{"mem", func() DATConfig { return DATConfig{Provider: mem.New()} }},
	{"siw", func() DATConfig { return DATConfig{} }},
}

func datStack(t testing.TB, cfg DATConfig) *Stack {
	st := NewStack(Config{Transports: []Transport{DAT(cfg)}})
	t.Cleanup(func() { st.Close() })
	return st
}

// forDAT runs f over every provider.
func forDAT(t *testing.T, f func(t *testing.T, cfg func() DATConfig)) {
	for _, p := range datProviders {
		t.Run(p.name, func(t *testing.T) { f(t, p.cfg) })
	}
}

func TestDATSendRecv(t *testing.T) {
	forDAT(t, func(t *testing.T, cfg func() DATConfig) {
		leakCheck(t)
		st := datStack(t, cfg())
		as := testAddrs(2)
		for _, dir := range [][2]int{{0, 1}, {1, 0}} { // smaller->larger and larger->smaller first
			t.Run(fmt.Sprint(dir), func(t *testing.T) {
				a := mustBind(t, st, ap(as[dir[0]], 0))
				b := mustBind(t, st, ap(as[dir[1]], 0))
				buf := make([]byte, 1<<20+1)
				for i, size := range []int{0, 1, 100, 4095, 4096, 4097, 8192, 65536, 1 << 20} {
					msg := bytes.Repeat([]byte{byte(i + 1)}, size)
					for j := range msg {
						msg[j] += byte(j / 4096)
					}
					if err := a.SetOption(SendBuffer(2 << 20)); err != nil {
						t.Fatal(err)
					}
					if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
						t.Fatal(err)
					}
					n, from := recvTimeout(t, b, buf, 10*time.Second)
					if !bytes.Equal(buf[:n], msg) || from != a.BoundAddr() {
						t.Fatalf("size %d: got %d bytes from %v", size, n, from)
					}
				}
				eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
			})
		}
		c := st.Node(as[0]).Conn(as[1], TransIB)
		if c == nil || !c.Path(0).IsUp() {
			t.Fatal("no dat connection up")
		}
		eventually(t, 5*time.Second, "handshake", func() bool { return c.PeerGenNum() == st.GenNum() })
	})
}
