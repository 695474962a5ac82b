//go:build rdmacore

package rdsib

import (
	"context"
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
	st := e.stack(t)
	s := e.sock(t, st, 4500, 3*time.Minute)
	const rcvbuf = 1 << 16
	if err := s.SetOption(rdsoverdat.RecvBuffer(rcvbuf)); err != nil {
		t.Fatal(err)
	}
	k.must(t, map[string]any{"op": "open", "port": 4501})
	before := k.must(t, map[string]any{"op": "counter", "name": "cong_send_error"})["value"].(float64)
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
	k.must(t, map[string]any{"op": "waitcounter", "name": "cong_send_error", "above": before, "timeout": 120})
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
