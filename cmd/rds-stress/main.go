// Command rds-stress loads RDS with request/answer traffic and reports
// throughput, message rate and round-trip latency, like rds-tools'
// rds-stress.
//
//	rds-stress                                 two nodes in this process (127.0.0.1 -> 127.0.0.2), a 4 s mixed run
//	rds-stress -r ADDR [-p PORT]               server: answer clients on ADDR, port PORT and above
//	rds-stress -r ADDR -s PEER [-p PORT] ...   client: run a workload against the server at PEER
//
// A client says hello to the server's base port (-p); the server binds
// one task socket per client task on the ports above it. Each client task
// then keeps -d requests of -q bytes outstanding to its server socket,
// which answers each with -a bytes (default: the request's size), or with
// a bare 32-byte header under -o (one-way: the payload flows from client
// to server). A progress line per second and a final table follow, with a
// power-of-two latency histogram under --histogram and everything as
// JSON under -json. Both ends use the same --transport.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

const synopsis = `usage: rds-stress [flags]                      two nodes in this process, a short mixed run
       rds-stress -r ADDR [-p PORT]              server
       rds-stress -r ADDR -s PEER [-p PORT] ...  client against the server at PEER

Loads RDS with requests and answers and reports throughput, message rate and
round-trip latency: a progress line per second, a final table per task.`

// maxMsg is the largest RDS datagram.
const maxMsg = wire.MaxMsgSize

// Demo workload (no -r, no -s): two nodes on loopback, four tasks with
// different request sizes.
var (
	demoLocal  = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	demoServer = netip.AddrFrom4([4]byte{127, 0, 0, 2})
	demoSizes  = []int{64, 1024, 16384, 262144}
)

const (
	demoDuration = 4 * time.Second
	demoTasks    = 4
	demoDepth    = 8
)

type options struct {
	common    rdstool.Common
	local     string
	server    string
	port      int
	sizes     string
	ack       int
	tasks     int
	depth     int
	duration  time.Duration
	oneway    bool
	json      bool
	histogram bool
	timeout   time.Duration
	interval  time.Duration
	rdma      string
	rdmaSize  int
	set       map[string]bool
}

func main() {
	rdstool.Main(tool(os.Stdout, os.Stderr))
}

func tool(stdout, stderr io.Writer) rdstool.Tool {
	o := &options{}
	fs := rdstool.NewFlagSet("rds-stress")
	o.common.Register(fs, "rds-stress")
	fs.StringVar(&o.local, "r", "", "local address (server: the address to serve on; client: default the address\n"+
		"the host routes to PEER from)")
	fs.StringVar(&o.server, "s", "", "client mode: the server's address")
	fs.IntVar(&o.port, "p", 4000, "base RDS port: the server's hello port; its task sockets use the ports above")
	fs.StringVar(&o.sizes, "q", "1024", "request size in bytes (32-1048576); a comma list gives task i size i mod n")
	fs.IntVar(&o.ack, "a", 0, "answer size in bytes (32-1048576; default: the request's size)")
	fs.IntVar(&o.tasks, "t", 1, "tasks: sockets, each with its own window of requests")
	fs.IntVar(&o.depth, "d", 1, "requests each task keeps outstanding")
	fs.Func("T", "run time: seconds or a duration (\"10\", \"500ms\"; default: until interrupted, 4 s with no -r/-s)",
		func(s string) error { return parseSeconds(s, &o.duration) })
	fs.BoolVar(&o.oneway, "o", false, "one-way: answers are bare 32-byte headers, so the payload flows client -> server")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON on stdout (progress lines go to stderr)")
	fs.BoolVar(&o.histogram, "histogram", false, "print the round-trip histogram (always with no -r/-s)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long to wait for the server's hello answer, and for any\n"+
		"answer while requests are outstanding, before failing")
	fs.DurationVar(&o.interval, "interval", time.Second, "time between progress lines")
	fs.StringVar(&o.rdma, "rdma", "", "read or write: before answering each request the server moves -D bytes\n"+
		"by RDMA READ from, or RDMA WRITE into, memory the client registered for it (RDS zerocopy;\n"+
		"--transport dat only). write also checks that the data is in place when the answer arrives")
	fs.IntVar(&o.rdmaSize, "D", 65536, "RDMA bytes per request with --rdma (1-1048576)")
	return rdstool.Tool{Name: "rds-stress", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			o.set = map[string]bool{}
			fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
			return o.run(ctx, args, stdout, stderr)
		}}
}

