// Command rdma-perf measures a verbs provider the way perftest measures an
// RDMA device — RDMA Write bandwidth, Send message rate, Send round trip —
// and runs the same workloads over plain TCP in the same run, so that each
// figure comes with its baseline ratio.
//
// With no arguments it runs both ends in one process on 127.0.0.1 over the
// soft-iWARP provider. With -s it serves; with -c host:port it runs against
// a server on another host (start the server with the same -provider).
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
}

// run is rdma-perf without the process around it; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdma-perf: %v (rdma-perf -h lists the flags)\n", err)
		return exitUsage
	}
	if err := o.exec(ctx, stdout); err != nil {
		fmt.Fprintf(stderr, "rdma-perf: %v\n", err)
		return exitFailed
	}
	return exitOK
}

const usageHead = `usage: rdma-perf [flags]            both ends in this process on 127.0.0.1
       rdma-perf -s [-a addr] [-p port] serve RDMA and TCP tests
       rdma-perf -c host[:port] [flags]  run against a server

Tests: %s. The TCP baseline of each test uses port+1.
Exit status: 0 success, 1 runtime failure, 2 bad command line.

`

func parseFlags(args []string, stdout io.Writer) (*options, error) {
	fs := flag.NewFlagSet("rdma-perf", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	var (
		o      options
		client = fs.String("c", "", "run against the server at `host[:port]`")
		tests  = fs.String("t", "all", "comma-separated `tests` to run")
	)
	fs.BoolVar(&o.server, "s", false, "serve tests until interrupted")
	fs.StringVar(&o.addr, "a", "127.0.0.1", "local `address` to listen on (server and loopback mode)")
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
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var err error
	if o.cases, err = selectCases(*tests); err != nil {
		return nil, err
	}
	switch {
	case o.provider != "siw" && o.provider != "mem" && o.provider != "rdmacore":
		return nil, fmt.Errorf("-provider %q: want siw, mem or rdmacore", o.provider)
	case o.provider == "mem" && (o.server || *client != ""):
		return nil, errors.New("-provider mem works in loopback mode only (no -s, no -c)")
	case o.server && *client != "":
		return nil, errors.New("-s and -c exclude each other")
	case o.dur <= 0:
		return nil, fmt.Errorf("-d %v: want a positive duration", o.dur)
	case o.port < 0 || o.port > 65534:
		return nil, fmt.Errorf("-p %d: want a port from 0 to 65534 (the TCP baseline uses port+1)", o.port)
	case o.server && o.port == 0:
		return nil, errors.New("-s needs a port (-p), so that clients can find it")
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
func (o *options) exec(ctx context.Context, stdout io.Writer) error {
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
		rows, err := runAll(ctx, dev, o.client, o.tcpAddr, o.cases, o.dur, o.noTCP)
		if err != nil {
			return err
		}
		host, _, _ := net.SplitHostPort(o.client)
		report(stdout, rows, o.provider, host, o.dur, o.asJSON)
		return nil
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
	rows, err := runAll(ctx, dev, srv.Addr().String(), tsrv.Addr().String(), o.cases, o.dur, o.noTCP)
	if err != nil {
		return err
	}
	report(stdout, rows, o.provider, o.addr, o.dur, o.asJSON)
	return nil
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

func runAll(ctx context.Context, dev verbs.Device, raddr, taddr string, cases []testCase, d time.Duration, noTCP bool) ([]row, error) {
	var rows []row
	for _, c := range cases {
		p := c.params
		p.Duration = d
		tctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
		r, err := perf.Run(tctx, dev, raddr, p)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		rw := row{Name: c.name, RDMA: r}
		if !noTCP {
			tctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
			rw.TCP, err = perf.RunTCP(tctx, taddr, p)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("%s (tcp): %w", c.name, err)
			}
		}
		rows = append(rows, rw)
	}
	return rows, nil
}
