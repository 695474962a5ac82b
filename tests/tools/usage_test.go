package tools

import (
	"path/filepath"
	"strings"
	"testing"
)

var tools = []string{"rds-stress", "rds-ping", "rds-cat", "rds-info"}

// -h explains every flag and exits 0; a bad flag or value exits 2 with
// one line on stderr.
func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tool := range tools {
		r := run(t, "", nil, tool, "-h")
		r.want(t, 0, "usage: "+tool, "Exit status: 0 success, 1 runtime failure, 2 bad command line")
		if tool != "rds-info" {
			r.want(t, 0, "-transport", "-info-socket", "-log")
		}
		r = run(t, "", nil, tool, "--no-such-flag")
		r.want(t, 2, "stderr:", tool+": flag provided but not defined: -no-such-flag")
		if strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: stdout %q stderr %q", tool, r.stdout, r.stderr)
		}
	}
	for _, c := range []struct {
		tool string
		args []string
		msg  string
	}{
		{"rds-ping", []string{"1.2.3"}, "not an IPv4 address"},
		{"rds-ping", []string{"-i", "soon", "127.0.0.1"}, "-i \"soon\""},
		{"rds-ping", nil, "want one destination address"},
		{"rds-cat", []string{"-l"}, "-l needs -b"},
		{"rds-cat", []string{"-b", "127.0.0.1", "127.0.0.1:1"}, "want an IPv4 ADDR:PORT"},
		{"rds-cat", []string{"127.0.0.1:1", "--size", "2000000"}, "at most 1048576"},
		{"rds-stress", []string{"-q", "8"}, "-q \"8\""},
		{"rds-stress", []string{"--transport", "ib"}, "--transport \"ib\""},
		{"rds-stress", []string{"-s", "nowhere.invalid"}, "not an IPv4 address"},
		{"rds-stress", []string{"--log", "loud"}, "log level \"loud\""},
		{"rds-info", []string{"--transport", "tcp"}, "--transport \"tcp\""},
	} {
		r := run(t, "", nil, c.tool, c.args...)
		r.want(t, 2, "stderr:", c.msg)
	}
}

// rds-info with nothing running prints empty tables and exits 0, as the
// real tool on a quiet host; every letter of the real tool is taken,
// alone or combined; GODAPL_LOG sets the level of every tool.
func TestInfoNothingRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, "", []string{"GODAPL_RUN_DIR=" + dir}, "rds-info")
	r.want(t, 0, "RDS Sockets:", "BoundAddr  BPort  ConnAddr  CPort  SndBuf  RcvBuf  Inode", "RDS Connections:",
		"LocalAddr  RemoteAddr  Tos  NextTX  NextRX  Flgs", "Send Message Queue:", "Retransmit Message Queue:",
		"Receive Message Queue:", "TCP Connections:", "RDS IB Connections:", "Counters:")
	for _, args := range [][]string{{"-s"}, {"-r"}, {"-t"}, {"-T"}, {"-I", "-v"}, {"-kn"}, {"-cIv"}} {
		r = run(t, "", []string{"GODAPL_RUN_DIR=" + dir}, "rds-info", args...)
		r.want(t, 0)
		if strings.Count(r.stdout, ":\n") != max(1, len(strings.Trim(args[0], "-v"))) {
			t.Errorf("%v: tables\n%s", args, r.stdout)
		}
	}
	r = run(t, "", []string{"GODAPL_RUN_DIR=" + dir}, "rds-info", "-json")
	r.want(t, 0, "[]")

	a := addr(t)
	r = run(t, "", []string{"GODAPL_RUN_DIR=" + dir, "GODAPL_LOG=debug"}, "rds-ping", "-c", "1", "-I", a, a)
	r.want(t, 0, "1 received", "stderr:", "DBG", "serving rds-info", filepath.Join(dir, "rds-ping-"))
	r = run(t, "", []string{"GODAPL_LOG=shouty"}, "rds-ping", "-c", "1", a)
	r.want(t, 2, "stderr:", "log level \"shouty\"")
}
