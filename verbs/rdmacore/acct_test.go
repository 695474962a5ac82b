//go:build rdmacore

package rdmacore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// acct is what the process spent during a benchmark, beside its rate:
// CPU time, context switches and the threads that ran, so that a run can
// be compared with another program's (perf stat, /proc) on the same
// device.
type acct struct {
	start   time.Time
	ru      syscall.Rusage
	threads map[string]int64 // tid: utime+stime in clock ticks
}

func startAcct() *acct {
	a := &acct{start: time.Now(), threads: threadTicks()}
	syscall.Getrusage(syscall.RUSAGE_SELF, &a.ru)
	return a
}

// threadTicks reads the CPU time of each of the process's threads.
func threadTicks() map[string]int64 {
	m := map[string]int64{}
	dirs, _ := filepath.Glob("/proc/self/task/*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's closing parenthesis: state is
		// the first, utime the 12th and stime the 13th.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		k, _ := strconv.ParseInt(f[12], 10, 64)
		m[filepath.Base(d)] = u + k
	}
	return m
}

// report adds the metrics: CPU microseconds and context switches
// (voluntary, involuntary) per operation, the process's threads and how
// many of them used a tenth of a CPU or more during the run.
func (a *acct) report(b *testing.B) {
	wall := time.Since(a.start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) time.Duration {
		return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
	}
	cpu := tv(ru.Utime) + tv(ru.Stime) - tv(a.ru.Utime) - tv(a.ru.Stime)
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-us/op")
	b.ReportMetric(float64(ru.Nvcsw-a.ru.Nvcsw)/n, "vcsw/op")
	b.ReportMetric(float64(ru.Nivcsw-a.ru.Nivcsw)/n, "ivcsw/op")
	end := threadTicks()
	busy := 0
	const hz = 100 // USER_HZ, the unit of /proc's times
	for tid, t := range end {
		if used := time.Duration(t-a.threads[tid]) * time.Second / hz; used*10 >= wall {
			busy++
		}
	}
	b.ReportMetric(float64(len(end)), "threads")
	b.ReportMetric(float64(busy), "busy-threads")
}
