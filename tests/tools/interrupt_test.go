package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// One Ctrl-C behaviour for every tool: SIGINT stops it, it prints what it
// measured so far marked "interrupted", and its exit status says whether
// its promise was kept. These tests send SIGINT once a tool has shown,
// on its output, that it got somewhere, as a person at a terminal would.

// The demo interrupted: at once, the figures so far, exit 0 (every
// request sent was answered).
func TestInterruptStressDemo(t *testing.T) {
	t.Parallel()
	d := start(t, "rds-stress", "--demo", "-T", "600", "--info-socket", "none")
	d.waitOutput(t, "tsks   tx/s")
	r := d.stop(t)
	r.want(t, 0, "(average)", ", interrupted", "round trip (us)")
}

// A passive instance interrupted ends normally; an active one
// interrupted reports its run (JSON: interrupted) and exits 0, and its
// passive instance ends with it.
func TestInterruptStressPair(t *testing.T) {
	t.Parallel()
	lone := start(t, "rds-stress", "-r", addr(t), "--info-socket", "none")
	lone.waitOutput(t, "waiting for an active instance")
	lone.stop(t).want(t, 0, "passive interrupted: 0 requests answered")

	srvAddr := addr(t)
	sock := filepath.Join(t.TempDir(), "srv.sock")
	srv := start(t, "rds-stress", "-r", srvAddr, "--info-socket", sock)
	srv.waitFile(t, sock)
	cli := start(t, "rds-stress", "-s", srvAddr, "-r", addr(t), "-T", "600", "-json", "--info-socket", "none")
	cli.waitOutput(t, "tsks   tx/s")
	r := cli.stop(t)
	r.want(t, 0, `"interrupted": true`)
	var res struct {
		Total struct{ Requests, Answers uint64 }
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Total.Answers != res.Total.Requests {
		t.Errorf("%v: %+v", err, res)
	}
	srv.wait(t).want(t, 0, "passive done:")
}

// rds-ping interrupted: the summary says so; the status is ping's.
func TestInterruptPing(t *testing.T) {
	t.Parallel()
	peer := addr(t)
	sock := filepath.Join(t.TempDir(), "cat.sock")
	l := start(t, "rds-cat", "-l", "-b", peer+":7000", "--info-socket", sock)
	l.waitFile(t, sock)
	p := start(t, "rds-ping", "-i", "50msec", "-I", addr(t), "--info-socket", "none", peer)
	p.waitOutput(t, "   1: ")
	// The ping in flight at the interrupt counts as sent and lost.
	p.stop(t).want(t, 0, " sent, ", " received, ", "% lost, interrupted")
	l.stop(t).want(t, 0)

	sock = filepath.Join(t.TempDir(), "ping.sock")
	p = start(t, "rds-ping", "-W", "60s", "-I", addr(t), "--info-socket", sock, addr(t))
	p.waitFile(t, sock)
	p.stop(t).want(t, 1, " 0 received", "interrupted", "stderr:", "no reply from")
}

// rds-cat interrupted while sending exits 0 only if every datagram it
// sent was acknowledged; a listener's interrupt is its normal end.
func TestInterruptCat(t *testing.T) {
	t.Parallel()
	peer := addr(t)
	sock := filepath.Join(t.TempDir(), "l.sock")
	l := start(t, "rds-cat", "-l", "-b", peer+":7001", "--info-socket", sock)
	l.waitFile(t, sock)
	// An *os.File as stdin: the tool reads the pipe itself, as from a
	// shell, and Wait does not wait for a copying goroutine.
	in, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer feed.Close()
	s := startIn(t, in, "rds-cat", "-b", addr(t)+":7002", "--info-socket", "none", peer+":7001")
	if _, err := feed.Write([]byte("first\n")); err != nil {
		t.Fatal(err)
	}
	l.waitOutput(t, "first\n")
	s.stop(t).want(t, 0, "stderr:", "interrupted: 1 datagrams sent to "+peer+":7001, all acknowledged")
	l.stop(t).want(t, 0, "first\n")

	in2, feed2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in2.Close()
	defer feed2.Close()
	s = startIn(t, in2, "rds-cat", "-v", "-b", addr(t)+":7003", "--info-socket", "none", addr(t)+":7004")
	if _, err := feed2.Write([]byte("lost\n")); err != nil {
		t.Fatal(err)
	}
	s.waitOutput(t, "sent 4 bytes to")
	r := s.stop(t)
	r.want(t, 1, "stderr:", "interrupted: 1 datagrams sent to", "not all acknowledged")
	if strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("not one line: %q", r.stderr)
	}
}

// dattest and rdma-perf interrupted keep the figures measured so far,
// mark them, and exit 1: the measurement asked for was not finished.
func TestInterruptMeasuring(t *testing.T) {
	t.Parallel()
	d := start(t, "dattest", "-T", "P", "-D", "mem", "-i", "2000000000", "RW", "4096")
	d.waitOutput(t, "perf write:    ")
	d.stop(t).want(t, 1, ", interrupted after", "stderr:", "dattest: interrupted")

	// The transaction test prints at its end; with -d its debug log shows
	// that it runs.
	d = start(t, "dattest", "-T", "T", "-D", "mem", "-i", "2000000000", "-d")
	d.waitOutput(t, "in-process server ready")
	r := d.stop(t)
	r.want(t, 1, "DTOs verified", ", interrupted")

	p := start(t, "rdma-perf", "-provider", "mem", "-t", "pingpong64", "-a", "-n", "50", "-notcp")
	p.waitOutput(t, "rdma-perf: [1/23]")
	r = p.stop(t)
	r.want(t, 1, "50 iterations per test, interrupted", "Round trip 2 B p50", "stderr:", "interrupted after")
}
