package faults

// The soak: rds-stress-like traffic (eight sockets each way of a namespace
// pair, message sizes from 12 bytes to 8 KiB) for SOAK (default a few
// seconds; `make faults SOAK=5m`), with a fault every SOAK_FAULT_EVERY
// cycling through a TCP reset and a veth outage. At the end the counters
// must balance (sent = received + canceled) and neither process's resident
// memory may have grown from the first quarter of the run to the end.

import (
	"fmt"
	"os"
	"testing"
	"time"
)

func envDuration(t *testing.T, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return d
}

func TestRDSSoak(t *testing.T) { eachTransport(t, testSoak) }

func testSoak(t *testing.T, tr string) {
	d := envDuration(t, "SOAK", scale(3*time.Second, time.Minute))
	every := envDuration(t, "SOAK_FAULT_EVERY", scale(time.Second, 10*time.Second))
	r := newRig(t, false)
	const sockets, size = 8, 8192
	rcv := startChild(t, r.b, "rds-recv", roleConf{Local: r.addrB, Sockets: sockets, Size: size, VarySize: true, Transport: tr})
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", roleConf{Local: r.addrA, Peer: r.addrB, Sockets: sockets, Dests: sockets,
		Size: size, VarySize: true, Transport: tr})

	faults := 0
	var early [2]report // sender, receiver at a quarter of the run
	// At least one fault of each kind, whatever the machine's load.
	for i := 0; i < 2 || time.Since(start) < d-every/2; i++ {
		time.Sleep(every)
		if early[0].RSS == 0 && time.Since(start) >= d/4 {
			early = [2]report{snd.last(), rcv.last()}
		}
		midStream(t, rcv, snd)
		switch i % 2 {
		case 0:
			resetTCP(t, r.a, tr)
		case 1:
			r.veth.SetUp(false)
			time.Sleep(300 * time.Millisecond)
			r.veth.SetUp(true)
		}
		faults++
	}
	if early[0].RSS == 0 {
		early = [2]report{snd.last(), rcv.last()}
	}
	s, rc := stopAndDrain(t, snd, rcv)
	c := tally(fmt.Sprintf("%s: soak %v, a fault every %v", tr, d, every), time.Since(start), s, rc)
	c.Extra = fmt.Sprintf("faults=%d sender-rss %d->%d MiB receiver-rss %d->%d MiB",
		faults, early[0].RSS>>20, s.RSS>>20, early[1].RSS>>20, rc.RSS>>20)
	exact(t, c, s, rc)
	if c.Sent != c.Received+c.Canceled {
		t.Errorf("counters do not balance: sent %d != received %d + canceled %d", c.Sent, c.Received, c.Canceled)
	}
	for _, p := range []struct {
		name        string
		early, last int64
	}{{"sender", early[0].RSS, s.RSS}, {"receiver", early[1].RSS, rc.RSS}} {
		// Flat: allowing for the race detector's shadow memory and GC
		// timing, growth beyond half again plus 32 MiB is a leak.
		if p.last > p.early+p.early/2+32<<20 {
			t.Errorf("%s RSS grew from %d MiB to %d MiB", p.name, p.early>>20, p.last>>20)
		}
	}
}
