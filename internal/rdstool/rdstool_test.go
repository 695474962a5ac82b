package rdstool

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/rdsoverdat"
)

func TestRunExitCodes(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		runErr error
		code   int
		stdout string
		stderr string
	}{
		{"ok", nil, nil, ExitOK, "", ""},
		{"help", []string{"-h"}, nil, ExitOK, "usage: x\n\nFlags", ""},
		{"bad flag", []string{"-nope"}, nil, ExitUsage, "", "x: flag provided but not defined: -nope (see x -h)\n"},
		{"bad value", []string{"-n", "many"}, nil, ExitUsage, "", "x: invalid value \"many\" for flag -n"},
		{"usage error", nil, Usagef("bad %s", "address"), ExitUsage, "", "x: bad address (see x -h)\n"},
		{"runtime error", nil, errors.New("peer unreachable\nretry later"), ExitFailure, "", "x: peer unreachable; retry later\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := NewFlagSet("x")
			fs.Int("n", 1, "a number")
			var stdout, stderr bytes.Buffer
			code := Run(Tool{Name: "x", Synopsis: "usage: x", Flags: fs,
				Run: func(context.Context, []string) error { return c.runErr }}, c.args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stdout.String(), c.stdout) || !strings.HasPrefix(stderr.String(), c.stderr) {
				t.Errorf("code %d stdout %q stderr %q", code, stdout.String(), stderr.String())
			}
			if c.stderr != "" && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("not one line: %q", stderr.String())
			}
		})
	}
}

// Flags may come after positional arguments; "--" ends them.
func TestInterspersed(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  []string
		n    int
	}{
		{[]string{"a", "-n", "3", "b"}, []string{"a", "b"}, 3},
		{[]string{"-n", "2", "a"}, []string{"a"}, 2},
		{[]string{"a", "--", "-n", "5"}, []string{"a", "-n", "5"}, 1},
		{nil, nil, 1},
	} {
		fs := NewFlagSet("x")
		n := fs.Int("n", 1, "")
		pos, err := parseInterspersed(fs, c.args)
		if err != nil || !slices.Equal(pos, c.pos) || *n != c.n {
			t.Errorf("%q: pos %q n %d err %v", c.args, pos, *n, err)
		}
	}
}

func TestLogger(t *testing.T) {
	t.Setenv(LogEnv, "")
	var b bytes.Buffer
	l, err := Logger("", &b)
	if err != nil {
		t.Fatal(err)
	}
	l.Info().Msg("quiet")
	l.Warn().Msg("loud")
	if s := b.String(); strings.Contains(s, "quiet") || !strings.Contains(s, "loud") {
		t.Errorf("default level: %q", s)
	}
	t.Setenv(LogEnv, "debug")
	b.Reset()
	l, _ = Logger("", &b)
	l.Debug().Msg("env")
	l, _ = Logger("error", &b) // the flag beats the environment
	l.Warn().Msg("flag")
	if s := b.String(); !strings.Contains(s, "env") || strings.Contains(s, "flag") {
		t.Errorf("levels: %q", s)
	}
	var ue *UsageError
	if _, err := Logger("chatty", &b); !errors.As(err, &ue) {
		t.Errorf("bad level: %v", err)
	}
}

func TestCommonSetup(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--transport", "tcp", "--paths", "4", "--transport-port", "20000"}, true},
		{[]string{"--transport", "ib"}, false},
		{[]string{"--paths", "9"}, false},
		{[]string{"--transport-port", "70000"}, false},
		{[]string{"--log", "nope"}, false},
		{[]string{"--ia", "mem"}, true},
		{[]string{"--transport", "tcp", "--ia", "mem"}, false},
	} {
		var cm Common
		fs := NewFlagSet("x")
		cm.Register(fs, "x")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := cm.Setup(&bytes.Buffer{})
		var ue *UsageError
		if c.ok != (err == nil) || (err != nil && !errors.As(err, &ue)) {
			t.Errorf("%q: %v", c.args, err)
		}
	}
	if _, err := ParseAddrPort("-b", "127.0.0.1"); err == nil {
		t.Error("ParseAddrPort without a port")
	}
	if a, err := ParseAddrPort("-b", "[::ffff:127.0.0.1]:5"); err != nil || a != netip.MustParseAddrPort("127.0.0.1:5") {
		t.Errorf("mapped address: %v %v", a, err)
	}
	if _, err := ParseAddr("-I", "::1"); err == nil {
		t.Error("ParseAddr took IPv6")
	}
	if a, err := SourceFor(netip.MustParseAddr("127.0.0.1")); err != nil || !a.IsLoopback() {
		t.Errorf("SourceFor(127.0.0.1) = %v, %v", a, err)
	}
}

