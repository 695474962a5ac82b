package netns

import (
	"fmt"
	"strconv"
	"time"
)

// Impairment describes link faults in netem's terms; the zero value is a
// clean link. Probabilities are fractions (0.01 is 1 %).
type Impairment struct {
	Delay     time.Duration // added to every packet
	Jitter    time.Duration // uniform ± around Delay (reorders packets, as netem does)
	Loss      float64       // probability a packet is dropped
	Duplicate float64       // probability a packet is delivered twice
	// Reorder is the probability that a packet skips Delay and goes out
	// at once, ahead of delayed ones (netem's "reorder"; needs Delay).
	Reorder float64
	// Rate limits the link to this many bytes per second (0: no limit);
	// packets queue behind each other as on a slow wire.
	Rate int64
	// Limit bounds the packets waiting in the link (netem's limit,
	// default 1000); packets beyond it are dropped.
	Limit int
}

func (imp Impairment) String() string {
	s := ""
	add := func(f string, a ...any) {
		if s != "" {
			s += " "
		}
		s += fmt.Sprintf(f, a...)
	}
	if imp.Delay > 0 {
		add("delay %v", imp.Delay)
		if imp.Jitter > 0 {
			add("±%v", imp.Jitter)
		}
	}
	if imp.Loss > 0 {
		add("loss %g%%", imp.Loss*100)
	}
	if imp.Duplicate > 0 {
		add("duplicate %g%%", imp.Duplicate*100)
	}
	if imp.Reorder > 0 {
		add("reorder %g%%", imp.Reorder*100)
	}
	if imp.Rate > 0 {
		add("rate %dB/s", imp.Rate)
	}
	if s == "" {
		return "clean"
	}
	return s
}

func (imp Impairment) limit() int {
	if imp.Limit > 0 {
		return imp.Limit
	}
	return 1000
}

func (imp Impairment) onlyRate() bool {
	return imp.Rate > 0 && imp.Delay == 0 && imp.Jitter == 0 && imp.Loss == 0 && imp.Duplicate == 0 && imp.Reorder == 0
}

func pct(p float64) string { return strconv.FormatFloat(p*100, 'f', -1, 64) + "%" }

func usec(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }

// netemArgs is imp as arguments of tc's netem qdisc.
func (imp Impairment) netemArgs() []string {
	args := []string{"limit", strconv.Itoa(imp.limit())}
	if imp.Delay > 0 || imp.Jitter > 0 {
		args = append(args, "delay", usec(imp.Delay))
		if imp.Jitter > 0 {
			args = append(args, usec(imp.Jitter))
		}
	}
	if imp.Loss > 0 {
		args = append(args, "loss", pct(imp.Loss))
	}
	if imp.Duplicate > 0 {
		args = append(args, "duplicate", pct(imp.Duplicate))
	}
	if imp.Reorder > 0 {
		args = append(args, "reorder", pct(imp.Reorder))
	}
	if imp.Rate > 0 {
		args = append(args, "rate", strconv.FormatInt(imp.Rate*8, 10)+"bit")
	}
	return args
}

// tbfArgs is a rate-only imp as tc's token bucket filter.
func (imp Impairment) tbfArgs() []string {
	burst := max(imp.Rate/100, 3000) // 10 ms worth, at least two full frames
	return []string{"tbf", "rate", strconv.FormatInt(imp.Rate*8, 10) + "bit",
		"burst", strconv.FormatInt(burst, 10), "latency", "200ms"}
}
