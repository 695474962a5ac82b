package faults

// Load: 64 receiving nodes and thousands of sockets across two namespaces,
// and a receiver that stops reading, whose congestion must stop the
// senders while memory stays bounded.

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

func TestRDSManyNodesAndSockets(t *testing.T) {
	t.Parallel() // own namespaces; the time is mostly waiting
	r := newRig(t, false)
	// 64 node addresses on the receiver's veth, in the rig's /24.
	base := r.addrB.As4()
	var nodes []netip.Addr
	var prefixes []netip.Prefix
	for i := range 64 {
		a := netip.AddrFrom4([4]byte{base[0], base[1], base[2], byte(10 + i)})
		nodes = append(nodes, a)
		prefixes = append(prefixes, netip.PrefixFrom(a, 24))
	}
	if err := r.b.AddAddrs(r.veth.NameB, prefixes); err != nil {
		t.Fatal(err)
	}
	const perNode = 4 // receiving sockets per node
	senders := scale(1024, 4096)
	count := scale(3, 50)
	rcv := startChild(t, r.b, "rds-recv", roleConf{Local: nodes[0], Locals: nodes[1:], Sockets: perNode, Size: 512})
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peers: nodes, Sockets: senders, Dests: perNode, Size: 512, Count: count})
	s, rc := drain(t, snd, rcv)
	c := tally(fmt.Sprintf("load: %d sender sockets -> 64 nodes x %d sockets", senders, perNode), time.Since(start), s, rc)
	c.Extra = fmt.Sprintf("sender-rss=%dMiB receiver-rss=%dMiB", s.RSS>>20, rc.RSS>>20)
	exact(t, c, s, rc)
	if c.Sent != uint64(senders*count) {
		t.Errorf("sent %d, want %d", c.Sent, senders*count)
	}
}

func TestRDSReceiverStopsReading(t *testing.T) { eachTransport(t, testReceiverStopsReading) }

func testReceiverStopsReading(t *testing.T, tr string) {
	r := newRig(t, false)
	const (
		size    = 1024
		rcvbuf  = 64 << 10
		sockets = 4
	)
	pause := scale(1500*time.Millisecond, 10*time.Second)
	rcv := startChild(t, r.b, "rds-recv", roleConf{Local: r.addrB, Sockets: sockets, Size: size,
		RecvBuffer: rcvbuf, ReadPause: pause, PauseAfter: 2000, Transport: tr})
	start := time.Now()
	// The sender runs until stopped: on a loaded host it may need much
	// longer than the pause to bring the receiver its first 2000.
	snd := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peer: r.addrB, Sockets: sockets, Dests: sockets,
		Size: size, Transport: tr})

	// The receiver pauses once it has 2000 messages; let the pipe fill,
	// then watch the senders for the rest of the pause.
	rcv.waitFor("2000 messages", 30*time.Second, func(r report) bool { return r.Received >= 2000 })
	before := rcv.lastBelow(2000) // the pause began after this report
	time.Sleep(pause / 3)
	s0, r0 := snd.last(), rcv.last()
	time.Sleep(pause / 3)
	s1, r1 := snd.last(), rcv.last()
	rcvRSS := r1.RSS
	// The window is inside the pause unless this goroutine overslept
	// (a loaded host): then what it saw says nothing about the pause.
	inPause := r1.T < before.T+pause

	s, rc := stopAndDrain(t, snd, rcv)
	c := tally(tr+": receiver stops reading (congestion)", time.Since(start), s, rc)
	sentDuringPause := s1.Sent - s0.Sent
	c.Extra = fmt.Sprintf("sent-while-paused=%d received-while-paused=%d cong-blocked=%d sndbuf-waits=%d receiver-rss-paused=%dMiB",
		sentDuringPause, r1.Received-r0.Received, s.CongBlocked, s.QueueFull, rcvRSS>>20)
	exact(t, c, s, rc)
	if s.CongBlocked == 0 && s.QueueFull == 0 {
		t.Error("no sender ever waited: the pause had no effect")
	}
	if !inPause {
		t.Logf("the window ended %v after the pause began (pause %v): not checking what happened during the pause", r1.T-before.T, pause)
		return
	}
	// While nobody reads, a sender can only fill its SO_SNDBUF (106496
	// bytes) and what the receiver queues before its port is congested:
	// ~2 x rcvbuf per socket, with slack for messages in flight.
	bound := uint64(sockets * (106496 + 4*rcvbuf) / size)
	if sentDuringPause > bound {
		t.Errorf("senders queued %d messages while the receiver was not reading, want ≤ %d: congestion did not throttle", sentDuringPause, bound)
	}
	// A reader blocked in recvmsg when the pause began takes one more
	// message before it notices: at most one per socket.
	if r1.Received-r0.Received > sockets {
		t.Errorf("the receiver read %d messages during its pause", r1.Received-r0.Received)
	}
}

// TestRDSSRQExhausted: a dat receiver whose node posts only a handful of
// receive buffers in its SRQ, against many sender sockets. iWARP has no
// RNR retry, so the credits alone must stop the senders whenever the
// peer's buffers are all in use: every message still arrives exactly once
// and in order, and the senders are seen waiting for credits.
func TestRDSSRQExhausted(t *testing.T) {
	t.Parallel()
	r := newRig(t, false)
	const (
		sockets   = 16
		recvDepth = 8 // the smallest SRQ: a grant of 2 credits
	)
	// Every message waits for credits about three times, so 50 per
	// socket already exhaust the grant some 2400 times; the time is all
	// round trips for credits (200 took 43-64 s under -race at load 20).
	count := scale(50, 2000)
	rcv := startChild(t, r.b, "rds-recv", roleConf{Local: r.addrB, Sockets: sockets, Size: 6000,
		Transport: "dat", RecvDepth: recvDepth})
	start := time.Now()
	// 6000-byte messages are two fragments each, so each one needs both
	// credits of the grant.
	snd := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peer: r.addrB, Sockets: sockets, Dests: sockets,
		Size: 6000, Count: count, Transport: "dat"})
	s, rc := drain(t, snd, rcv)
	c := tally(fmt.Sprintf("dat: SRQ of %d buffers, %d sender sockets", recvDepth, sockets), time.Since(start), s, rc)
	c.Extra = fmt.Sprintf("credit-stalls=%d", s.CreditStalls)
	exact(t, c, s, rc)
	if c.Sent != uint64(sockets*count) {
		t.Errorf("sent %d, want %d", c.Sent, sockets*count)
	}
	if s.CreditStalls == 0 {
		t.Error("no send ever waited for credits: the SRQ was never exhausted")
	}
	// A send that found no posted receive would have terminated the
	// connection (no RNR retry): delivery would still be exact through
	// retransmission, so the resets are what tell. (Only the sender's:
	// its final report precedes its exit, which the receiver does count
	// as a reset.)
	if s.Resets != 0 {
		t.Errorf("%d connection resets while sending: a send outran the posted receives", s.Resets)
	}
}
