//go:build rdmacore

package rdsib

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// env is where the tests run: this VM's address, the kernel VM's, kpeer's
// control address and the DAT IA of this VM's RoCE device.
type env struct {
	local, peer netip.Addr
	ctl, ia     string
}

func setup(t *testing.T) (*env, *kpeer) {
	t.Helper()
	local, peer, ctl := os.Getenv("RDSIB_LOCAL"), os.Getenv("RDSIB_PEER"), os.Getenv("RDSIB_CTL")
	if local == "" || peer == "" || ctl == "" {
		t.Skip("RDSIB_LOCAL, RDSIB_PEER and RDSIB_CTL not set (make rds-ib-lab sets them)")
	}
	e := &env{local: netip.MustParseAddr(local), peer: netip.MustParseAddr(peer), ctl: ctl, ia: os.Getenv("RDSIB_IA")}
	if e.ia == "" {
		e.ia = "ofa-v2-rxe0-1"
	}
	return e, dialKpeer(t, ctl)
}

// stack starts an RDS stack on the dat transport over the VM's RoCE IA,
// closed when the test ends.
func (e *env) stack(t *testing.T) *rdsoverdat.Stack {
	t.Helper()
	st := rdsoverdat.NewStack(rdsoverdat.Config{
		Transports: []rdsoverdat.Transport{rdsoverdat.DAT(rdsoverdat.DATConfig{IA: e.ia})},
		SendBuffer: 8 << 20, RecvBuffer: 8 << 20,
	})
	t.Cleanup(func() { st.Close() })
	return st
}

// sock binds a socket of st to port (0: any) with a deadline.
func (e *env) sock(t *testing.T, st *rdsoverdat.Stack, port uint16, d time.Duration) *rdsoverdat.Socket {
	t.Helper()
	s := st.Socket()
	if err := s.Bind(netip.AddrPortFrom(e.local, port)); err != nil {
		t.Fatal(err)
	}
	s.SetDeadline(time.Now().Add(d))
	t.Cleanup(func() { s.Close() })
	return s
}

// freshKernel drops every connection the kernel has: its sockets close and
// rds_rdma is reloaded, so that the next connection is made by whichever
// side sends first.
func freshKernel(t *testing.T, k *kpeer) {
	t.Helper()
	k.must(t, map[string]any{"op": "closeall"})
	k.must(t, map[string]any{"op": "sh", "cmd": "modprobe -r rds_rdma && modprobe rds_rdma"})
}

// sendAll sends message first+i of sizes[i] to dst, in order, blocking.
func sendAll(s *rdsoverdat.Socket, dst netip.AddrPort, first int, sizes []int) error {
	var buf []byte
	for i, n := range sizes {
		buf = pattern(buf, uint64(first+i), n)
		if _, err := s.SendTo(buf, dst, 0); err != nil {
			return fmt.Errorf("message %d (%d bytes): %w", first+i, n, err)
		}
	}
	return nil
}

// recvAll receives len(sizes) messages and checks that each is message
// first+i of sizes[i] from src: nothing lost, duplicated, reordered or
// changed.
func recvAll(s *rdsoverdat.Socket, src netip.AddrPort, first int, sizes []int) error {
	buf := make([]byte, 1<<20+1)
	var want []byte
	for i, n := range sizes {
		m := rdsoverdat.Msg{Data: buf}
		got, err := s.RecvMsg(&m, 0)
		if err != nil {
			return fmt.Errorf("message %d: %w", first+i, err)
		}
		want = pattern(want, uint64(first+i), n)
		if m.Addr != src || !bytes.Equal(buf[:got], want) {
			idx := int64(-1)
			if got >= 8 {
				idx = int64(binary.BigEndian.Uint64(buf))
			}
			return fmt.Errorf("message %d: %d bytes (index %d) from %v, want %d bytes from %v", first+i, got, idx, m.Addr, n, src)
		}
	}
	return nil
}

// datagramSizes cover a lone header, a fragment boundary on each side,
// several fragments and RDS_MAX_MSG_SIZE.
var datagramSizes = []int{0, 1, 8, 100, 4095, 4096, 4097, 8192, 8193, 65536, 100000, 1<<20 - 1, 1 << 20}

// TestDatagrams sends every size both ways, once with the kernel
// connecting first and once with godapl connecting first.
func TestDatagrams(t *testing.T) {
	e, k := setup(t)
	for _, kernelFirst := range []bool{true, false} {
		name := map[bool]string{true: "kernel-connects", false: "godapl-connects"}[kernelFirst]
		t.Run(name, func(t *testing.T) {
			freshKernel(t, k)
			st := e.stack(t)
			s := e.sock(t, st, 4000, 3*time.Minute)
			k.must(t, map[string]any{"op": "open", "port": 4001})
			kaddr := netip.AddrPortFrom(e.peer, 4001)
			toKernel := func() {
				wait := k.bg(t, map[string]any{"op": "recv", "port": 4001, "first": 0, "sizes": datagramSizes, "timeout": 120})
				if err := sendAll(s, kaddr, 0, datagramSizes); err != nil {
					t.Error(err)
				}
				if _, err := wait(); err != nil {
					t.Error(err)
				}
			}
			fromKernel := func() {
				wait := k.bg(t, map[string]any{"op": "send", "port": 4001, "dst": s.BoundAddr().String(), "first": 100, "sizes": datagramSizes})
				if err := recvAll(s, kaddr, 100, datagramSizes); err != nil {
					t.Error(err)
				}
				if _, err := wait(); err != nil {
					t.Error(err)
				}
			}
			if kernelFirst {
				fromKernel()
				toKernel()
			} else {
				toKernel()
				fromKernel()
			}
			checkTransport(t, st)
		})
	}
}

