package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/internal/testutil"
)

// The tests build the command and run it as a user would; the in-process
// cases also call run directly, which checks for leaked goroutines.

var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// dattestBin builds the command once per test binary (not in TestMain, so
// that fuzz workers and -list do not build it).
func dattestBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "dattest"); buildErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "dattest"), ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "dattest")
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// command runs the dattestBin to completion (bounded by limit). The limit
// is the run's alone: the first call also builds the command, which on a
// loaded host with a cold build cache can take longer than any run.
func command(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	bin := dattestBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), LogEnv+"=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		t.Fatalf("dattest %s: still running after %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), limit, r.stdout, r.stderr)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errorsAs(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatal(err)
	}
	return r
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

func (r result) want(t *testing.T, code int, stdout string) {
	t.Helper()
	if r.code != code || !regexp.MustCompile(stdout).MatchString(r.stdout) {
		t.Fatalf("exit %d (want %d)\nstdout (want /%s/):\n%s\nstderr:\n%s", r.code, code, stdout, r.stdout, r.stderr)
	}
}

func needSiw(t *testing.T) {
	reg, err := providers.New(providers.Options{})
	if err != nil {
		t.Skipf("no interfaces: %v", err)
	}
	if _, err := reg.Lookup("siw-lo"); err != nil {
		t.Skip("no loopback interface")
	}
}

func TestHelp(t *testing.T) {
	r := command(t, 30*time.Second, "-h")
	r.want(t, exitOK, "usage: dattest")
	for _, f := range []string{"-T", "-D", "-s", "-n", "-p", "-i", "-t", "-w", "-d", "-V", "-P", "-R", "-S", "-o", "-m", "-max-qlen",
		"-max-lmr", "-timeout", "-log", "-json"} {
		if !regexp.MustCompile(`\n  ` + regexp.QuoteMeta(f) + `\s`).MatchString(r.stdout) {
			t.Errorf("-h does not explain %s", f)
		}
	}
	if r.stderr != "" {
		t.Errorf("stderr: %s", r.stderr)
	}
}

func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "-T is required"},
		{[]string{"-T", "X"}, `-T "X"`},
		{[]string{"-T", "T", "-bogus"}, "not defined: -bogus"},
		{[]string{"-T", "T", "-s", "no-such-host.invalid"}, "not an IPv4 address"},
		{[]string{"-T", "T", "-S", "0"}, `-S "0"`},
		{[]string{"-T", "T", "-S", "12q"}, `-S "12q"`},
		{[]string{"-T", "P", "-o", "atomic"}, `-o "atomic"`},
		{[]string{"-T", "P", "-p", "0"}, "-p 0"},
		{[]string{"-T", "P", "-m", "x"}, `-m "x"`},
		{[]string{"-T", "T", "-n", "70000"}, "-n 70000"},
		{[]string{"-T", "T", "-t", "0"}, "-t 0"},
		{[]string{"-T", "T", "-timeout", "-1s"}, "-timeout"},
		{[]string{"-T", "T", "-log", "loud"}, `-log "loud"`},
		{[]string{"-T", "T", "-R", "HT"}, `-R "HT": only BE`},
		{[]string{"-T", "T", "-r"}, "-r (RSP instead of PSP)"},
		{[]string{"-T", "F"}, "-T F: the FFT suites are not here"},
		{[]string{"-T", "Q"}, "-T Q needs -s"},
		{[]string{"-T", "L", "-w", "2"}, "-w 2 with -T L"},
		{[]string{"-T", "T", "extra"}, `op "extra": the first word must be client or server`},
		{[]string{"-T", "T", "client", "XX"}, `"XX" is not RR, RW or SR`},
		{[]string{"-T", "T", "client", "SR", "64"}, `has no server SR`},
		{[]string{"-T", "T", "client", "SR", "64", "server", "SR", "65"}, `the server echoes the 64 bytes`},
		{[]string{"-T", "T", "server", "RR"}, "the dattest server initiates no RDMA"},
		{[]string{"-T", "T", "client", "RW", "64", "-f"}, "-f only goes with SR"},
		{[]string{"-T", "P", "RW", "64", "1", "2"}, "too many words"},
		{[]string{"-T", "S", "RW"}, `unexpected argument "RW"`},
	} {
		r := command(t, 30*time.Second, c.args...)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("dattest %q: exit %d, stderr %q, stdout %q; want exit %d and one line containing %q",
				c.args, r.code, r.stderr, r.stdout, exitUsage, c.want)
		}
	}
}

// startServer starts "dattest -T S" on a free port and returns the port.
func startServer(t *testing.T, provider string) string {
	t.Helper()
	cmd := exec.Command(dattestBin(t), "-T", "S", "-D", provider, "-n", "0")
	cmd.Env = append(os.Environ(), LogEnv+"=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		// SIGTERM is the normal end of a server: exit status 0, promptly.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("server: %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("server ignored SIGTERM\n%s", stderr.String())
		}
	})
	select {
	case l := <-lines:
		m := regexp.MustCompile(`listening on (\S+) port (\d+)$`).FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("server said %q", l)
		}
		return m[2]
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start: %s", stderr.String())
	}
	return ""
}

