//go:build rdmacore

package rdsib

import (
	"context"
	"encoding/json"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// TestCongestionToKernel: a kernel socket that stops reading congests its
// port; the kernel's map update makes godapl's non-blocking sends fail
// with ENOBUFS, and blocking sends wait and go through once the reader
// drains the port and the uncongested map arrives. Every message arrives,
// in order.
func TestCongestionToKernel(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, 4400, 3*time.Minute)
	k.must(t, map[string]any{"op": "open", "port": 4401, "rcvbuf": 1 << 16})
	kaddr := netip.AddrPortFrom(e.peer, 4401)
	const size, most, more = 4096, 20000, 200
	var buf []byte
	sent := 0
	for ; sent < most; sent++ {
		buf = pattern(buf, uint64(sent), size)
		_, err := s.SendTo(buf, kaddr, rdsoverdat.MsgDontWait)
		if isENOBUFS(err) {
			break
		}
		if isEAGAIN(err) { // SO_SNDBUF full: wait for acks, then retry
			if _, err := s.Wait(context.Background(), rdsoverdat.PollOut); err != nil {
				t.Fatal(err)
			}
			sent--
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", sent, err)
		}
	}
	if sent == most {
		t.Fatalf("%d messages of %d bytes to a port nobody reads, and no ENOBUFS", most, size)
	}
	t.Logf("ENOBUFS after %d messages", sent)
	sizes := make([]int, sent+more)
	for i := range sizes {
		sizes[i] = size
	}
	wait := k.bg(t, map[string]any{"op": "recv", "port": 4401, "first": 0, "sizes": sizes, "timeout": 120})
	if err := sendAll(s, kaddr, sent, sizes[sent:]); err != nil {
		t.Fatal("after the port drained:", err)
	}
	if _, err := wait(); err != nil {
		t.Fatal(err)
	}
}

// TestCongestionFromKernel: a godapl socket that stops reading congests
// its port; our map update makes the kernel's sends fail with ENOBUFS
// until we read, and then they go through. Every message arrives, in
// order.
func TestCongestionFromKernel(t *testing.T) {
	e, k := setup(t)
	// No connection at the start: the kernel makes it for its first
	// message and queues the next ones meanwhile, the hardest case for
	// our map to come in time (below).
	freshKernel(t, k)
	st := e.stack(t)
	s := e.sock(t, st, 4500, 3*time.Minute)
	const rcvbuf = 1 << 16
	if err := s.SetOption(rdsoverdat.RecvBuffer(rcvbuf)); err != nil {
		t.Fatal(err)
	}
	// The kernel tests the destination's congestion bit only when a
	// message is queued (rds_cong_wait in rds_sendmsg), and what it has
	// queued goes out whatever maps come later. With the default 8 MiB
	// SO_SNDBUF its sender queues all 2000 messages within a second,
	// before a connection it must make first comes up, and so before we
	// have received the 17 messages that congest our port: no ENOBUFS,
	// however right our map. A SO_SNDBUF of 64 messages keeps it at most
	// that far past what we have acknowledged, so that our map, sent as
	// the 17th message arrives, finds most of the messages still to
	// send.
	const sndbuf = 64 * 4096
	k.must(t, map[string]any{"op": "open", "port": 4501, "sndbuf": sndbuf})
	before := kernelCounters(t, k)
	const n = 2000
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 4096
	}
	wait := k.bg(t, map[string]any{"op": "send", "port": 4501, "dst": s.BoundAddr().String(), "first": 0, "sizes": sizes, "timeout": 180})
	// Not reading until the kernel's sender has been refused for our
	// congested port (rds_cong_wait counts each ENOBUFS): a count of map
	// updates received would also go up for the map a new connection
	// carries, and reading then could drain the port before the
	// congested map ever reaches the sender.
	if _, err := k.call(map[string]any{"op": "waitcounter", "name": "cong_send_error", "above": before["cong_send_error"], "timeout": 120}); err != nil {
		dumpCong(t, st, k, 4501, before)
		t.Fatal(err)
	}
	if err := recvAll(s, netip.AddrPortFrom(e.peer, 4501), 0, sizes); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	if res["enobufs"].(float64) == 0 {
		t.Error("the kernel never saw ENOBUFS from our congested port")
	}
	t.Logf("kernel: %v ENOBUFS", res["enobufs"])
}

// kernelCounters returns the kernel's RDS counters that are not 0.
func kernelCounters(t *testing.T, k *kpeer) map[string]float64 {
	t.Helper()
	res := k.must(t, map[string]any{"op": "counters"})
	c := make(map[string]float64)
	for name, v := range res["counters"].(map[string]any) {
		c[name] = v.(float64)
	}
	return c
}

// dumpCong logs what both sides know of congestion on the kernel's port
// when the kernel's sender never met our congested port: our node (its
// congested ports, each socket's queued bytes, each connection's maps
// sent and received, the counters), the kernel's counters that moved
// since before, how far the kernel's sender on port got with the maps
// the kernel had received by its last message, and whether a send from
// port to our socket is refused now (the map has arrived since).
func dumpCong(t *testing.T, st *rdsoverdat.Stack, k *kpeer, port int, before map[string]float64) {
	t.Helper()
	var dst string
	for _, n := range st.Info().Nodes {
		b, _ := json.Marshal(n)
		t.Logf("godapl node: %s", b)
		for _, s := range n.Sockets {
			if s.Congested {
				dst = s.Bound.String()
			}
		}
	}
	moved := make(map[string]float64)
	for name, v := range kernelCounters(t, k) {
		if d := v - before[name]; d != 0 {
			moved[name] = d
		}
	}
	t.Logf("kernel counters since the test began: %v", moved)
	res, err := k.call(map[string]any{"op": "progress", "port": port})
	t.Logf("kernel sender: %v %v (cong_update_received %v before)", res, err, before["cong_update_received"])
	if dst != "" {
		res, err = k.call(map[string]any{"op": "probe", "port": port, "dst": dst})
		t.Logf("kernel probe of %s: %v %v", dst, res, err)
	}
}