// checkTransport checks that the stack's connections ran over dat.
func checkTransport(t *testing.T, st *rdsoverdat.Stack) {
	t.Helper()
	for _, n := range st.Info().Nodes {
		for _, c := range n.Conns {
			if c.Transport != "dat" {
				t.Errorf("connection %v -> %v over %s", c.Local, c.Remote, c.Transport)
			}
		}
	}
}

// streamSizes are the sizes of a stream's messages, in turn.
func streamSizes(n int) []int {
	mix := []int{8, 17, 100, 512, 1000, 1500, 4000, 4096, 9000}
	s := make([]int, n)
	for i := range s {
		s[i] = mix[(i*7)%len(mix)]
	}
	return s
}

// TestStreams runs 10,000 messages each way at once, every one checked,
// in order.
func TestStreams(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, 4100, 5*time.Minute)
	k.must(t, map[string]any{"op": "open", "port": 4101})
	kaddr := netip.AddrPortFrom(e.peer, 4101)
	sizes := streamSizes(10000)
	kRecv := k.bg(t, map[string]any{"op": "recv", "port": 4101, "first": 0, "sizes": sizes, "timeout": 240})
	kSend := k.bg(t, map[string]any{"op": "send", "port": 4101, "dst": s.BoundAddr().String(), "first": 0, "sizes": sizes, "timeout": 240})
	errc := make(chan error, 1)
	go func() { errc <- sendAll(s, kaddr, 0, sizes) }()
	if err := recvAll(s, kaddr, 0, sizes); err != nil {
		t.Error("kernel to godapl:", err)
	}
	if err := <-errc; err != nil {
		t.Error("godapl send:", err)
	}
	if _, err := kRecv(); err != nil {
		t.Error("godapl to kernel:", err)
	}
	if _, err := kSend(); err != nil {
		t.Error("kernel send:", err)
	}
}

// TestPorts talks to 64 kernel ports from one socket, and from one kernel
// socket to 64 of ours, all at once.
func TestPorts(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	const n, base = 64, 4200
	var waits []func() (map[string]any, error)
	for i := range n {
		k.must(t, map[string]any{"op": "open", "port": base + i})
		waits = append(waits, k.bg(t, map[string]any{"op": "echo", "port": base + i, "count": 1}))
	}
	s := e.sock(t, st, base, 2*time.Minute)
	var buf []byte
	for i := range n {
		buf = pattern(buf, uint64(i), 64)
		if _, err := s.SendTo(buf, netip.AddrPortFrom(e.peer, uint16(base+i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	got := make(map[uint16]bool)
	rb := make([]byte, 128)
	for range n {
		m := rdsoverdat.Msg{Data: rb}
		l, err := s.RecvMsg(&m, 0)
		if err != nil {
			t.Fatal(err)
		}
		i := int(m.Addr.Port()) - base
		if i < 0 || i >= n || got[m.Addr.Port()] || !bytes.Equal(rb[:l], pattern(buf, uint64(i), 64)) {
			t.Fatalf("echo of %d bytes from %v (seen before: %v)", l, m.Addr, got[m.Addr.Port()])
		}
		got[m.Addr.Port()] = true
	}
	for _, w := range waits {
		if _, err := w(); err != nil {
			t.Error(err)
		}
	}
	// The reverse: one kernel socket to 64 of ours.
	socks := make([]*rdsoverdat.Socket, n)
	for i := range socks {
		socks[i] = e.sock(t, st, uint16(base+100+i), 2*time.Minute)
	}
	for i := range n {
		k.must(t, map[string]any{"op": "send", "port": base, "dst": socks[i].BoundAddr().String(), "first": i, "sizes": []int{64}})
	}
	for i, s := range socks {
		if err := recvAll(s, netip.AddrPortFrom(e.peer, base), i, []int{64}); err != nil {
			t.Errorf("port %d: %v", base+100+i, err)
		}
	}
}

// TestPing pings both ways: RDS port 0 answers every 0-byte message with
// a 0-byte pong from port 0.
func TestPing(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, 0, time.Minute)
	k.must(t, map[string]any{"op": "ping", "peer": e.local.String(), "count": 5})
	buf := make([]byte, 16)
	for i := range 5 {
		if _, err := s.SendTo(nil, netip.AddrPortFrom(e.peer, 0), 0); err != nil {
			t.Fatal(err)
		}
		m := rdsoverdat.Msg{Data: buf}
		n, err := s.RecvMsg(&m, 0)
		if err != nil || n != 0 || m.Addr != netip.AddrPortFrom(e.peer, 0) {
			t.Fatalf("pong %d: %d bytes from %v, %v", i, n, m.Addr, err)
		}
	}
}

// isENOBUFS reports a congested destination.
func isENOBUFS(err error) bool { return errors.Is(err, syscall.ENOBUFS) }

// isEAGAIN reports a full send buffer.
func isEAGAIN(err error) bool { return errors.Is(err, syscall.EAGAIN) }
