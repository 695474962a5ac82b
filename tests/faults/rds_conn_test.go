package faults

// Connections killed mid-stream, RDS over the tcp transport: reset by
// ss -K, the veth taken down and up, the receiving process killed and
// restarted.

import (
	"fmt"
	"testing"
	"time"
)

// senderConf is the common sender: four sockets, 1 KiB messages, each to
// its own receiver socket.
func senderConf(r *rig, tr string, d time.Duration) roleConf {
	return roleConf{Local: r.addrA, Peer: r.addrB, Sockets: 4, Dests: 4, Size: 1024, Duration: d, Transport: tr}
}

func receiverConf(r *rig, tr string) roleConf {
	return roleConf{Local: r.addrB, Sockets: 4, Size: 1024, Transport: tr}
}

// eachTransport runs fn as a parallel sub-test per RDS transport: each
// scenario has its own namespaces, and its time is mostly waiting.
func eachTransport(t *testing.T, fn func(t *testing.T, tr string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			fn(t, tr)
		})
	}
}

// midStream waits until the receiver has taken another 500 messages, so
// that the next fault hits a connection that is carrying traffic; if
// traffic stops instead, it fails with both ends' last reports.
func midStream(t *testing.T, rcv, snd *child) {
	t.Helper()
	from := rcv.last().Received
	w := rcv.watchStall()
	for rcv.last().Received < from+500 {
		if w.still() > 30*time.Second {
			t.Fatalf("delivery stopped: no traffic for 30 s after %d messages\nreceiver %+v\nsender   %+v", rcv.last().Received, rcv.last(), snd.last())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopAndDrain stops a sender that runs until told, then drains as drain.
func stopAndDrain(t *testing.T, snd, rcv *child) (report, report) {
	t.Helper()
	s := snd.stop(60 * time.Second)
	rcv.waitFor("all messages", 30*time.Second, func(r report) bool { return r.Received >= s.Sent })
	return s, rcv.stop(30 * time.Second)
}

// drain waits for the sender to finish (everything acknowledged) and for
// the receiver to have read all of it, then stops the receiver.
func drain(t *testing.T, snd, rcv *child) (report, report) {
	t.Helper()
	s := snd.wait(60 * time.Second)
	rcv.waitFor("all messages", 30*time.Second, func(r report) bool { return r.Received >= s.Sent })
	return s, rcv.stop(30 * time.Second)
}

func TestRDSConnReset(t *testing.T) { eachTransport(t, testRDSConnReset) }

func testRDSConnReset(t *testing.T, tr string) {
	r := newRig(t, false)
	faults := scale(3, 30)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r, tr))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, tr, 0))

	destroyed := 0
	for range faults {
		destroyed += resetMidStream(t, r.a, tr, rcv, snd)
	}
	s, rc := stopAndDrain(t, snd, rcv)
	c := tally(fmt.Sprintf("%s: tcp reset (ss -K) x%d mid-stream", tr, faults), time.Since(start), s, rc)
	c.Extra = fmt.Sprintf("sockets-destroyed=%d", destroyed)
	exact(t, c, s, rc)
	if destroyed < faults || s.Resets == 0 {
		t.Errorf("ss -K destroyed %d sockets, the sender saw %d resets: the fault did not happen", destroyed, s.Resets)
	}
}

func TestRDSLinkDownUp(t *testing.T) { eachTransport(t, testRDSLinkDownUp) }

func testRDSLinkDownUp(t *testing.T, tr string) {
	r := newRig(t, false)
	outages := scale(2, 20)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r, tr))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, tr, 0))

	for range outages {
		midStream(t, rcv, snd)
		if err := r.veth.SetUp(false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		if err := r.veth.SetUp(true); err != nil {
			t.Fatal(err)
		}
	}
	s, rc := stopAndDrain(t, snd, rcv)
	c := tally(fmt.Sprintf("%s: veth down 400 ms then up, x%d mid-stream", tr, outages), time.Since(start), s, rc)
	exact(t, c, s, rc)
}

func TestRDSPeerRestart(t *testing.T) { eachTransport(t, testRDSPeerRestart) }

func testRDSPeerRestart(t *testing.T, tr string) {
	r := newRig(t, false)
	restarts := scale(2, 10)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r, tr))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, tr, 0))

	var killed []report
	for range restarts {
		rcv.waitFor("traffic", 30*time.Second, func(r report) bool { return r.Received > 1000 })
		last := rcv.last()
		rcv.kill()
		killed = append(killed, last)
		time.Sleep(200 * time.Millisecond)
		rcv = startChild(t, r.b, "rds-recv", receiverConf(r, tr))
	}
	midStream(t, rcv, snd)
	s := snd.stop(60 * time.Second)
	// What the dead receivers had read but not reported, and what TCP had
	// acknowledged into their buffers, is gone with them; the sender must
	// still retire every message (acknowledged or flushed) and the live
	// receiver must see its stream in order, without duplicates.
	rcv.waitFor("quiet", 10*time.Second, func(rep report) bool {
		time.Sleep(100 * time.Millisecond)
		return rcv.last().Received == rep.Received
	})
	rc := rcv.stop(30 * time.Second)
	all := append(killed, rc)
	c := tally(tr+": receiver killed (SIGKILL) and restarted", time.Since(start), s, all...)
	c.Extra = "restarts=" + itoa(len(killed))
	t.Log(c)
	if s.Err != "" {
		t.Errorf("sender: %s; its final report: %+v", s.Err, s)
	}
	if rc.Received == 0 {
		t.Error("the last receiver got nothing: delivery did not resume after the restart")
	}
	if c.Duplicates != 0 || c.Corrupt != 0 {
		t.Errorf("duplicates or corruption across restarts: %v", c)
	}
	if c.Received > c.Sent {
		// Messages the dead receiver had taken but not yet acknowledged
		// are resent to its successor before the GEN_NUM probe tells the
		// sender that the peer restarted: a new socket gets them again.
		t.Logf("%d messages redelivered to a restarted receiver", c.Received-c.Sent)
	}
	if s.LeakedGoroutines != 0 || rc.LeakedGoroutines != 0 {
		t.Errorf("leaked goroutines: sender %d, receiver %d", s.LeakedGoroutines, rc.LeakedGoroutines)
	}
}
