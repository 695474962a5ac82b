package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsage: -h (of the tool or of a role) exits 0 with the usage on
// stdout; a bad command line exits 2 with one line on stderr, before
// anything is bound or sent.
func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"rx", "-h"}, {"-backend", "rawtcp", "tx", "-h"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitOK || !strings.Contains(out.String(), "usage: rds-bench") ||
			!strings.Contains(out.String(), "Exit status: 0 success, 1 runtime failure, 2 bad command line") {
			t.Errorf("%q: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
	}
	const rx = "127.0.0.1:19001"
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "want a role: rx or tx"},
		{[]string{"sideways"}, `role "sideways": want rx or tx`},
		{[]string{"-no-such-flag", "rx"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"rx", "-bind", rx, "-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"-backend", "ib", "rx", "-bind", rx}, `-backend "ib": want tcp, kernel or rawtcp`},
		{[]string{"-port", "0", "rx", "-bind", rx}, "-port 0: want 1 to 65535"},
		{[]string{"rx", "-bind", rx, "-mode", "fast"}, `-mode "fast": want tput or pingpong`},
		{[]string{"rx", "-bind", rx, "-size", "0"}, "-size 0: want 1 to 1048576 bytes"},
		{[]string{"rx", "-bind", rx, "-size", "2000000"}, "-size 2000000: want 1 to 1048576 bytes"},
		{[]string{"tx", "-bind", rx, "-to", rx, "-secs", "0"}, "-secs 0: want a positive number"},
		{[]string{"tx", "-bind", rx, "-to", rx, "-iters", "0"}, "-iters 0: want at least 1"},
		{[]string{"rx"}, `-bind "": want ip:port`},
		{[]string{"rx", "-bind", "127.0.0.1"}, `-bind "127.0.0.1": want ip:port`},
		{[]string{"tx", "-bind", rx}, `-to "": want the receiver's ip:port`},
		{[]string{"rx", "-bind", rx, "extra"}, `unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		code := run(c.args, &out, &errb)
		if code != exitUsage || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line saying %q", c.args, code, out.String(), errb.String(), c.msg)
		}
	}
}

// TestRunFailure: a failure at run time (here: binding an address the
// host does not have) exits 1.
func TestRunFailure(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-backend", "rawtcp", "rx", "-bind", "192.0.2.1:19001"}, &out, &errb); code != exitFailed || errb.Len() == 0 {
		t.Errorf("bind to an address the host lacks: exit %d, stderr %q; want exit 1 with the reason", code, errb.String())
	}
}

// TestTraceFlag: -trace writes a runtime execution trace of the run, a
// failed one included.
func TestTraceFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tx.trace")
	var out, errb bytes.Buffer
	run([]string{"-trace", path, "-backend", "rawtcp", "rx", "-bind", "192.0.2.1:19001"}, &out, &errb)
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("trace file: %v, starts %q; want a runtime trace (\"go 1.N trace\")", err, b[:min(len(b), 16)])
	}
}
