package rdsoverdat

import (
	"bytes"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// tb is what the rig helpers need of a test: testing.TB, or goTB in a
// goroutine of the test.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// goTB lets helpers fail from a test's goroutine: Fatalf panics with
// the failure, which recover turns into the goroutine's error.
type goTB struct{ cleanups []func() }

type goTBFailure struct{ error }

func (*goTB) Helper()                   {}
func (g *goTB) Cleanup(f func())        { g.cleanups = append(g.cleanups, f) }
func (*goTB) Fatalf(f string, a ...any) { panic(goTBFailure{fmt.Errorf(f, a...)}) }

func (g *goTB) recover(err *error) {
	for _, f := range g.cleanups {
		f()
	}
	if v := recover(); v != nil {
		f, ok := v.(goTBFailure)
		if !ok {
			panic(v)
		}
		*err = f.error
	}
}

// An rdmaRig is a client and a server socket on two nodes joined by an
// RDMA-capable transport. The zerocopy tests run on every rig maker.
type rdmaRig struct {
	st       *Stack
	cli, srv *Socket
	cliNode  netip.Addr
	srvNode  netip.Addr
	mem      *memRDMA // the in-memory transport, nil on others
	// kernelWire: the dat transport speaks rds_rdma's wire, whose
	// reconnection carries no ack (dp_ack_seq 0).
	kernelWire bool

	// resets0 is the number of resets the warm-up saw (resets).
	resets0 uint64

	// Notifications a helper received while waiting for something else.
	stashMu sync.Mutex
	stash   map[*Socket][]RDMANotify
}

type rigMaker struct {
	name string
	make func(t tb, lim RDMALimits) *rdmaRig
	skip string // why the rig cannot run now, if it cannot
}

// rdmaRigs lists the transports the zerocopy tests run on.
var rdmaRigs = []rigMaker{{"mem", newMemRig, ""}}

func newMemRig(t tb, lim RDMALimits) *rdmaRig {
	mt := newMemRDMA(lim)
	st := NewStack(Config{Transports: []Transport{mt}, RecvBuffer: 64 << 20, SendBuffer: 64 << 20})
	t.Cleanup(func() { st.Close() })
	return newRig(t, st, mt)
}

func newRig(t tb, st *Stack, mt *memRDMA) *rdmaRig {
	as := testAddrs(2)
	r := &rdmaRig{st: st, cliNode: as[0], srvNode: as[1], mem: mt}
	r.cli = r.socket(t, as[0])
	r.srv = r.socket(t, as[1])
	r.warm(t)
	return r
}

// warm connects the rig's nodes before a test begins: a message each
// way. Over iWARP both go at once, so that both nodes connect at the same
// moment, as they may in use: the request the larger address abandons
// must not reset the smaller's connection (dat_race.go), or a later test
// would see the reset. On the kernel's wire a request that finds the
// connection up drops it by rule, which costs an RDMA op in flight its
// message: RDS's right, but no part of what these tests check, so there
// the second message goes only once the first arrived, and only one side
// connects. Resets during the warm-up are not counted (resets).
func (r *rdmaRig) warm(t tb) {
	pairs := [][2]*Socket{{r.cli, r.srv}, {r.srv, r.cli}}
	send := func(p [2]*Socket) {
		if _, err := p[0].SendTo([]byte("warm"), p[1].BoundAddr(), 0); err != nil {
			t.Fatalf("warm-up SendTo: %v", err)
		}
	}
	recv := func(p [2]*Socket) {
		buf := make([]byte, 8)
		if n, _ := recvFull(t, p[1], buf); string(buf[:n]) != "warm" {
			t.Fatalf("warm-up message %q", buf[:n])
		}
	}
	if r.kernelDAT() {
		for _, p := range pairs {
			send(p)
			recv(p)
		}
	} else {
		for _, p := range pairs {
			send(p)
		}
		for _, p := range pairs {
			recv(p)
		}
	}
	r.resets0 += r.resets()
}

func (r *rdmaRig) socket(t tb, a netip.Addr) *Socket {
	s := r.st.Socket()
	if err := s.Bind(ap(a, 0)); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEachRig runs f as a subtest on every rig.
func forEachRig(t *testing.T, lim RDMALimits, f func(t *testing.T, r *rdmaRig)) {
	for _, m := range rdmaRigs {
		t.Run(m.name, func(t *testing.T) {
			if m.skip != "" {
				t.Skip(m.skip)
			}
			leakCheck(t)
			f(t, m.make(t, lim))
		})
	}
}

const rigWait = 10 * time.Second

// recvFull receives one message with its control messages.
func recvFull(t tb, s *Socket, buf []byte) (int, Msg) {
	t.Helper()
	s.SetReadDeadline(time.Now().Add(rigWait))
	defer s.SetReadDeadline(time.Time{})
	m := Msg{Data: buf}
	n, err := s.RecvMsg(&m, 0)
	if err != nil {
		t.Fatalf("RecvMsg: %v", err)
	}
	return n, m
}

// request sends data from cli to srv with control messages cm and
// returns what srv received: the payload and the RDMA_DEST cookie.
func (r *rdmaRig) request(t tb, cli, srv *Socket, data []byte, cm ...ControlMessage) Cookie {
	t.Helper()
	if _, err := cli.SendMsg(&Msg{Data: data, Addr: srv.BoundAddr(), Control: cm}, 0); err != nil {
		t.Fatalf("request SendMsg: %v", err)
	}
	buf := make([]byte, len(data)+1)
	n, m := recvFull(t, srv, buf)
	for n == 0 && len(data) > 0 && r.stashNotes(srv, m.Control) {
		n, m = recvFull(t, srv, buf)
	}
	if !bytes.Equal(buf[:n], data) {
		t.Fatalf("request payload %q, want %q", buf[:n], data)
	}
	for _, c := range m.Control {
		if d, ok := c.(RDMADest); ok {
			return Cookie(d)
		}
	}
	t.Fatalf("request arrived without RDMA_DEST: %v", m.Control)
	return 0
}

// op sends an RDMA ACK with args from srv to cli.
func (r *rdmaRig) op(t tb, srv, cli *Socket, data []byte, args RDMAArgs) {
	t.Helper()
	if _, err := srv.SendMsg(&Msg{Data: data, Addr: cli.BoundAddr(), Control: []ControlMessage{args}}, 0); err != nil {
		t.Fatalf("op SendMsg: %v", err)
	}
}

// stashNotes keeps the notifications of cm for notes; false if cm has
// anything else.
func (r *rdmaRig) stashNotes(s *Socket, cm []ControlMessage) bool {
	var ns []RDMANotify
	for _, c := range cm {
		n, ok := c.(RDMANotify)
		if !ok {
			return false
		}
		ns = append(ns, n)
	}
	r.stashMu.Lock()
	defer r.stashMu.Unlock()
	if r.stash == nil {
		r.stash = map[*Socket][]RDMANotify{}
	}
	r.stash[s] = append(r.stash[s], ns...)
	return len(ns) > 0
}

// notes waits for n notifications on s.
func (r *rdmaRig) notes(t tb, s *Socket, n int) []RDMANotify {
	t.Helper()
	r.stashMu.Lock()
	out := r.stash[s]
	delete(r.stash, s)
	r.stashMu.Unlock()
	for len(out) < n {
		k, m := recvFull(t, s, make([]byte, 64))
		if k != 0 || len(m.Control) == 0 {
			t.Fatalf("got a %d-byte message %v while waiting for notifications", k, m.Control)
		}
		for _, c := range m.Control {
			nt, ok := c.(RDMANotify)
			if !ok {
				t.Fatalf("unexpected control message %#v", c)
			}
			out = append(out, nt)
		}
	}
	return out
}

// wantFailed checks the notification of a failed op: a remote error,
// with the connection still up (no path between the rig's nodes ever
// went down).
func (r *rdmaRig) wantFailed(t tb, s *Socket, token uint64) {
	t.Helper()
	n := r.notes(t, s, 1)
	if n[0].UserToken != token || n[0].Status != RDMARemoteError {
		t.Fatalf("op %d: notification %+v, want a remote error", token, n[0])
	}
	if k := r.resets(); k != 0 {
		t.Fatalf("op %d: the connection was reset %d times", token, k)
	}
}

// resets counts the times a path between the rig's nodes went down
// since the warm-up.
func (r *rdmaRig) resets() uint64 {
	var k uint64
	for _, ends := range [][2]netip.Addr{{r.cliNode, r.srvNode}, {r.srvNode, r.cliNode}} {
		if c := r.st.nodeAt(ends[0]).Conn(ends[1], TransIB); c != nil {
			k += c.Stats().Resets
		}
	}
	return k - r.resets0
}

// expectNext receives the next message on s and checks its payload:
// what a test uses to show that a message (an RDMA ACK) did not arrive
// before it.
func expectNext(t tb, s *Socket, want []byte) Msg {
	t.Helper()
	buf := make([]byte, len(want)+64)
	n, m := recvFull(t, s, buf)
	if !bytes.Equal(buf[:n], want) {
		t.Fatalf("next message %q (control %v), want %q", buf[:n], m.Control, want)
	}
	return m
}

// pattern fills b with bytes derived from seed.
func pattern(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7+i>>8)
	}
}

// split cuts b into up to k pieces of uneven length.
func split(b []byte, k int) [][]byte {
	var out [][]byte
	for i := 0; i < k-1 && len(b) > 1; i++ {
		n := len(b)/(k-i) + i
		if n >= len(b) {
			break
		}
		out = append(out, b[:n])
		b = b[n:]
	}
	return append(out, b)
}

// kernelDAT reports whether the rig's nodes run the dat transport on
// the kernel's wire.
func (r *rdmaRig) kernelDAT() bool {
	n := r.st.nodeAt(r.cliNode)
	n.mu.RLock()
	u, ok := n.trans[TransIB].(interface{ unwrap() xport.NodeTransport })
	n.mu.RUnlock()
	if !ok {
		return false
	}
	dn, ok := rdsdat.NodeOf(u.unwrap())
	return ok && dn.Kernel()
}