// parseSeconds reads -T: seconds ("4", "0.5") or a Go duration.
func parseSeconds(s string, d *time.Duration) error {
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		*d = time.Duration(f * float64(time.Second))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("want seconds or a duration such as 500ms")
	}
	*d = v
	return nil
}

func (o *options) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 0 {
		return rdstool.Usagef("unexpected argument %q", args[0])
	}
	p, err := o.params()
	if err != nil {
		return err
	}
	if o.port < 1 || o.port+p.tasks > 65535 {
		return rdstool.Usagef("-p %d: the base port and the %d above it must be RDS ports (1-65535)", o.port, p.tasks)
	}
	if err := o.common.Setup(stderr); err != nil {
		return err
	}
	switch {
	case o.server == "" && o.local == "":
		return o.demo(ctx, p, stdout, stderr)
	case o.server == "":
		local, err := rdstool.ParseAddr("-r", o.local)
		if err != nil {
			return err
		}
		return o.serve(ctx, netip.AddrPortFrom(local, uint16(o.port)), stdout)
	default:
		server, err := rdstool.ParseAddr("-s", o.server)
		if err != nil {
			return err
		}
		var local netip.Addr
		if o.local != "" {
			if local, err = rdstool.ParseAddr("-r", o.local); err != nil {
				return err
			}
		} else if local, err = rdstool.SourceFor(server); err != nil {
			return err
		}
		return o.client(ctx, p, local, netip.AddrPortFrom(server, uint16(o.port)), stdout, stderr)
	}
}

// params checks the workload flags.
func (o *options) params() (params, error) {
	p := params{ack: o.ack, oneway: o.oneway, tasks: o.tasks, depth: o.depth, duration: o.duration, timeout: o.timeout}
	for _, f := range strings.Split(o.sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < hdrLen || n > maxMsg {
			return p, rdstool.Usagef("-q %q: want sizes of %d-%d bytes (the header takes %d)", o.sizes, hdrLen, maxMsg, hdrLen)
		}
		p.sizes = append(p.sizes, n)
	}
	switch {
	case o.ack != 0 && (o.ack < hdrLen || o.ack > maxMsg):
		return p, rdstool.Usagef("-a %d: want %d-%d bytes", o.ack, hdrLen, maxMsg)
	case o.ack != 0 && o.oneway:
		return p, rdstool.Usagef("-a and -o exclude each other (one-way answers are bare headers)")
	case o.tasks < 1 || o.tasks > maxTasks:
		return p, rdstool.Usagef("-t %d: want 1-%d", o.tasks, maxTasks)
	case o.depth < 1 || o.depth > 4096:
		return p, rdstool.Usagef("-d %d: want 1-4096", o.depth)
	case o.timeout <= 0 || o.interval <= 0:
		return p, rdstool.Usagef("--timeout and --interval must be positive")
	}
	switch o.rdma {
	case "":
	case "read":
		p.rdma = rdmaRead
	case "write":
		p.rdma = rdmaWrite
	default:
		return p, rdstool.Usagef("--rdma %q: want read or write", o.rdma)
	}
	if p.rdma != rdmaNone {
		p.rdmaSize = o.rdmaSize
		switch {
		case o.common.Transport != rdstool.TransportDAT:
			return p, rdstool.Usagef("--rdma needs --transport dat (RDS has RDMA only over its RDMA transport)")
		case o.rdmaSize < 1 || o.rdmaSize > rdsoverdat.DefaultRDMAMaxBytes:
			return p, rdstool.Usagef("-D %d: want 1-%d", o.rdmaSize, rdsoverdat.DefaultRDMAMaxBytes)
		case o.tasks*o.depth > rdsoverdat.DefaultRDMAMaxMRs:
			return p, rdstool.Usagef("--rdma maps -t x -d = %d buffers, more than a node may (%d)",
				o.tasks*o.depth, rdsoverdat.DefaultRDMAMaxMRs)
		}
	}
	return p, nil
}

