package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The receiver of a tput run also reports what the whole machine spent
// while it measured: the busy CPU time of all CPUs from /proc/stat
// (user, nice, system, irq, softirq and steal, so the sender, kernel
// threads and softirq work count too), taken at its first message and at
// the end marker. Divided by the messages received, that is the CPU
// cost of one message for the whole path, which compares across
// implementations even when none of them keeps a CPU idle:
//
//	rds-bench rx: machine busy=6.92s idle=0.31s per_msg=2.253ms
//
// On a machine without /proc/stat the line is left out.

// cpuTimes is the first line of /proc/stat, in clock ticks (USER_HZ).
type cpuTimes struct{ busy, idle uint64 }

// userHZ is the unit of /proc/stat: 100 on every Linux architecture Go
// supports (the kernel's USER_HZ, whatever its own tick rate).
const userHZ = 100

// readCPUTimes reads the machine's CPU times; ok is false when
// /proc/stat cannot be read or parsed.
func readCPUTimes() (t cpuTimes, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return t, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return t, false
	}
	return parseCPUTimes(line)
}

// parseCPUTimes parses the aggregate "cpu" line: user nice system idle
// iowait irq softirq steal [guest guest_nice], of which guest time is
// already inside user and nice.
func parseCPUTimes(line string) (t cpuTimes, ok bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return t, false
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return t, false
		}
		v[i] = n
	}
	t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	t.idle = v[3] + v[4]
	return t, true
}

// machineWindow is the receiver's measured window.
type machineWindow struct {
	start, end cpuTimes
	ok         bool
}

// begin and finish mark the window's ends (a failed read spoils it).
func (w *machineWindow) begin() { w.start, w.ok = readCPUTimes() }
func (w *machineWindow) finish() {
	var ok bool
	w.end, ok = readCPUTimes()
	w.ok = w.ok && ok
}

// line is the report for msgs messages, "" without a window.
func (w *machineWindow) line(role string, msgs uint64) string {
	if !w.ok || msgs == 0 || w.end.busy < w.start.busy || w.end.idle < w.start.idle {
		return ""
	}
	busy := float64(w.end.busy-w.start.busy) / userHZ
	idle := float64(w.end.idle-w.start.idle) / userHZ
	return fmt.Sprintf("rds-bench %s: machine busy=%.2fs idle=%.2fs per_msg=%.3fms", role, busy, idle, busy*1e3/float64(msgs))
}
