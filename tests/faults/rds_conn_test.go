package faults

// Connections killed mid-stream, RDS over the tcp transport: reset by
// ss -K, the veth taken down and up, the receiving process killed and
// restarted.

import (
	"testing"
	"time"
)

// senderConf is the common sender: four sockets, 1 KiB messages, each to
// its own receiver socket.
func senderConf(r *rig, d time.Duration) roleConf {
	return roleConf{Local: r.addrA, Peer: r.addrB, Sockets: 4, Dests: 4, Size: 1024, Duration: d}
}

func receiverConf(r *rig) roleConf {
	return roleConf{Local: r.addrB, Sockets: 4, Size: 1024}
}

// drain waits for the sender to finish (everything acknowledged) and for
// the receiver to have read all of it, then stops the receiver.
func drain(t *testing.T, snd, rcv *child) (report, report) {
	t.Helper()
	s := snd.wait(60 * time.Second)
	rcv.waitFor("all messages", 30*time.Second, func(r report) bool { return r.Received >= s.Sent })
	return s, rcv.stop(10 * time.Second)
}

func TestRDSConnReset(t *testing.T) {
	r := newRig(t, false)
	d := scale(2*time.Second, 20*time.Second)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, d))

	resets := 0
	for time.Since(start) < d-300*time.Millisecond {
		time.Sleep(300 * time.Millisecond)
		resets += resetTCP(t, r.a)
	}
	s, rc := drain(t, snd, rcv)
	c := tally("tcp reset (ss -K every 300 ms)", time.Since(start), s, rc)
	exact(t, c, s, rc)
	if resets == 0 || s.Resets == 0 {
		t.Errorf("ss -K destroyed %d sockets, the sender saw %d resets: the fault did not happen", resets, s.Resets)
	}
}

func TestRDSLinkDownUp(t *testing.T) {
	r := newRig(t, false)
	d := scale(2500*time.Millisecond, 20*time.Second)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, d))

	outages := 0
	for time.Since(start) < d-800*time.Millisecond {
		time.Sleep(300 * time.Millisecond)
		before := rcv.last().Received
		if err := r.veth.SetUp(false); err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		during := rcv.last().Received
		if err := r.veth.SetUp(true); err != nil {
			t.Fatal(err)
		}
		outages++
		t.Logf("outage %d: %d received before, %d at its end", outages, before, during)
	}
	s, rc := drain(t, snd, rcv)
	c := tally("veth down 400 ms / up", time.Since(start), s, rc)
	exact(t, c, s, rc)
}

func TestRDSPeerRestart(t *testing.T) {
	r := newRig(t, false)
	d := scale(2500*time.Millisecond, 20*time.Second)
	rcv := startChild(t, r.b, "rds-recv", receiverConf(r))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, d))

	var killed []report
	for time.Since(start) < d-800*time.Millisecond {
		rcv.waitFor("traffic", 10*time.Second, func(r report) bool { return r.Received > 1000 })
		last := rcv.last()
		rcv.kill()
		killed = append(killed, last)
		time.Sleep(200 * time.Millisecond)
		rcv = startChild(t, r.b, "rds-recv", receiverConf(r))
	}
	s := snd.wait(60 * time.Second)
	// What the dead receivers had read but not reported, and what TCP had
	// acknowledged into their buffers, is gone with them; the sender must
	// still retire every message (acknowledged or flushed) and the live
	// receiver must see its stream in order, without duplicates.
	rcv.waitFor("quiet", 10*time.Second, func(rep report) bool {
		time.Sleep(100 * time.Millisecond)
		return rcv.last().Received == rep.Received
	})
	rc := rcv.stop(10 * time.Second)
	all := append(killed, rc)
	c := tally("receiver killed (SIGKILL) and restarted", time.Since(start), s, all...)
	c.Extra = "restarts=" + itoa(len(killed))
	t.Log(c)
	if s.Err != "" {
		t.Error("sender:", s.Err)
	}
	if rc.Received == 0 {
		t.Error("the last receiver got nothing: delivery did not resume after the restart")
	}
	if c.Duplicates != 0 || c.Corrupt != 0 {
		t.Errorf("duplicates or corruption across restarts: %v", c)
	}
	if c.Received > c.Sent {
		t.Errorf("received more than sent: %v", c)
	}
	if s.LeakedGoroutines != 0 || rc.LeakedGoroutines != 0 {
		t.Errorf("leaked goroutines: sender %d, receiver %d", s.LeakedGoroutines, rc.LeakedGoroutines)
	}
}
