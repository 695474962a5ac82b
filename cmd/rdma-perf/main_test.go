package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
)

// runArgs runs rdma-perf in this process and returns its exit status and
// output.
func runArgs(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestUsage: -h exits 0; a bad command line exits 2 with one line on
// stderr and nothing on stdout.
func TestUsage(t *testing.T) {
	code, out, _ := runArgs(t, "-h")
	if code != exitOK || !strings.Contains(out, "usage: rdma-perf") || !strings.Contains(out, "Exit status: 0 success, 1 runtime failure or interrupted, 2 bad command line") {
		t.Errorf("-h: exit %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-t", "nosuchtest"}, `unknown test "nosuchtest"`},
		{[]string{"-t", "write64k,"}, `unknown test ""`},
		{[]string{"--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"-d", "soon"}, `invalid value "soon" for flag -d`},
		{[]string{"-d", "0s"}, "-d 0s: want a positive duration"},
		{[]string{"host1", "host2"}, `unexpected argument "host2"`},
		{[]string{"-c", "h1", "h2"}, "give the server as an argument or with -c, not both"},
		{[]string{"-a", "-s", "64"}, "-a and -s exclude each other"},
		{[]string{"-s", "0"}, `-s "0": want a size`},
		{[]string{"-s", "17M"}, `-s "17M": want a size`},
		{[]string{"-n", "many"}, `invalid value "many" for flag -n`},
		{[]string{"-provider", "ib"}, `-provider "ib": want siw, mem or rdmacore`},
		{[]string{"-provider", "mem", "-serve"}, "mem works in loopback mode only"},
		{[]string{"-provider", "mem", "-c", "127.0.0.1"}, "mem works in loopback mode only"},
		{[]string{"-serve", "-c", "127.0.0.1"}, "-serve and a server to run against exclude each other"},
		{[]string{"-serve", "-p", "0"}, "-serve needs a port"},
		{[]string{"-p", "65535"}, "-p 65535: want a port from 0 to 65534"},
		{[]string{"-c", "127.0.0.1:http"}, `-c "127.0.0.1:http": bad port`},
		{[]string{"-c", ":18516"}, `-c ":18516": no host`},
	} {
		code, out, errs := runArgs(t, c.args...)
		if code != exitUsage || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, c.msg) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", c.args, code, out, errs, c.msg)
		}
	}
}

// TestRunLoopback: both ends in this process over the in-memory provider
// exit 0 with every figure beside its TCP baseline.
func TestRunLoopback(t *testing.T) {
	code, out, errs := runArgs(t, "-provider", "mem", "-d", "50ms", "-t", "write64k,pingpong64")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"RDMA Write 64 KiB", "Round trip 64 B p50", "godapl/TCP"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestRunFailure: a server that is not there is a runtime failure: exit
// 1 with the reason on stderr.
func TestRunFailure(t *testing.T) {
	addr := testutil.LoopbackAddr().String() + ":18516" // an address no other test process uses
	code, _, errs := runArgs(t, "-c", addr, "-t", "pingpong64", "-notcp")
	if code != exitFailed || !strings.Contains(errs, "pingpong64") {
		t.Errorf("against a closed port: exit %d, stderr %q; want exit 1 naming the test", code, errs)
	}
}

// TestPerftestFlags: -s and -n as perftest has them, -a the size sweep,
// each figure named with its size, and -json carrying test and size.
func TestPerftestFlags(t *testing.T) {
	code, out, errs := runArgs(t, "-provider", "mem", "-t", "write64k,send64", "-s", "4K", "-n", "300", "-notcp")
	if code != exitOK || !strings.Contains(out, "300 iterations per test") || !strings.Contains(out, "RDMA Write 4 KiB") ||
		!strings.Contains(out, "Send rate 4 KiB") || !strings.Contains(errs, "rdma-perf: [2/2] Send rate 4 KiB") {
		t.Errorf("-s -n: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runArgs(t, "-provider", "mem", "-t", "pingpong64", "-a", "-n", "20", "-notcp", "-json")
	var rep struct {
		Results []struct {
			Test   string
			Size   int
			Metric string
		}
		Iterations  uint64 `json:"iterations_per_test"`
		Interrupted bool
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitOK {
		t.Fatalf("-a -json: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	// Two figures (p50, p99) per size, 2 B to 8 MiB.
	if n := len(rep.Results); n != 2*(sweepMaxShift-sweepMinShift+1) || rep.Results[0].Size != 2 ||
		rep.Results[n-1].Size != 8<<20 || rep.Results[0].Test != "pingpong" || rep.Iterations != 20 || rep.Interrupted {
		t.Errorf("sweep: %+v", rep)
	}
}

// TestInterrupted: an interrupt keeps the figures measured before it,
// marks the report and exits 1.
func TestInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-provider", "mem", "-t", "pingpong64,write64k", "-d", "1h", "-n", "50", "-notcp", "-a"}, &out, &errb)
	}()
	// Cancel once the first measurement is in: its progress line is out.
	for !strings.Contains(errb.String(), "[1/") {
		select {
		case code := <-done:
			t.Fatalf("ended early: %d\n%s", code, errb.String())
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	code := <-done
	if code != exitFailed || !strings.Contains(out.String(), "interrupted") || !strings.Contains(out.String(), "Round trip 2 B p50") ||
		!strings.Contains(errb.String(), "interrupted after") {
		t.Errorf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
