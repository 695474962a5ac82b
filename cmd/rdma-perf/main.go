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

func main() {
	fs := flag.NewFlagSet("rdma-perf", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: rdma-perf [flags]            both ends in this process on 127.0.0.1
       rdma-perf -s [-a addr] [-p port] serve RDMA and TCP tests
       rdma-perf -c host[:port] [flags]  run against a server

Tests: %s. The TCP baseline of each test uses port+1.

`, caseNames())
		fs.PrintDefaults()
	}
	var (
		server   = fs.Bool("s", false, "serve tests until interrupted")
		client   = fs.String("c", "", "run against the server at `host[:port]`")
		addr     = fs.String("a", "127.0.0.1", "local `address` to listen on (server and loopback mode)")
		port     = fs.Int("p", 18516, "RDMA `port` (the TCP baseline uses port+1); 0 picks free ports in loopback mode")
		provider = fs.String("provider", "siw", "verbs `provider`: siw or mem (mem works in loopback mode only)")
		dur      = fs.Duration("d", time.Second, "`duration` of each test")
		tests    = fs.String("t", "all", "comma-separated `tests` to run")
		noTCP    = fs.Bool("notcp", false, "skip the raw TCP baseline")
		asJSON   = fs.Bool("json", false, "print results as JSON")
	)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(2)
	}
	cases, err := selectCases(*tests)
	if err != nil {
		fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dev, err := openDevice(*provider)
	if err != nil {
		fail(err)
	}
	defer dev.Close()

	switch {
	case *server:
		if err := serve(ctx, dev, *addr, *port); err != nil {
			fail(err)
		}
	case *client != "":
		host, rport := *client, *port
		if h, p, err := net.SplitHostPort(*client); err == nil {
			host = h
			if rport, err = strconv.Atoi(p); err != nil {
				fail(fmt.Errorf("bad port in -c %q", *client))
			}
		}
		rows, err := runAll(ctx, dev, net.JoinHostPort(host, strconv.Itoa(rport)), net.JoinHostPort(host, strconv.Itoa(rport+1)), cases, *dur, *noTCP)
		if err != nil {
			fail(err)
		}
		report(rows, *provider, host, *dur, *asJSON)
	default:
		if *port != 0 && *port == 18516 {
			*port = 0 // loopback mode: any free ports
		}
		peer, err := openDevice(*provider)
		if err != nil {
			fail(err)
		}
		defer peer.Close()
		srv, err := perf.Serve(ctx, peer, net.JoinHostPort(*addr, strconv.Itoa(*port)))
		if err != nil {
			fail(err)
		}
		defer srv.Close()
		tsrv, err := perf.ServeTCP(net.JoinHostPort(*addr, "0"))
		if err != nil {
			fail(err)
		}
		defer tsrv.Close()
		rows, err := runAll(ctx, dev, srv.Addr().String(), tsrv.Addr().String(), cases, *dur, *noTCP)
		if err != nil {
			fail(err)
		}
		report(rows, *provider, *addr, *dur, *asJSON)
	}
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

func serve(ctx context.Context, dev verbs.Device, addr string, port int) error {
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
	fmt.Printf("rdma-perf: serving RDMA on %s, TCP baseline on %s\n", srv.Addr(), tsrv.Addr())
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rdma-perf:", err)
	os.Exit(1)
}
