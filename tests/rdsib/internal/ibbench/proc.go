package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"syscall"
	"time"
)

// procSnap is what the receiving process spent up to a moment: CPU time,
// context switches of all its threads (each an OS thread that slept and
// was woken, or was preempted), and the Go scheduler's runnable-to-running
// transitions, which the runtime samples (one in eight), so that the
// hand-offs of a message between goroutines and threads can be counted
// per message on either backend.
type procSnap struct {
	cpu   time.Duration
	vcsw  int64
	ivcsw int64
	sched uint64
	vm    vmSnap
}

var schedSample = []metrics.Sample{{Name: "/sched/latencies:seconds"}}

func snapProc() procSnap {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var s procSnap
	s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s.vcsw, s.ivcsw = ru.Nvcsw, ru.Nivcsw
	s.vm = snapVM()
	metrics.Read(schedSample)
	if v := schedSample[0].Value; v.Kind() == metrics.KindFloat64Histogram {
		for _, c := range v.Float64Histogram().Counts {
			s.sched += c
		}
	}
	return s
}

// printProc prints a PROC line: what the process in role (rx or tx)
// spent per message between snapshots a and b, over msgs messages.
func printProc(role string, a, b procSnap, msgs uint64) {
	if msgs == 0 {
		return
	}
	n := float64(msgs)
	fmt.Printf("PROC role=%s msgs=%d cpu_us_per_msg=%.2f vcsw_per_msg=%.3f ivcsw_per_msg=%.3f sched_samples_per_msg=%.3f rss_kB=%d anonhuge_kB=%d\n",
		role, msgs, float64((b.cpu-a.cpu).Nanoseconds())/1e3/n, float64(b.vcsw-a.vcsw)/n, float64(b.ivcsw-a.ivcsw)/n,
		float64(b.sched-a.sched)/n, rollup("Rss:"), rollup("AnonHugePages:"))
	printVM(role, a.vm, b.vm, msgs)
}

// rollup is a field of the process's /proc/self/smaps_rollup, in kB (0
// when unreadable): how much of its memory the VM's kernel backs with
// transparent huge pages, one thing a boot can lay out differently.
func rollup(field string) int64 {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("\n"+field))
	if !ok {
		return 0
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	var v int64
	fmt.Sscan(string(line), &v)
	return v
}
