package main

import (
	"bytes"
	"context"
	"strings"
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
	if code != exitOK || !strings.Contains(out, "usage: rdma-perf") || !strings.Contains(out, "Exit status: 0 success, 1 runtime failure, 2 bad command line") {
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
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-provider", "ib"}, `-provider "ib": want siw, mem or rdmacore`},
		{[]string{"-provider", "mem", "-s"}, "mem works in loopback mode only"},
		{[]string{"-provider", "mem", "-c", "127.0.0.1"}, "mem works in loopback mode only"},
		{[]string{"-s", "-c", "127.0.0.1"}, "-s and -c exclude each other"},
		{[]string{"-s", "-p", "0"}, "-s needs a port"},
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