// An info server answers with every stack's state, takes over a socket
// file left by a dead process, refuses one that is alive, and leaves no
// goroutine or file behind.
func TestInfoServer(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	t.Setenv(InfoDirEnv, dir)
	st := rdsoverdat.NewStack(rdsoverdat.Config{})
	defer st.Close()
	s := st.Socket()
	if err := s.Bind(netip.MustParseAddrPort("127.94.0.1:9")); err != nil {
		t.Fatal(err)
	}

	c := Common{InfoSocket: InfoAuto, name: "tool"}
	srv, err := c.ServeInfo(st, rdsoverdat.NewStack(rdsoverdat.Config{}))
	if err != nil || srv == nil {
		t.Fatalf("ServeInfo: %v", err)
	}
	paths, err := InfoSockets(dir)
	if err != nil || len(paths) != 1 || paths[0] != srv.Path() || !strings.HasPrefix(filepath.Base(paths[0]), "tool-") {
		t.Fatalf("sockets %q (%v), served at %s", paths, err, srv.Path())
	}
	doc, err := ReadInfo(srv.Path(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Tool != "tool" || doc.PID != os.Getpid() || len(doc.Stacks) != 2 || len(doc.Stacks[0].Nodes) != 1 ||
		doc.Stacks[0].Nodes[0].Sockets[0].Bound != s.BoundAddr() {
		t.Errorf("document %+v", doc)
	}

	// A second server on the same live path is refused.
	c2 := Common{InfoSocket: srv.Path(), name: "other"}
	if _, err := c2.ServeInfo(st); err == nil || !strings.Contains(err.Error(), "another running tool") {
		t.Errorf("second server: %v", err)
	}
	srv.Close()
	srv.Close()
	if _, err := os.Stat(srv.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file left: %v", err)
	}

	// A stale socket file (its listener gone without unlinking) is taken over.
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	c3 := Common{InfoSocket: stale, name: "again"}
	srv3, err := c3.ServeInfo(st)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	if doc, err := ReadInfo(stale, time.Second); err != nil || doc.Tool != "again" {
		t.Errorf("after takeover: %+v %v", doc, err)
	}
	srv3.Close()

	// "none" serves nothing; a nil server is safe to use.
	c4 := Common{InfoSocket: InfoNone}
	if srv4, err := c4.ServeInfo(st); srv4 != nil || err != nil || srv4.Path() != "" {
		t.Errorf("none: %v %v", srv4, err)
	} else {
		srv4.Close()
	}
	// Auto mode in a directory that cannot be made quietly serves nothing.
	t.Setenv(InfoDirEnv, "/proc/no/such/dir")
	if srv5, err := c.ServeInfo(st); srv5 != nil || err != nil {
		t.Errorf("unwritable auto dir: %v %v", srv5, err)
	}

	st.Close()
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true}, {"1K", 1024, true}, {"1k", 1024, true}, {"2M", 2 << 20, true}, {"1G", 1 << 30, true},
		{"0x40", 64, true}, {"", 0, false}, {"K", 0, false}, {"1T", 0, false}, {"-1", 0, false}, {"3G", 0, false},
	} {
		got, err := ParseSize("-q", c.in, 2<<30)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: %d, %v", c.in, got, err)
		}
		var ue *UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("%q: not a usage error: %v", c.in, err)
		}
	}
}

func TestParseInterval(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1", time.Second, true}, {"0.25", 250 * time.Millisecond, true}, {"200msec", 200 * time.Millisecond, true},
		{"50usec", 50 * time.Microsecond, true}, {"1.5msec", 1500 * time.Microsecond, true}, {"300ms", 300 * time.Millisecond, true},
		{"0", 0, false}, {"soon", 0, false}, {"msec", 0, false}, {"-1", 0, false},
	} {
		got, err := ParseInterval("-i", c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: %v, %v", c.in, got, err)
		}
	}
}

func TestResolveAddr(t *testing.T) {
	ctx := context.Background()
	if a, err := ResolveAddr(ctx, "-s", "10.1.2.3"); err != nil || a != netip.MustParseAddr("10.1.2.3") {
		t.Errorf("literal: %v %v", a, err)
	}
	if a, err := ResolveAddr(ctx, "-s", "localhost"); err != nil || !a.IsLoopback() || !a.Is4() {
		t.Errorf("localhost: %v %v", a, err)
	}
	var ue *UsageError
	for _, bad := range []string{"::1", "", "no-such-host.invalid"} {
		if _, err := ResolveAddr(ctx, "-s", bad); !errors.As(err, &ue) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestRefusal(t *testing.T) {
	var r Refusal
	fs := NewFlagSet("x")
	r.Bool(fs, "no reason here", "R", "rtprio")
	r.Value(fs, "no value here", "Q")
	if err := fs.Parse([]string{"-Q", "3", "--rtprio"}); err != nil {
		t.Fatal(err)
	}
	var ue *UsageError
	if err := r.Check(); !errors.As(err, &ue) || err.Error() != "-Q is refused here: no value here" {
		t.Errorf("%v", err)
	}
	var none Refusal
	if none.Check() != nil {
		t.Error("nothing given, yet refused")
	}
}

// An address in use names the RDS port, the transport's port and the
// way out, and stays EADDRINUSE for errors.Is.
func TestAddrInUse(t *testing.T) {
	a := testutil.LoopbackAddr()
	c := Common{Transport: TransportTCP, TransportPort: 0}
	st1, _ := c.NewStack(rdsoverdat.Config{})
	st2, _ := c.NewStack(rdsoverdat.Config{})
	defer st1.Close()
	defer st2.Close()
	s, err := Bind(st1, netip.AddrPortFrom(a, 4000), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Bind(st2, netip.AddrPortFrom(a, 4001), 0, 0)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("%v", err)
	}
	for _, want := range []string{"RDS port 4001", "TCP port 16385 of the tcp transport", "--transport-port"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}
