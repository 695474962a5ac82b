package faults

// RDS over the tcp transport through an impaired link: netem's faults
// (on a veth when the kernel has sch_netem, through netns.TunLink when it
// does not) one after the other in one run, each followed by a clean
// phase in which delivery resumes.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/godapl/godapl/tests/internal/netns"
)

func TestRDSImpairedLink(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { testImpairedLink(t, tr) })
	}
}

// testImpairedLink runs alone (not in parallel): it measures rates.
func testImpairedLink(t *testing.T, tr string) {
	r := newRig(t, true)
	faults := []netns.Impairment{
		{Loss: 0.01},
		{Loss: 0.10},
		{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond},
		{Delay: 10 * time.Millisecond, Reorder: 0.25},
		{Duplicate: 0.05},
		{Rate: 1 << 20},
	}
	faultFor := scale(500*time.Millisecond, 5*time.Second)
	cleanFor := scale(400*time.Millisecond, 3*time.Second)
	const recoverBy = 100             // messages delivered after a fault that show recovery
	const stallFor = 30 * time.Second // no delivery for this long after Clear fails the test

	rcv := startChild(t, r.b, "rds-recv", receiverConf(r, tr))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, tr, 0))

	// rate is the receiver's delivery rate, messages per second, in
	// [from, to).
	rate := func(from, to time.Time) float64 {
		return float64(rcv.at(to).Received-rcv.at(from).Received) / to.Sub(from).Seconds()
	}
	type phase struct {
		imp                   netns.Impairment
		before, during, after float64
		recovery              time.Duration // from Clear to recoverBy more messages delivered
	}
	var phases []phase
	var clean []float64 // every clean window's rate
	median := func() float64 {
		c := slices.Clone(clean)
		slices.Sort(c)
		return c[len(c)/2]
	}
	win := cleanFor / 2
	time.Sleep(cleanFor)
	for _, imp := range faults {
		p := phase{imp: imp}
		t0 := time.Now()
		p.before = rate(t0.Add(-win), t0)
		clean = append(clean, p.before)
		if err := r.link.Impair(imp); err != nil {
			t.Fatal(err)
		}
		time.Sleep(faultFor)
		t1 := time.Now()
		p.during = rate(t0, t1)
		if err := r.link.Clear(); err != nil {
			t.Fatal(err)
		}
		// Recovery: delivery resumes once the link is clean. What the
		// test asserts is progress (recoverBy more messages delivered,
		// failing only on a stall, as every wait of the harness does),
		// not a rate: the machine is shared, and a rate threshold fails
		// under load while the transport is healthy. The rates are
		// logged for whoever reads the run.
		base := rcv.last().Received
		rcv.waitFor(fmt.Sprintf("delivery after clearing %v", imp), stallFor,
			func(rep report) bool { return rep.Received >= base+recoverBy })
		p.recovery = time.Since(t1)
		time.Sleep(win)
		now := time.Now()
		p.after = rate(now.Add(-win), now)
		clean = append(clean, p.after)
		phases = append(phases, p)
	}
	s := snd.stop(60 * time.Second) // the sender stops sending, drains, reports
	rcv.waitFor("all messages", 30*time.Second, func(rep report) bool { return rep.Received >= s.Sent })
	rc := rcv.stop(30 * time.Second)

	c := tally(tr+": netem-style faults in sequence", time.Since(start), s, rc)
	how := "veth+netem"
	if r.tun != nil {
		how = "TunLink (no sch_netem): " + r.tun.Counts().String()
	}
	c.Extra = "link=" + how
	exact(t, c, s, rc)
	t.Logf("PHASE clean median %.0f msgs/s", median())
	for _, p := range phases {
		line := fmt.Sprintf("%-24s msgs/s before %7.0f during %7.0f after %7.0f, recovered in %v",
			p.imp, p.before, p.during, p.after, p.recovery.Round(time.Millisecond))
		t.Log("PHASE", line)
	}
}
