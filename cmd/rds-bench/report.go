package main

import (
	"fmt"
	"io"
	"runtime"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// After a run each end prints one line of what it cost to stderr, so that
// a comparison of two builds (or backends) in the lab VM can tell where a
// difference comes from without a profiler: the process's CPU time (user
// and system), minor page faults, context switches (voluntary +
// involuntary), its garbage collections and the bytes it allocated, and
// for an rdsoverdat node the counters that show how messages moved:
// direct receptions, congestion maps and the waits of the sender.
//
//	rds-bench rx: cpu user=1.20s sys=2.31s minflt=5012 csw=2210+35 gc=3 alloc=12.6MB msgs=1520 direct=240 cong_sent=0 cong_recv=0 sndbuf_waits=0 cong_waits=0

// costLine formats the line; st is nil for a backend without a node.
func costLine(role string, msgs uint64, st *rdsoverdat.NodeStats) string {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	tv := func(t syscall.Timeval) float64 { return time.Duration(t.Nano()).Seconds() }
	line := fmt.Sprintf("rds-bench %s: cpu user=%.2fs sys=%.2fs minflt=%d csw=%d+%d gc=%d alloc=%.1fMB msgs=%d",
		role, tv(ru.Utime), tv(ru.Stime), ru.Minflt, ru.Nvcsw, ru.Nivcsw, ms.NumGC, float64(ms.TotalAlloc)/1e6, msgs)
	if st != nil {
		line += fmt.Sprintf(" direct=%d cong_sent=%d cong_recv=%d sndbuf_waits=%d cong_waits=%d",
			st.RecvDirect, st.CongUpdateSent, st.CongUpdateReceived, st.SendQueueFull, st.CongSendBlocked)
	}
	return line
}

// reportCost prints costLine for socket s's node (none for rawtcp).
func reportCost(w io.Writer, role string, s *rdsoverdat.Socket, msgs uint64) {
	var st *rdsoverdat.NodeStats
	if s != nil {
		if v, ok := s.NodeStats(); ok {
			st = &v
		}
	}
	fmt.Fprintln(w, costLine(role, msgs, st))
	if l := window.line(role, msgs); l != "" {
		fmt.Fprintln(w, l)
	}
}
