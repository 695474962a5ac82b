package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
)

var (
	binDir   string
	buildErr error
	once     sync.Once
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rdstools")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// bin returns the path of a tool, building every tool of cmd/ on first use.
func bin(t *testing.T, name string) string {
	t.Helper()
	once.Do(func() {
		cmd := exec.Command("go", "build", "-o", binDir+"/", "../../cmd/...")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, name)
}

// Each test gets its own addresses, so that its nodes never meet
// another's (or another package's, or another process's: see
// testutil.LoopbackAddr).
func addr(t *testing.T) string { return testutil.LoopbackAddr().String() }

// result is a finished run.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// run runs a tool to completion (at most 60 s: the machine may be loaded) with stdin and the given
// environment additions.
func run(t *testing.T, stdin string, env []string, name string, args ...string) result {
	t.Helper()
	path := bin(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	t0 := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(t0)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v hung:\n%s\n%s", name, args, r.stdout, r.stderr)
	}
	t.Logf("%s %s: exit %d in %v", name, strings.Join(args, " "), r.code, r.took.Round(time.Millisecond))
	return r
}

// want checks a run's exit code and that stdout and stderr contain the
// given strings (stdout first, then "stderr:" switches).
func (r result) want(t *testing.T, code int, subs ...string) {
	t.Helper()
	out := r.stdout
	for _, s := range subs {
		if s == "stderr:" {
			out = r.stderr
			continue
		}
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
		}
	}
	if r.code != code {
		t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

// daemon is a tool left running in the background; Stop interrupts it
// and returns its result.
type daemon struct {
	cmd  *exec.Cmd
	out  *testutil.LockedBuffer
	errb *testutil.LockedBuffer
	done chan error
}

func start(t *testing.T, name string, args ...string) *daemon {
	t.Helper()
	return startIn(t, nil, name, args...)
}

// startIn starts a tool reading stdin (nil: no input).
func startIn(t *testing.T, stdin *os.File, name string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(bin(t, name), args...), out: &testutil.LockedBuffer{}, errb: &testutil.LockedBuffer{},
		done: make(chan error, 1)}
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.errb
	if stdin != nil {
		d.cmd.Stdin = stdin
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// waitFile waits until a tool has created path (its info socket, which
// tools create once their sockets are bound).
func (d *daemon) waitFile(t *testing.T, path string) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("%s exited early (%v):\n%s\n%s", d.cmd.Path, err, d.out, d.errb)
		default:
		}
	}
	t.Fatalf("%s never created %s:\n%s\n%s", d.cmd.Path, path, d.out, d.errb)
}

// waitOutput waits until the tool has written s to stdout or stderr,
// which is how a script knows it got somewhere.
func (d *daemon) waitOutput(t *testing.T, s string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if strings.Contains(d.out.String(), s) || strings.Contains(d.errb.String(), s) {
			return
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("%s exited (%v) before writing %q:\n%s\n%s", d.cmd.Path, err, s, d.out, d.errb)
		default:
		}
	}
	t.Fatalf("%s never wrote %q:\n%s\n%s", d.cmd.Path, s, d.out, d.errb)
}

// wait waits for the tool to exit by itself.
func (d *daemon) wait(t *testing.T) result {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit:\n%s\n%s", d.cmd.Path, d.out, d.errb)
	}
	return result{stdout: d.out.String(), stderr: d.errb.String(), code: d.cmd.ProcessState.ExitCode()}
}

// stop interrupts the tool and waits for it.
func (d *daemon) stop(t *testing.T) result {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	return d.wait(t)
}
