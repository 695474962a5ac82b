package tools

import (
	"path/filepath"
	"strings"
	"testing"
)

// rds-ping gets replies from a node that a listening rds-cat started, and
// none from an address where nothing runs.
func TestPing(t *testing.T) {
	t.Parallel()
	peer, local := addr(t), addr(t)
	sock := filepath.Join(t.TempDir(), "cat.sock")
	d := start(t, "rds-cat", "-l", "-b", peer+":7000", "--info-socket", sock)
	d.waitFile(t, sock)
	r := run(t, "", nil, "rds-ping", "-c", "3", "-i", "0.05", "-I", local, "--info-socket", "none", peer)
	r.want(t, 0, "   1: ", "   3: ", " usec", "3 sent, 3 received, 0% lost")
	d.stop(t).want(t, 0)

	r = run(t, "", nil, "rds-ping", "-c", "2", "-i", "0.05", "-W", "300ms", "-I", local, "--info-socket", "none", addr(t))
	r.want(t, 1, "no reply within 300ms", "2 sent, 0 received, 100% lost", "stderr:", "rds-ping: no reply from")
	if r.took > 5e9 {
		t.Errorf("took %v", r.took)
	}
}

// rds-cat sends lines and generated payloads, prints what it receives,
// echoes, and fails quickly when nobody acknowledges.
func TestCat(t *testing.T) {
	t.Parallel()
	a, b := addr(t), addr(t)
	dir := t.TempDir()

	sock := filepath.Join(dir, "l.sock")
	l := start(t, "rds-cat", "-l", "-b", a+":5000", "--count", "3", "--info-socket", sock)
	l.waitFile(t, sock)
	run(t, "one\ntwo\n\nthree\n", nil, "rds-cat", "-b", b+":5001", "--info-socket", "none", a+":5000").want(t, 0)
	if got := l.wait(t); got.code != 0 || got.stdout != "one\ntwo\n\n" {
		t.Errorf("listener: code %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}

	sock = filepath.Join(dir, "e.sock")
	e := start(t, "rds-cat", "--echo", "-b", a+":5002", "--info-socket", sock)
	e.waitFile(t, sock)
	r := run(t, "", nil, "rds-cat", "-b", b+":5003", a+":5002", "--size", "3000", "--count", "2", "-v",
		"--wait", "300ms", "--info-socket", "none")
	r.want(t, 0, "sent 3000 bytes to "+a+":5002", "recv from "+a+":5002 len 3000: \"abcdef")
	if n := strings.Count(r.stdout, "recv from"); n != 2 {
		t.Errorf("%d echoes:\n%s", n, r.stdout)
	}
	e.stop(t).want(t, 0, "recv from "+b+":5003 len 3000")

	r = run(t, "lost\n", nil, "rds-cat", "-b", b+":5004", "--timeout", "500ms", "--info-socket", "none", addr(t)+":5000")
	r.want(t, 1, "stderr:", "no acknowledgement within 500ms")
}

// A second listener on the same address and port fails with a clear
// error instead of sharing or hanging.
func TestCatPortInUse(t *testing.T) {
	t.Parallel()
	a := addr(t)
	sock := filepath.Join(t.TempDir(), "l.sock")
	l := start(t, "rds-cat", "-l", "-b", a+":5000", "--info-socket", sock)
	l.waitFile(t, sock)
	// Same process-level port, other process: the transport's listener is taken.
	r := run(t, "", nil, "rds-cat", "-l", "-b", a+":5000", "--timeout", "1s", "--info-socket", "none")
	// The error names both ports that can clash and the way out.
	r.want(t, 1, "stderr:", "address already in use", "RDS port 5000", "conn_qual 18634 of the dat transport",
		"--transport-port")
	l.stop(t).want(t, 0)
}
