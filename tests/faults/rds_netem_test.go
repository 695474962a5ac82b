package faults

// RDS over the tcp transport through an impaired link: netem's faults
// (on a veth when the kernel has sch_netem, through netns.TunLink when it
// does not) one after the other in one run, each followed by a clean
// phase that shows throughput recovering.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/godapl/godapl/tests/internal/netns"
)

func TestRDSImpairedLink(t *testing.T) {
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

	rcv := startChild(t, r.b, "rds-recv", receiverConf(r))
	start := time.Now()
	snd := startChild(t, r.a, "rds-send", senderConf(r, 0))

	// rate is the receiver's delivery rate, messages per second, in
	// [from, to).
	rate := func(from, to time.Time) float64 {
		return float64(rcv.at(to).Received-rcv.at(from).Received) / to.Sub(from).Seconds()
	}
	type phase struct {
		imp                   netns.Impairment
		before, during, after float64
	}
	var phases []phase
	var clean []float64 // every clean-phase rate: the baseline
	time.Sleep(cleanFor)
	for _, imp := range faults {
		p := phase{imp: imp}
		t0 := time.Now()
		p.before = rate(t0.Add(-cleanFor/2), t0)
		if err := r.link.Impair(imp); err != nil {
			t.Fatal(err)
		}
		time.Sleep(faultFor)
		t1 := time.Now()
		p.during = rate(t0, t1)
		if err := r.link.Clear(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(cleanFor)
		// Recovery: the second half of the clean phase, once queues
		// that built up under the fault have drained.
		t2 := time.Now()
		p.after = rate(t2.Add(-cleanFor/2), t2)
		phases = append(phases, p)
		clean = append(clean, p.before, p.after)
	}
	snd.stop(60 * time.Second) // asks the sender to stop sending; it drains first
	s := snd.final
	rcv.waitFor("all messages", 30*time.Second, func(rep report) bool { return rep.Received >= s.Sent })
	rc := rcv.stop(10 * time.Second)

	c := tally("netem-style faults in sequence", time.Since(start), *s, rc)
	how := "veth+netem"
	if r.tun != nil {
		how = "TunLink (no sch_netem): " + r.tun.Counts().String()
	}
	c.Extra = "link=" + how
	exact(t, c, *s, rc)
	// The machine is shared and the phases are short, so one clean
	// window can be slow for reasons of its own: recovery is judged
	// against the median of all clean windows.
	slices.Sort(clean)
	baseline := clean[len(clean)/2]
	t.Logf("PHASE baseline (median clean rate) %.0f msgs/s", baseline)
	for _, p := range phases {
		line := fmt.Sprintf("%-24s msgs/s before %7.0f during %7.0f after %7.0f (after/baseline %.2f)",
			p.imp, p.before, p.during, p.after, p.after/baseline)
		t.Log("PHASE", line)
		if p.after < 0.25*baseline {
			t.Errorf("throughput did not recover after %v: %s", p.imp, line)
		}
	}
}
