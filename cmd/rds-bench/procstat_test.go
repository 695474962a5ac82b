package main

import (
	"strings"
	"testing"
)

// TestParseCPUTimes: busy is user+nice+system+irq+softirq+steal, idle is
// idle+iowait (guest time is inside user already); anything but the
// aggregate cpu line is refused, and the window's line divides by the
// messages.
func TestParseCPUTimes(t *testing.T) {
	got, ok := parseCPUTimes("cpu  100 2 30 400 5 6 7 8 50 0\n")
	if !ok || got != (cpuTimes{busy: 100 + 2 + 30 + 6 + 7 + 8, idle: 405}) {
		t.Errorf("parse: %+v %v", got, ok)
	}
	for _, bad := range []string{"cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8", "intr 1 2 3 4 5 6 7 8"} {
		if _, ok := parseCPUTimes(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
	w := machineWindow{start: cpuTimes{busy: 1000, idle: 50}, end: cpuTimes{busy: 1300, idle: 60}, ok: true}
	if l := w.line("rx", 1500); !strings.Contains(l, "busy=3.00s idle=0.10s per_msg=2.000ms") {
		t.Errorf("line %q", l)
	}
	if l := w.line("rx", 0); l != "" {
		t.Errorf("no messages: %q", l)
	}
}
