// Command rdma-perf measures a verbs provider the way perftest measures an
// RDMA device — RDMA Write bandwidth, Send message rate, Send round trip —
// and runs the same workloads over plain TCP in the same run, so that each
// figure comes with its baseline ratio.
//
// With no arguments it runs both ends in one process on 127.0.0.1 over the
// soft-iWARP provider. With -serve it serves; with a host[:port] argument
// (or -c) it runs against a server on another host (start the server with
// the same -provider). As in perftest, -a sweeps every size from 2 B to
// 8 MiB, -s picks one size and -n a number of iterations per measurement;
// a progress line per measurement goes to stderr. Interrupted, it prints
// what it measured so far, marked interrupted, and exits 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/perf"
	"github.com/godapl/godapl/internal/version"
	"github.com/godapl/godapl/verbs"
)

// A case is one line of the report.
type testCase struct {
	name   string
	params perf.Params
}

var allCases = []testCase{
	{"write64k", perf.Params{Test: perf.TestWrite, Size: 64 << 10, Depth: 16}},
	{"write1m", perf.Params{Test: perf.TestWrite, Size: 1 << 20, Depth: 4}},
	{"send64", perf.Params{Test: perf.TestSendRate, Size: 64, Depth: 1024}},
	{"pingpong64", perf.Params{Test: perf.TestPingPong, Size: 64, Depth: 1}},
}

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // a test or the connection failed
	exitUsage  = 2 // bad command line
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options is the command line, checked.
type options struct {
	server   bool
	client   string // host:port of the RDMA server, with -c
	tcpAddr  string // the server's TCP baseline, with -c
	addr     string
	port     int
	provider string
	dur      time.Duration
	cases    []testCase
	noTCP    bool
	asJSON   bool
	pt       perftestFlags
}

// run is rdma-perf without the process around it; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if version.Requested(args) {
		version.Print(stdout, "rdma-perf")
		return exitOK
	}
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdma-perf: %v (rdma-perf -h lists the flags)\n", err)
		return exitUsage
	}
	if err := o.exec(ctx, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "rdma-perf: %v\n", err)
		return exitFailed
	}
	return exitOK
}

const usageHead = `usage: rdma-perf [flags]                     both ends in this process on 127.0.0.1
       rdma-perf -serve [-addr addr] [-p port]   serve RDMA and TCP tests
       rdma-perf [flags] host[:port]             run against a server (or -c host[:port])

Tests: %s. The TCP baseline of each test uses port+1.
-a, -s SIZE and -n ITERS work as in perftest. Ctrl-C prints what was measured
so far, marked interrupted.
Exit status: 0 success, 1 runtime failure or interrupted, 2 bad command line.

`

