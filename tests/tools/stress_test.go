package tools

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godapl/godapl/internal/testutil"
)

// With no arguments rds-stress runs two nodes in its own process over the
// default transport and prints progress, a table and a histogram.
func TestStressDefaultRun(t *testing.T) {
	t.Parallel()
	testutil.Exclusive(t, "rds-stress-demo") // its nodes' addresses are fixed
	r := run(t, "", []string{"GODAPL_RUN_DIR=" + t.TempDir()}, "rds-stress")
	r.want(t, 0, "127.0.0.1 -> server node 127.0.0.2:4000", "over dat", "tx/s", "request-response over dat",
		"   all ", "round trip (us)")
	if strings.Count(r.stdout, "\n") < 15 {
		t.Errorf("short output:\n%s", r.stdout)
	}
}

// A server and a client in two processes: -json gives the figures, every
// request got its answer, and rds-info sees the server's task sockets.
func TestStressServerClient(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		transport string
		extra     []string
		mode      string
	}{
		{"dat", []string{"-q", "64,8192", "-t", "2", "-d", "4"}, "request-response"},
		{"tcp", []string{"-q", "4096", "-o", "-d", "8"}, "one-way"},
	} {
		t.Run(c.transport, func(t *testing.T) {
			t.Parallel()
			srvAddr, cliAddr := addr(t), addr(t)
			sock := filepath.Join(t.TempDir(), "srv.sock")
			srv := start(t, "rds-stress", "--transport", c.transport, "-r", srvAddr, "-p", "4000", "--info-socket", sock)
			srv.waitFile(t, sock)
			args := append([]string{"--transport", c.transport, "-r", cliAddr, "-s", srvAddr, "-p", "4000", "-T", "1",
				"-json", "--info-socket", "none"}, c.extra...)
			r := run(t, "", nil, "rds-stress", args...)
			r.want(t, 0, "stderr:", "tx/s")
			var res struct {
				Mode    string
				Tasks   int
				PerTask []struct {
					Size, Reply       int
					Requests, Answers uint64
				} `json:"per_task"`
				Total struct {
					Requests, Answers uint64
					P50US             float64 `json:"p50_us"`
				}
				Histogram []struct{ Count uint64 } `json:"histogram_us"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("JSON: %v\n%s", err, r.stdout)
			}
			if res.Mode != c.mode || res.Total.Answers == 0 || res.Total.Answers != res.Total.Requests ||
				res.Total.P50US <= 0 || len(res.Histogram) == 0 {
				t.Errorf("result %+v", res)
			}
			if c.mode == "one-way" && res.PerTask[0].Reply != 32 {
				t.Errorf("one-way answers of %d bytes", res.PerTask[0].Reply)
			}

			info := run(t, "", nil, "rds-info", "--socket", sock, "-k", "-n")
			info.want(t, 0, "== rds-stress", "RDS Sockets:", srvAddr, " 4000 ", " 4001 ", "RDS Connections:", cliAddr)
			srv.stop(t).want(t, 0, "rds-stress server on "+srvAddr+":4000 over "+c.transport)
		})
	}
}

// A client with no server fails after its timeout with a one-line error.
func TestStressUnreachable(t *testing.T) {
	t.Parallel()
	r := run(t, "", nil, "rds-stress", "-r", addr(t), "-s", addr(t), "-T", "1", "--timeout", "500ms", "--info-socket", "none")
	r.want(t, 1, "stderr:", "no answer from an rds-stress server")
	if strings.Count(r.stderr, "\n") != 1 || r.took > 10e9 {
		t.Errorf("took %v, stderr %q", r.took, r.stderr)
	}
}

// --rdma runs the RDS zerocopy path: the server RDMA-writes into (or
// reads from) the client's registered memory before each answer, and
// write checks that the data is there when the answer arrives.
func TestStressRDMA(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"write", "read"} {
		t.Run(op, func(t *testing.T) {
			t.Parallel()
			srvAddr, cliAddr := addr(t), addr(t)
			sock := filepath.Join(t.TempDir(), "srv.sock")
			srv := start(t, "rds-stress", "-r", srvAddr, "-p", "4000", "--info-socket", sock)
			srv.waitFile(t, sock)
			r := run(t, "", nil, "rds-stress", "-r", cliAddr, "-s", srvAddr, "-p", "4000", "-T", "1", "-q", "64",
				"-d", "4", "--rdma", op, "-D", "100000", "--info-socket", "none")
			r.want(t, 0, "rdma MB/s", "with RDMA "+strings.ToUpper(op)+" of 100000 bytes over dat")
			srv.stop(t).want(t, 0)
		})
	}
	run(t, "", nil, "rds-stress", "--transport", "tcp", "--rdma", "write").want(t, 2, "stderr:", "--rdma needs --transport dat")
}