func TestSiwServerAndClients(t *testing.T) {
	needSiw(t)
	port := startServer(t, "siw-lo")
	base := []string{"-D", "siw-lo", "-s", "127.0.0.1", "-n", port}
	command(t, 60*time.Second, append(base, "-T", "T", "-t", "2", "-w", "3", "-i", "20", "-S", "5000")...).
		want(t, exitOK, `transaction: 2 threads x 3 EPs x 20 iterations of 4 ops: 480 DTOs verified`)
	// dapltest's op lists, several segments per op, polling.
	command(t, 60*time.Second, append(base, "-T", "T", "-i", "20", "-P", "client", "SR", "4096", "server", "SR", "4096",
		"client", "RW", "8192", "2", "client", "RR", "8192", "2", "client", "SR", "100", "-f", "server", "SR", "100")...).
		want(t, exitOK, `1 threads x 1 EPs x 20 iterations of 6 ops: 120 DTOs verified`)
	for _, op := range []string{"RW", "RR", "SR"} {
		name := map[string]string{"RW": "write", "RR": "read", "SR": "send"}[op]
		command(t, 60*time.Second, append(base, "-T", "P", "-i", "500", "-p", "4", op, "512", "2")...).
			want(t, exitOK, `^perf `+name+`: 1024 B x 500, depth 4: [0-9.]+ s, [0-9]+ ops/s, [0-9.]+ MB/s, latency avg [0-9.]+ us`)
	}
	command(t, 60*time.Second, append(base, "-T", "P", "-o", "read", "-i", "300", "-m", "p", "-json")...).
		want(t, exitOK, `"op": "read",\s+"size": 4096,\s+"segments": 1,\s+"depth": 8,\s+"iterations": 300,\s+"ops": 300,`)
	// Two clients at once on one server.
	done := make(chan result, 1)
	go func() { done <- command(t, 60*time.Second, append(base, "-T", "P", "-o", "send", "-i", "300")...) }()
	command(t, 60*time.Second, append(base, "-T", "T", "-i", "10")...).want(t, exitOK, "transaction")
	(<-done).want(t, exitOK, "perf send")
}

func TestMemInProcess(t *testing.T) {
	command(t, 60*time.Second, "-D", "mem", "-T", "T", "-i", "10", "-json", "client", "RW", "64", "client", "RR", "64").
		want(t, exitOK, `"test": "T",\s+"threads": 1,\s+"eps_per_thread": 1,\s+"iterations": 10,\s+"ops": \[\s+"client RW 64 1",\s+"client RR 64 1"\s+\],\s+"dtos_verified": 20,`)
	command(t, 60*time.Second, "-D", "mem", "-T", "T", "-t", "3", "-w", "2", "-i", "30").want(t, exitOK, "720 DTOs verified")
	command(t, 60*time.Second, "-D", "mem", "-T", "P", "-i", "2000", "-p", "16", "RR", "64").want(t, exitOK, "perf read: 64 B x 2000, depth 16")
}

func TestLimit(t *testing.T) {
	r := command(t, 60*time.Second, "-D", "mem", "-T", "L", "-m", "40", "-max-qlen", "5000", "-max-lmr", "1m")
	r.want(t, exitOK, `(?m)^limit EPs: +40 +\(claimed \d+; cap\)\nlimit EVD qlen: +5000 .*\nlimit LMR bytes: +1048576 `)
}

// TestUnreachable: no server on the port gives a clear one-line error at
// once, and a peer that never answers one within the timeout.
func TestUnreachable(t *testing.T) {
	needSiw(t)
	// A port nobody listens on: an address no other test process uses.
	host := testutil.LoopbackAddr().String()
	r := command(t, 30*time.Second, "-D", "siw-lo", "-T", "T", "-s", host, "-n", "4791", "-timeout", "3s")
	if r.code != exitFailed || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("closed port: exit %d, stderr %q", r.code, r.stderr)
	}
	// A TCP listener that never speaks MPA: the connection setup must end
	// by the timeout, not hang (the provider reports TIMED_OUT, or
	// UNREACHABLE when its own MPA wait gives up first).
	mute, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(mute.Addr().String())
	r = command(t, 30*time.Second, "-D", "siw-lo", "-T", "P", "-s", "127.0.0.1", "-n", port, "-timeout", "1s")
	if r.code != exitFailed || strings.Count(r.stderr, "\n") != 1 || !regexp.MustCompile(`no answer from the server within 1s|server unreachable`).MatchString(r.stderr) || r.elapsed > 10*time.Second {
		t.Errorf("mute server: exit %d after %v, stderr %q", r.code, r.elapsed, r.stderr)
	}
}

// TestRunLeaks runs a client and its in-process server through run and
// checks that every goroutine ended.
func TestRunLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-D", "mem", "-T", "P", "-i", "200", "-log", "disabled", "SR"}, &out, &errs); code != exitOK {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestQuit: -T Q stops a server, which exits 0 saying so.
func TestQuit(t *testing.T) {
	needSiw(t)
	host := testutil.LoopbackAddr().String()
	cmd := exec.Command(dattestBin(t), "-T", "S", "-D", "siw-lo", "-n", "0")
	cmd.Env = append(os.Environ(), LogEnv+"=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("server said nothing")
	}
	m := regexp.MustCompile(`port (\d+)$`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("server said %q", sc.Text())
	}
	command(t, 30*time.Second, "-T", "Q", "-s", "127.0.0.1", "-n", m[1]).want(t, exitOK, "quits")
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "quit requested") {
		t.Errorf("server: %v, %q", err, rest)
	}
	r := command(t, 30*time.Second, "-T", "Q", "-s", host, "-n", m[1], "-timeout", "2s")
	if r.code != exitFailed || !strings.Contains(r.stderr, "connection refused") {
		t.Errorf("no server: exit %d, %q", r.code, r.stderr)
	}
}
