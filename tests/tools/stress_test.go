package tools

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// --demo runs two nodes in its own process over the default transport,
// on loopback addresses of its own, and prints progress in the real
// tool's columns, a table and a histogram. Two demos at once do not
// collide.
func TestStressDemo(t *testing.T) {
	t.Parallel()
	env := []string{"GODAPL_RUN_DIR=" + t.TempDir()}
	other := start(t, "rds-stress", "--demo", "-T", "1", "--info-socket", "none")
	r := run(t, "", env, "rds-stress", "--demo", "-T", "2")
	r.want(t, 0, "-> passive node 127.", ":4000 in this process, over dat",
		"tsks   tx/s   rx/s  tx+rx K/s    mbi K/s    mbo K/s tx us/c   rtt us cpu %", "(average)",
		"two-way over dat", "   all ", "peer reqs", "round trip (us)")
	other.wait(t).want(t, 0, "(average)")
}

// With no -s rds-stress is the passive instance: it serves one active
// instance's run and exits when that run ends, as the real pair does.
// By default both send requests and answer the other's; -o leaves the
// passive side answering only. -json gives the figures, every request
// got its answer, and rds-info sees the passive side's task sockets
// while the run lasts.
func TestStressPassiveActive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		transport string
		extra     []string
		mode      string
		reply     int
	}{
		{"dat", []string{"-q", "64,8K", "-t", "2", "-d", "4", "-v"}, "two-way", 32},
		{"tcp", []string{"-q", "4K", "-o", "-d", "8"}, "one-way", 32},
		{"tcp", []string{"--req-bytes", "1k", "--ack-bytes", "0x40"}, "two-way", 64},
	} {
		t.Run(c.transport+c.mode, func(t *testing.T) {
			t.Parallel()
			srvAddr, cliAddr := addr(t), addr(t)
			sock := filepath.Join(t.TempDir(), "srv.sock")
			srv := start(t, "rds-stress", "--transport", c.transport, "-r", srvAddr, "-p", "4000", "--info-socket", sock)
			srv.waitFile(t, sock)
			args := append([]string{"--transport", c.transport, "-r", cliAddr, "-s", srvAddr, "-p", "4000", "-T", "2",
				"-json", "--info-socket", "none"}, c.extra...)
			cli := start(t, "rds-stress", args...)
			// The task sockets appear with the hello.
			var info result
			for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
				if info = run(t, "", nil, "rds-info", "--socket", sock, "-k", "-n"); strings.Contains(info.stdout, " 4001 ") {
					break
				}
			}
			info.want(t, 0, "== rds-stress", "RDS Sockets:", srvAddr, " 4000 ", " 4001 ", "RDS Connections:", cliAddr)
			r := cli.wait(t)
			r.want(t, 0, "stderr:", "tx/s")
			var res struct {
				Mode        string
				Tasks       int
				Interrupted bool
				PerTask     []struct {
					Size, Reply       int
					Requests, Answers uint64
					PeerRequests      uint64 `json:"peer_requests"`
				} `json:"per_task"`
				Total struct {
					Requests, Answers uint64
					P50US             float64 `json:"p50_us"`
				}
				Average struct {
					Tsks   int     `json:"tsks"`
					TxPerS float64 `json:"tx_per_s"`
					RxPerS float64 `json:"rx_per_s"`
					CPU    float64 `json:"cpu_pct"`
				}
				Histogram []struct{ Count uint64 } `json:"histogram_us"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
				t.Fatalf("JSON: %v\n%s", err, r.stdout)
			}
			if res.Mode != c.mode || res.Total.Answers == 0 || res.Total.Answers != res.Total.Requests ||
				res.Total.P50US <= 0 || len(res.Histogram) == 0 || res.Interrupted || res.Average.TxPerS <= 0 ||
				res.Average.CPU != -1 || res.PerTask[0].Reply != c.reply {
				t.Errorf("result %+v", res)
			}
			// rx/s counts the requests received: the passive side's own.
			if twoWay := c.mode == "two-way"; twoWay != (res.PerTask[0].PeerRequests > 0) || twoWay != (res.Average.RxPerS > 0) {
				t.Errorf("%s: peer requests %d, rx/s %v", c.mode, res.PerTask[0].PeerRequests, res.Average.RxPerS)
			}
			srv.wait(t).want(t, 0, "passive on ["+srvAddr+":4000] over "+c.transport, "passive done:")
		})
	}
}

// An active instance with no passive one fails after its timeout with a
// one-line error.
func TestStressUnreachable(t *testing.T) {
	t.Parallel()
	r := run(t, "", nil, "rds-stress", "-r", addr(t), "-s", addr(t), "-T", "1", "--timeout", "500ms", "--info-socket", "none")
	r.want(t, 1, "stderr:", "no answer from a passive rds-stress")
	if strings.Count(r.stderr, "\n") != 1 || r.took > 10e9 {
		t.Errorf("took %v, stderr %q", r.took, r.stderr)
	}
}

// -D turns RDMA on (the RDS zerocopy path): the passive side RDMA-writes
// into (or reads from) the active side's registered memory before each
// answer, and WRITEs are checked when the answer arrives. -M picks the
// operation as in the real tool, --rdma names it.
func TestStressRDMA(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ flags, name, col string }{
		{"-M 2", "WRITE", "mbi"}, {"--rdma read", "READ", "mbo"}, {"-M 0 -v", "READ AND WRITE", "mbi"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srvAddr, cliAddr := addr(t), addr(t)
			sock := filepath.Join(t.TempDir(), "srv.sock")
			srv := start(t, "rds-stress", "-r", srvAddr, "-p", "4000", "--info-socket", sock)
			srv.waitFile(t, sock)
			args := append([]string{"-r", cliAddr, "-s", srvAddr, "-p", "4000", "-T", "1", "-q", "64",
				"-d", "4", "-D", "100000", "--info-socket", "none", "-json"}, strings.Fields(c.flags)...)
			r := run(t, "", nil, "rds-stress", args...)
			r.want(t, 0, `"rdma_size": 100000`)
			var res struct {
				Average map[string]float64
			}
			if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Average[c.col+"_kb_per_s"] <= 0 {
				t.Errorf("%v: %s K/s = %v", err, c.col, res.Average)
			}
			srv.wait(t).want(t, 0)
		})
	}
	run(t, "", nil, "rds-stress", "--transport", "tcp", "-s", "127.0.0.1", "-D", "1M").want(t, 2, "stderr:", "-D needs --transport dat")
}

// The real tool's flags are taken with its meaning and syntax, or refused
// with a one-line reason; none is ignored.
func TestStressFlags(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-s", "127.0.0.1", "-q", "2M"}, `-q "2M": want sizes of 32-1048576 bytes`},
		{[]string{"-s", "127.0.0.1", "-q", "1x"}, `-q "1x"`},
		{[]string{"-s", "127.0.0.1", "-R"}, "-R is refused here: no parent process"},
		{[]string{"-s", "127.0.0.1", "--show-perfdata"}, "use -json"},
		{[]string{"-s", "127.0.0.1", "--rdma-use-once", "1"}, "-rdma-use-once is refused here: each request's memory"},
		{[]string{"-s", "127.0.0.1", "-Q", "1"}, "-Q 1: only type of service 0"},
		{[]string{"-s", "127.0.0.1", "-D", "64K", "-I", "2"}, "-I 2: only 1"},
		{[]string{"-s", "127.0.0.1", "-M", "1"}, "give -D BYTES"},
		{[]string{"-q", "64"}, "the passive instance takes its workload from the active one"},
		{[]string{"--demo", "-s", "127.0.0.1"}, "--demo picks its own addresses"},
		{[]string{"-s", "no-such-host.invalid"}, `-s "no-such-host.invalid": not an IPv4 address`},
	} {
		r := run(t, "", nil, "rds-stress", c.args...)
		r.want(t, 2, "stderr:", c.msg)
		if strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: not one line: %q", c.args, r.stderr)
		}
	}
}

// An active instance without -r on the passive one's host speaks from a
// loopback address of its own: the pair runs as it would with the
// kernel's RDS.
func TestStressSameHost(t *testing.T) {
	t.Parallel()
	srvAddr := addr(t)
	sock := filepath.Join(t.TempDir(), "srv.sock")
	srv := start(t, "rds-stress", "-r", srvAddr, "--info-socket", sock)
	srv.waitFile(t, sock)
	r := run(t, "", nil, "rds-stress", "-s", srvAddr, "-T", "1", "-z", "--info-socket", "none")
	r.want(t, 0, "(average)", " -> "+srvAddr+":4000")
	srv.wait(t).want(t, 0, "passive done:")
}