// serve runs the server until interrupted.
func (o *options) serve(ctx context.Context, base netip.AddrPort, stdout io.Writer) error {
	st, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	ctl, err := rdstool.Bind(st, base, 0, 0)
	if err != nil {
		return err
	}
	info, err := o.common.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	fmt.Fprintf(stdout, "rds-stress server on %v over %s (task sockets from port %d); interrupt to stop\n",
		base, o.common.Transport, base.Port()+1)
	return newServer(st, base, 8<<20, o.common.Logger).run(ctx, ctl)
}

// client runs one workload against the server at server.
func (o *options) client(ctx context.Context, p params, local netip.Addr, server netip.AddrPort, stdout, stderr io.Writer) error {
	st, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	info, err := o.common.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	return o.workload(ctx, st, p, local, server, stdout, stderr, o.histogram)
}

// workload says hello, runs the tasks with progress lines and prints the
// result.
func (o *options) workload(ctx context.Context, st *rdsoverdat.Stack, p params, local netip.Addr, server netip.AddrPort,
	stdout, stderr io.Writer, histogram bool) error {
	c := &client{st: st, local: local, server: server, p: p}
	if err := c.hello(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := c.start(); err != nil {
		return err
	}
	defer c.close()
	progress := stdout
	if o.json {
		progress = stderr
	}
	c.t0 = time.Now()
	var end time.Time
	if p.duration > 0 {
		end = c.t0.Add(p.duration)
	}
	r := &reporter{c: c, out: progress, every: o.interval}
	r.start()
	runErr := c.run(ctx, end)
	r.finish()
	res := c.result(o.common.Transport, time.Since(c.t0).Seconds(), r)
	if runErr != nil {
		res.Error = runErr.Error()
	}
	if o.json {
		if err := res.writeJSON(stdout); err != nil {
			return err
		}
	} else {
		res.printTable(stdout, histogram)
	}
	return runErr
}

// demo runs a server node on 127.0.0.2 and a client node on 127.0.0.1,
// each its own Stack as if on two hosts, in this process.
func (o *options) demo(ctx context.Context, p params, stdout, stderr io.Writer) error {
	if !o.set["q"] {
		p.sizes = demoSizes
	}
	if !o.set["t"] {
		p.tasks = demoTasks
	}
	if !o.set["d"] {
		p.depth = demoDepth
	}
	if !o.set["T"] {
		p.duration = demoDuration
	}
	base := netip.AddrPortFrom(demoServer, uint16(o.port))
	sst, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer sst.Close()
	ctl, err := rdstool.Bind(sst, base, 0, 0)
	if err != nil {
		return err
	}
	cst, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer cst.Close()
	info, err := o.common.ServeInfo(cst, sst)
	if err != nil {
		return err
	}
	defer info.Close()

	sctx, stopServer := context.WithCancel(ctx)
	srvDone := make(chan error, 1)
	go func() { srvDone <- newServer(sst, base, 8<<20, o.common.Logger).run(sctx, ctl) }()
	if !o.json {
		fmt.Fprintf(stdout, "rds-stress: client node %v -> server node %v in this process, over %s\n",
			demoLocal, base, o.common.Transport)
	}
	err = o.workload(ctx, cst, p, demoLocal, base, stdout, stderr, true)
	stopServer()
	if serr := <-srvDone; err == nil {
		err = serr
	}
	return err
}