func parseFlags(args []string, stdout io.Writer) (*options, error) {
	fs := flag.NewFlagSet("rdma-perf", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	var (
		o      options
		client = fs.String("c", "", "run against the server at `host[:port]`")
		tests  = fs.String("t", "all", "comma-separated `tests` to run")
	)
	fs.BoolVar(&o.server, "serve", false, "serve tests until interrupted")
	fs.StringVar(&o.addr, "addr", "127.0.0.1", "local `address` to listen on (server and loopback mode)")
	o.pt.register(fs)
	fs.IntVar(&o.port, "p", 18516, "RDMA `port` (the TCP baseline uses port+1); 0 picks free ports in loopback mode")
	fs.StringVar(&o.provider, "provider", "siw", "verbs `provider`: siw, mem (loopback mode only) or rdmacore (built with -tags rdmacore; the device that owns -a, or that reaches -c)")
	fs.DurationVar(&o.dur, "d", time.Second, "`duration` of each test")
	fs.BoolVar(&o.noTCP, "notcp", false, "skip the raw TCP baseline")
	fs.BoolVar(&o.asJSON, "json", false, "print results as JSON")
	fs.Usage = func() {} // -h is handled below; errors by run
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, usageHead, caseNames())
			fs.SetOutput(stdout)
			fs.PrintDefaults()
		}
		return nil, err
	}
	switch {
	case fs.NArg() > 1:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(1))
	case fs.NArg() == 1 && *client != "":
		return nil, errors.New("give the server as an argument or with -c, not both")
	case fs.NArg() == 1:
		*client = fs.Arg(0) // perftest's form: the server is the argument
	}
	var err error
	if o.cases, err = selectCases(*tests); err != nil {
		return nil, err
	}
	if o.cases, err = o.pt.expand(o.cases); err != nil {
		return nil, err
	}
	switch {
	case o.provider != "siw" && o.provider != "mem" && o.provider != "rdmacore":
		return nil, fmt.Errorf("-provider %q: want siw, mem or rdmacore", o.provider)
	case o.provider == "mem" && (o.server || *client != ""):
		return nil, errors.New("-provider mem works in loopback mode only (no -serve, no server)")
	case o.server && *client != "":
		return nil, errors.New("-serve and a server to run against exclude each other")
	case o.dur <= 0:
		return nil, fmt.Errorf("-d %v: want a positive duration", o.dur)
	case o.port < 0 || o.port > 65534:
		return nil, fmt.Errorf("-p %d: want a port from 0 to 65534 (the TCP baseline uses port+1)", o.port)
	case o.server && o.port == 0:
		return nil, errors.New("-serve needs a port (-p), so that clients can find it")
	}
	if *client != "" {
		host, rport := *client, o.port
		if h, p, err := net.SplitHostPort(*client); err == nil {
			host = h
			if rport, err = strconv.Atoi(p); err != nil || rport <= 0 || rport > 65534 {
				return nil, fmt.Errorf("-c %q: bad port", *client)
			}
		}
		if host == "" {
			return nil, fmt.Errorf("-c %q: no host", *client)
		}
		o.client = net.JoinHostPort(host, strconv.Itoa(rport))
		o.tcpAddr = net.JoinHostPort(host, strconv.Itoa(rport+1))
	}
	return &o, nil
}

// exec runs what o says: serve, run against a server, or both ends here.
func (o *options) exec(ctx context.Context, stdout, stderr io.Writer) error {
	devAddr := o.addr
	if o.client != "" {
		devAddr, _, _ = net.SplitHostPort(o.client)
	}
	dev, err := openDevice(o.provider, devAddr)
	if err != nil {
		return err
	}
	defer dev.Close()

	switch {
	case o.server:
		return serve(ctx, stdout, dev, o.addr, o.port)
	case o.client != "":
		host, _, _ := net.SplitHostPort(o.client)
		return o.measureAndReport(ctx, dev, o.client, o.tcpAddr, host, stdout, stderr)
	}
	port := o.port
	if port == 18516 {
		port = 0 // loopback mode: any free ports
	}
	peer, err := openDevice(o.provider, o.addr)
	if err != nil {
		return err
	}
	defer peer.Close()
	srv, err := perf.Serve(ctx, peer, net.JoinHostPort(o.addr, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer srv.Close()
	tsrv, err := perf.ServeTCP(net.JoinHostPort(o.addr, "0"))
	if err != nil {
		return err
	}
	defer tsrv.Close()
	return o.measureAndReport(ctx, dev, srv.Addr().String(), tsrv.Addr().String(), o.addr, stdout, stderr)
}

func caseNames() string {
	var names []string
	for _, c := range allCases {
		names = append(names, c.name)
	}
	return strings.Join(names, ", ")
}

func selectCases(s string) ([]testCase, error) {
	if s == "all" {
		return allCases, nil
	}
	var out []testCase
	for _, name := range strings.Split(s, ",") {
		found := false
		for _, c := range allCases {
			if c.name == strings.TrimSpace(name) {
				out = append(out, c)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown test %q (have %s)", name, caseNames())
		}
	}
	return out, nil
}

func serve(ctx context.Context, stdout io.Writer, dev verbs.Device, addr string, port int) error {
	srv, err := perf.Serve(ctx, dev, net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer srv.Close()
	tsrv, err := perf.ServeTCP(net.JoinHostPort(addr, strconv.Itoa(port+1)))
	if err != nil {
		return err
	}
	defer tsrv.Close()
	fmt.Fprintf(stdout, "rdma-perf: serving RDMA on %s, TCP baseline on %s\n", srv.Addr(), tsrv.Addr())
	<-ctx.Done()
	return nil
}

// row is one test's result and its baseline.
type row struct {
	Name string       `json:"name"`
	RDMA *perf.Result `json:"-"`
	TCP  *perf.Result `json:"-"`
}
