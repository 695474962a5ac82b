package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// memOpener returns an opener whose devices share one in-memory fabric;
// listening closes the listening channel, so a client knows when to start.
func memOpener(p *mem.Provider, listening chan<- struct{}) opener {
	return func(*options, io.Writer) (verbs.Device, error) {
		d, err := p.Open(mem.DeviceName)
		if err != nil || listening == nil {
			return d, err
		}
		return &signalingDevice{Device: d, listening: listening}, nil
	}
}

type signalingDevice struct {
	verbs.Device
	listening chan<- struct{}
}

func (d *signalingDevice) Listen(addr string, backlog int) (verbs.Listener, error) {
	l, err := d.Device.Listen(addr, backlog)
	if err == nil {
		close(d.listening)
	}
	return l, err
}

type result struct {
	code           int
	stdout, stderr string
}

func runArgs(ctx context.Context, open opener, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr, open)
	return result{code, stdout.String(), stderr.String()}
}

func TestOptions(t *testing.T) {
	open := memOpener(mem.New(), nil)
	for _, c := range []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring
	}{
		{nil, exitInvalid, "rping -s [-vVd]", "one of -s and -c is required"},
		{[]string{"-h"}, exitOK, "-q here:", ""},
		{[]string{"-s", "-S", "25"}, exitInvalid, "", "Invalid size 25 (valid range is 26 to 65535)"},
		{[]string{"-s", "-S65536"}, exitInvalid, "", "Invalid size 65536 (valid range is 26 to 65535)"},
		{[]string{"-s", "-C", "-1", "-S", "7"}, exitInvalid, "", "Invalid count -1\nInvalid size 7"},
		{[]string{"-s", "-p", "70000"}, exitInvalid, "", "Invalid port 70000"},
		{[]string{"-c"}, exitInvalid, "", "the client needs the server's address (-a)"},
		{[]string{"-c", "-a", "no such host.invalid"}, exitInvalid, "", "getaddrinfo failed"},
		{[]string{"-s", "-x"}, exitInvalid, "rping -c", "unknown option -x"},
		{[]string{"-s", "-t", "5"}, exitInvalid, "rping -c", "option -t is not supported"},
		{[]string{"-sS"}, exitInvalid, "", "option -S needs an argument"},
		{[]string{"-s", "extra"}, exitInvalid, "", `unexpected argument "extra"`},
	} {
		r := runArgs(t.Context(), open, c.args...)
		if r.code != c.code || !strings.Contains(r.stdout, c.stdout) || !strings.Contains(r.stderr, c.stderr) {
			t.Errorf("rping %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
	}
}

func TestParseClusters(t *testing.T) {
	o, err := parseOptions(t.Context(), []string{"-cvVdq", "-a10.0.0.1", "-p7200", "-S", "100", "-C5", "-I", "10.0.0.2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c := o.cfg
	if o.server || o.serverAddr() != "10.0.0.1:7200" || c.LocalAddr != "10.0.0.2" || c.Size != 100 || c.Count != 5 ||
		!c.Verbose || !c.Validate || !c.Debug || !c.SelfQP {
		t.Fatalf("parsed %+v", o)
	}
	o, err = parseOptions(t.Context(), []string{"-sP"}, io.Discard)
	if err != nil || !o.server || !o.persistent || o.listenAddr() != "0.0.0.0:7174" || o.cfg.Size != 64 || o.cfg.Count != 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = parseOptions(t.Context(), []string{"-s", "-a", "::0"}, io.Discard)
	if err != nil || o.listenAddr() != "[::]:7174" {
		t.Fatalf("-a ::0: %+v, %v", o, err)
	}
}

func TestRunPair(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	p := mem.New()
	listening := make(chan struct{})
	srv := make(chan result, 1)
	go func() {
		srv <- runArgs(ctx, memOpener(p, listening), "-s", "-a", "10.9.9.1", "-p", "7300", "-v", "-C", "10", "-S", "4000")
	}()
	<-listening
	cli := runArgs(ctx, memOpener(p, nil), "-c", "-a", "10.9.9.1", "-p", "7300", "-C", "10", "-V", "-v", "-S", "4000")
	s := <-srv
	if cli.code != exitOK || s.code != exitOK {
		t.Fatalf("client exit %d:\n%s%s\nserver exit %d:\n%s%s", cli.code, cli.stdout, cli.stderr, s.code, s.stdout, s.stderr)
	}
	if n := strings.Count(cli.stdout, "ping data: rdma-ping-"); n != 10 {
		t.Errorf("client printed %d pings:\n%s", n, cli.stdout)
	}
	if n := strings.Count(s.stdout, "server ping data: rdma-ping-"); n != 10 {
		t.Errorf("server printed %d pings:\n%s", n, s.stdout)
	}
	if s.stderr != "server DISCONNECT EVENT...\n" || cli.stderr != "client DISCONNECT EVENT...\n" {
		t.Errorf("stderr: server %q, client %q", s.stderr, cli.stderr)
	}
	if !strings.HasPrefix(cli.stdout, "ping data: rdma-ping-0: ABCDEFG") {
		t.Errorf("client output starts %q", cli.stdout[:min(40, len(cli.stdout))])
	}
}

func TestRunConnectRefused(t *testing.T) {
	r := runArgs(t.Context(), memOpener(mem.New(), nil), "-c", "-a", "10.9.9.1", "-p", "7301", "-C", "1")
	want := "rping client failed: cma event RDMA_CM_EVENT_REJECTED, error -111 (connect to 10.9.9.1:7301: "
	if r.code != exitFailed || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want %d and one line starting %q", r.code, r.stderr, exitFailed, want)
	}
}

// A persistent server runs until it is stopped and then exits 0; a
// one-shot server stopped before its client came exits 255.
func TestRunStopped(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"-s", "-P", "-a", "10.9.9.1", "-p", "7302"}, exitOK},
		{[]string{"-s", "-a", "10.9.9.1", "-p", "7303"}, exitFailed},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		listening := make(chan struct{})
		var r result
		var wg sync.WaitGroup
		wg.Go(func() { r = runArgs(ctx, memOpener(mem.New(), listening), c.args...) })
		<-listening
		cancel()
		wg.Wait()
		if r.code != c.code {
			t.Errorf("rping %q stopped: exit %d, want %d; stderr %q", c.args, r.code, c.code, r.stderr)
		}
	}
}

// TestProviderOption: --provider takes siw or rdmacore, in both forms.
func TestProviderOption(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // provider, or "" for an error
	}{
		{[]string{"-s"}, "siw"},
		{[]string{"--provider", "rdmacore", "-s"}, "rdmacore"},
		{[]string{"-s", "--provider=siw"}, "siw"},
		{[]string{"--provider", "mem", "-s"}, ""},
		{[]string{"-s", "--provider"}, ""},
	} {
		o, err := parseOptions(context.Background(), tc.args, io.Discard)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q: accepted, provider %q", tc.args, o.provider)
		case tc.want != "" && (err != nil || o.provider != tc.want):
			t.Errorf("%q: %v, %v; want provider %q", tc.args, o, err, tc.want)
		}
	}
}
