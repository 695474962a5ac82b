package tools

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freePort returns a TCP port nobody listens on at the moment (the
// soft-iWARP tools listen on a TCP port of the same number).
func freePort(t *testing.T, host string) string {
	t.Helper()
	l, err := net.Listen("tcp4", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// rping as rdma-core's users run it: a server, a client with data
// validation and verbose output, both exiting 0; a bad option exits 22
// (EINVAL, as rping does) with the usage text; no server exits non-zero
// with a message, quickly.
func TestRping(t *testing.T) {
	t.Parallel()
	a := addr(t)
	port := freePort(t, a)
	srv := start(t, "rping", "-s", "-a", a, "-p", port, "-S", "100", "-v")
	var r result
	// The server listens once its device is up; a client that came too
	// early is refused and exits 255, so retry briefly.
	for i := 0; ; i++ {
		r = run(t, "", nil, "rping", "-c", "-a", a, "-p", port, "-C", "5", "-S", "100", "-V", "-v")
		if r.code == 0 || i == 50 || !strings.Contains(r.stdout+r.stderr, "refused") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.want(t, 0)
	for i := range 5 {
		if !strings.Contains(r.stdout, fmt.Sprintf("ping data: rdma-ping-%d: ", i)) {
			t.Errorf("client output lacks ping %d:\n%s", i, r.stdout)
		}
	}
	sr := srv.wait(t)
	if sr.code != 0 || !strings.Contains(sr.stdout, "server ping data: rdma-ping-4: ") {
		t.Errorf("server: exit %d\n%s\n%s", sr.code, sr.stdout, sr.stderr)
	}

	r = run(t, "", nil, "rping", "-x")
	r.want(t, 22, "rping -c", "stderr:", "unknown option -x")
	r = run(t, "", nil, "rping", "-c", "-a", a, "-p", freePort(t, a), "-C", "1")
	if r.code == 0 || r.took > 20*time.Second || r.stdout+r.stderr == "" {
		t.Errorf("client with no server: exit %d after %v\n%s\n%s", r.code, r.took, r.stdout, r.stderr)
	}
}

// rdma-perf in loopback mode runs each workload beside its TCP baseline
// and prints the ratios; -json is machine-readable; a bad test name is a
// usage error.
func TestRdmaPerf(t *testing.T) {
	t.Parallel()
	r := run(t, "", nil, "rdma-perf", "-addr", addr(t), "-p", "0", "-d", "200ms", "-t", "write64k,pingpong64")
	r.want(t, 0, "RDMA Write 64 KiB", "Round trip 64 B p50", "godapl/TCP")
	r = run(t, "", nil, "rdma-perf", "-addr", addr(t), "-p", "0", "-d", "200ms", "-t", "send64", "-notcp", "-json")
	r.want(t, 0, `"results"`)
	r = run(t, "", nil, "rdma-perf", "-t", "nosuchtest")
	r.want(t, 2, "stderr:", `unknown test "nosuchtest"`)
}
