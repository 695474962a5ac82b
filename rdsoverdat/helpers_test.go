package rdsoverdat

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// Every test gets its own 127.x.y.z addresses, so listeners and
// connections of one test never meet another's, nor those of another
// test process (testutil.LoopbackAddr).
func testAddrs(n int) []netip.Addr {
	as := make([]netip.Addr, n)
	for i := range as {
		as[i] = testutil.LoopbackAddr()
	}
	return as
}

func ap(a netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(a, port) }

// leakCheck fails the test if goroutines started during it outlive it.
func leakCheck(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, rdsStacks(string(buf)))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func rdsStacks(all string) string {
	var out []string
	for _, g := range strings.Split(all, "\n\n") {
		if strings.Contains(g, "rdsoverdat") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func newTestStack(t *testing.T, cfg Config) *Stack {
	t.Helper()
	st := NewStack(cfg)
	t.Cleanup(func() { st.Close() })
	return st
}

func mustBind(t *testing.T, st *Stack, a netip.AddrPort, opts ...Option) *Socket {
	t.Helper()
	s := st.Socket()
	for _, o := range opts {
		if err := s.SetOption(o); err != nil {
			t.Fatalf("SetOption(%T): %v", o, err)
		}
	}
	if err := s.Bind(a); err != nil {
		t.Fatalf("Bind(%v): %v", a, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v (%d)", err, want, int(want))
	}
}

// recvTimeout receives one message or fails after d.
func recvTimeout(t *testing.T, s *Socket, buf []byte, d time.Duration) (int, netip.AddrPort) {
	t.Helper()
	s.SetReadDeadline(time.Now().Add(d))
	defer s.SetReadDeadline(time.Time{})
	m := Msg{Data: buf}
	n, err := s.RecvMsg(&m, 0)
	if err != nil {
		t.Fatalf("RecvMsg: %v", err)
	}
	return n, m.Addr
}

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var _ = fmt.Sprintf

// sock is the rdsoverdat backend of s, for tests that look inside it.
func (s *Socket) sock() *sock {
	if k, ok := s.b.(*daemonSocket); ok {
		return daemonSide(k)
	}
	return s.b.(*sock)
}

// datNodeOf returns n's dat transport.
func datNodeOf(t testing.TB, n *rdsNode) rdsdat.Node {
	t.Helper()
	n.mu.RLock()
	defer n.mu.RUnlock()
	dn, ok := rdsdat.NodeOf(n.trans[TransIB].(interface{ unwrap() xport.NodeTransport }).unwrap())
	if !ok {
		t.Fatalf("node %v runs no dat transport", n.addr)
	}
	return dn
}

// echo answers every message s receives with its payload (messages up to
// size bytes) to its sender, until a receive fails (s closed).
func echo(s *Socket, size int) {
	m := Msg{Data: make([]byte, size)}
	for {
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return
		}
		s.SendTo(m.Data[:n], m.Addr, 0)
	}
}

// withoutReserve runs the rest of t as a process without a daemon's
// message reserve, restored at cleanup: an earlier test's daemon leaves
// the process's reserve behind, low once later streams drew on it, and a
// low reserve takes freed messages before a socket or path keeps them.
func withoutReserve(t *testing.T) {
	r := &msgReserve
	r.mu.Lock()
	ms, low := r.ms, r.low.Load()
	r.ms = nil
	r.low.Store(false)
	r.mu.Unlock()
	t.Cleanup(func() {
		r.mu.Lock()
		r.ms = ms
		r.low.Store(low)
		r.mu.Unlock()
	})
}
