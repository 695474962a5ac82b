//go:build udapl

package udapltest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
)

const iaName = "godapl-test"

var built struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// TestMain removes the library and programs built for the run.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range []string{built.dir, cbins.dir} {
		if d != "" {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}

// need skips t unless the DAT headers, libdat2 and the named programs are
// installed (scripts/install-deps.sh installs them).
func need(t testing.TB, progs ...string) {
	t.Helper()
	if _, err := os.Stat("/usr/include/dat2/udat.h"); err != nil {
		t.Skip("no DAT 2.0 headers (/usr/include/dat2/udat.h): install libdapl-dev")
	}
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("no %s: install dapl2-utils (and a C compiler for cc)", p)
		}
	}
}

// library builds libdatgodapl.so once per run and returns its path.
func library(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "libdatgodapl"); built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-tags", "udapl", "-buildmode=c-shared",
			"-o", filepath.Join(built.dir, "libdatgodapl.so"), "github.com/godapl/godapl/udapl/libdatgodapl")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("building libdatgodapl.so: %v\n%s", built.err, built.out)
	}
	return filepath.Join(built.dir, "libdatgodapl.so")
}

// cIA is one IA of the library for a test: its own loopback address, so
// that its service points never meet another test process's.
type cIA struct {
	addr netip.Addr
	env  []string
}

func newIA(t testing.TB) cIA {
	t.Helper()
	return newIAWith(t, library(t))
}

// newIAWith is newIA on the library at lib.
func newIAWith(t testing.TB, lib string) cIA {
	t.Helper()
	a := testutil.LoopbackAddr()
	conf := filepath.Join(t.TempDir(), "dat.conf")
	var b strings.Builder
	for _, ts := range []string{"nonthreadsafe", "threadsafe"} {
		fmt.Fprintf(&b, "%s u2.0 %s default %s dapl.2.0 \"siw - %s\" \"\"\n", iaName, ts, lib, a)
	}
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return cIA{addr: a, env: append(os.Environ(), "DAT_OVERRIDE="+conf)}
}

// run runs a program to its end and returns its combined output.
func (i cIA) run(t testing.TB, limit time.Duration, prog string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = i.env
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%s %s: no end within %v", prog, strings.Join(args, " "), limit)
	}
	return string(out), err
}

// server is a program that serves until the test ends.
type server struct {
	out  testutil.LockedBuffer
	done chan error
}

// start runs prog until the test ends and returns once it has printed a
// line containing ready.
func (i cIA) start(t testing.TB, ready, prog string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = i.env
	pr, pw := io.Pipe()
	s := &server{done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.OnceFunc(func() { close(seen) })
		for sc.Scan() {
			fmt.Fprintln(&s.out, sc.Text())
			if strings.Contains(sc.Text(), ready) {
				once()
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		err := cmd.Wait()
		pw.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("%s output:\n%s", prog, s.out.String())
		}
	})
	select {
	case <-seen:
	case err := <-s.done:
		s.done <- err
		t.Fatalf("%s ended before it was ready: %v\n%s", prog, err, s.out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready within 60s:\n%s", prog, s.out.String())
	}
	return s
}

// wait waits for the server to end by itself.
func (s *server) wait(t testing.TB, limit time.Duration) (string, error) {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		return s.out.String(), err
	case <-time.After(limit):
		t.Fatalf("server did not end within %v:\n%s", limit, s.out.String())
	}
	return "", nil
}

// lines returns the lines of out that contain any of subs.
func lines(out string, subs ...string) []string {
	var r []string
	for _, l := range strings.Split(out, "\n") {
		for _, s := range subs {
			if strings.Contains(l, s) {
				r = append(r, strings.TrimSpace(l))
				break
			}
		}
	}
	return r
}
