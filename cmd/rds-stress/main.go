// Command rds-stress loads RDS with request/answer traffic and reports
// throughput, message rate and round-trip latency, with rds-tools'
// rds-stress flags, start-up shape and columns.
//
//	rds-stress [-r ADDR] [-p PORT]             passive: wait for an active instance, serve its run, exit
//	rds-stress -s PEER [-r ADDR] [-p PORT] ... active: run a workload against the passive instance at PEER
//	rds-stress --demo                          both ends in this process on loopback, a 4 s mixed run
//
// The active instance says hello to the passive one's base port (-p),
// sending the workload, and the passive instance binds one task socket
// per active task on the ports above it. Each task, on both sides, keeps
// -d requests of -q bytes outstanding to its peer task, which answers
// each with an ack of -a bytes (-o: only the active side sends requests).
// When the run ends (-T, or an interrupt) the active instance says
// goodbye and both stop. A progress line per second in the real tool's columns and a
// final table follow, the histogram under --show-histogram and
// everything as JSON under -json. Both ends use the same --transport.
package main

import (
	"context"
	"flag"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

const synopsis = `usage: rds-stress [-r ADDR] [-p PORT]                passive: serve one active instance, then exit
       rds-stress -s PEER [-r ADDR] [-p PORT] [flags]  active: run a workload against PEER
       rds-stress --demo [flags]                       both ends in this process, a 4 s mixed run

Loads RDS with requests and answers and reports throughput, message rate and
round-trip latency: a progress line per second in rds-tools' columns (tsks,
tx/s, rx/s, tx+rx K/s, mbi K/s, mbo K/s, tx us/c, rtt us, cpu %, then p50 and
p99 us), an average line and a table per task. Sizes take K, M or G.`

// maxMsg is the largest RDS datagram.
const maxMsg = wire.MaxMsgSize

// Demo workload (--demo): two nodes on loopback, four tasks with
// different request sizes.
var demoSizes = []int{64, 1024, 16384, 262144}

const (
	demoDuration = 4 * time.Second
	demoTasks    = 4
	demoDepth    = 8
)

type options struct {
	common    rdstool.Common
	refused   rdstool.Refusal
	local     string
	server    string
	port      int
	sizes     string
	ack       string
	tasks     int
	depth     int
	duration  time.Duration
	oneway    bool
	json      bool
	histogram bool
	timeout   time.Duration
	interval  time.Duration
	rdma      string
	rdmaSize  string
	rdmaMode  int
	rdmaBufs  int
	verify    bool
	cpu       bool
	summary   bool
	trace     bool
	tos       int
	showPrm   bool
	demo      bool
	set       map[string]bool
}

func main() {
	rdstool.Main(tool(os.Stdout, os.Stderr))
}

func tool(stdout, stderr io.Writer) rdstool.Tool {
	o := &options{port: 4000, sizes: "1024", tasks: 1, depth: 1, rdmaMode: 0, rdmaBufs: 1}
	fs := rdstool.NewFlagSet("rds-stress")
	o.common.Register(fs, "rds-stress")
	alias(fs, stringValue{&o.local}, "local address or host name (passive: the address to serve on, default every\n"+
		"local IPv4 address; active: default the address the host routes to PEER from)", "r", "recv-addr")
	alias(fs, stringValue{&o.server}, "active: the passive instance's address or host name (without -s, rds-stress\n"+
		"is the passive instance)", "s", "send-addr")
	alias(fs, intValue{&o.port}, "base RDS port: the passive instance's hello port; task sockets use the ports above", "p", "port")
	alias(fs, stringValue{&o.sizes}, "request size in bytes, K, M or G (32-1M); a comma list gives task i size i mod n", "q", "req-bytes")
	alias(fs, stringValue{&o.ack}, "ack size in bytes, K, M or G (32-1M; default: the minimum, 32)", "a", "ack-bytes")
	alias(fs, intValue{&o.tasks}, "tasks: sockets, each with its own window of requests", "t", "tasks")
	alias(fs, intValue{&o.depth}, "requests each task keeps outstanding to its peer task (each way)", "d", "depth")
	alias(fs, secondsValue{&o.duration}, "run time in seconds (0: until interrupted; default 4 with --demo); a\n"+
		"duration such as 500ms is taken too", "T", "time")
	alias(fs, boolValue{&o.oneway}, "one-way: only the active instance sends requests (by default both do, each\n"+
		"task to its peer task, and each answers the other's)", "o", "one-way")
	alias(fs, stringValue{&o.rdmaSize}, "RDMA bytes per request (K, M; up to 1M): turns RDMA on; before answering,\n"+
		"the passive side RDMA-reads or -writes that much of memory the active side registered\n"+
		"(RDS zerocopy, --transport dat only)", "D", "rdma-bytes")
	alias(fs, intValue{&o.rdmaMode}, "RDMA mode with -D: 0 alternate READ and WRITE, 1 READ only, 2 WRITE only", "M", "rdma-mode")
	alias(fs, intValue{&o.rdmaBufs}, "RDMA: user buffers each request targets (only 1 here)", "I", "rdma-buffers")
	alias(fs, boolValue{&o.verify}, "verify: fill every payload (and RDMA buffer) with a pattern the receiver checks", "v", "verify")
	alias(fs, boolValue{&o.cpu}, "report CPU use (this process's CPU time over the machine's; -1.00 without -c)", "c", "report-cpu")
	alias(fs, boolValue{&o.summary}, "print the summary only, no line per second", "z", "report-summary")
	alias(fs, boolValue{&o.trace}, "trace execution (the same as --log trace)", "V", "trace")
	alias(fs, intValue{&o.tos}, "type of service: only 0 here (one connection per pair of addresses)", "Q", "tos")
	alias(fs, boolValue{&o.histogram}, "print the round-trip histogram (always with --demo)", "show-histogram", "histogram")
	fs.BoolVar(&o.showPrm, "show-params", false, "print the run's parameters first")
	fs.BoolVar(&o.json, "json", false, "print the result as JSON on stdout (progress lines go to stderr)")
	fs.BoolVar(&o.demo, "demo", false, "run both ends in this process on two fresh loopback addresses: a 4 s run of\n"+
		"four tasks of 64 B to 256 KiB, eight requests in flight each")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long to wait for the passive side's hello answer, for any\n"+
		"answer while requests are outstanding, and (passive) for a silent active side")
	fs.DurationVar(&o.interval, "interval", time.Second, "time between progress lines")
	fs.StringVar(&o.rdma, "rdma", "", "read or write: the same as -M 1 or -M 2 (-D defaults to 64K with it)")
	o.refused.Bool(fs, "no parent process to raise above the tasks: they are goroutines of one process", "R", "rtprio")
	o.refused.Bool(fs, "use -json for figures a script reads", "show-perfdata")
	o.refused.Bool(fs, "rdsoverdat sockets have no asynchronous send mode", "async")
	o.refused.Bool(fs, "a run ends with the active side's goodbye; stop a node to reset its connections", "reset")
	o.refused.Bool(fs, "rdsoverdat has no RDS_CANCEL_SENT_TO", "cancel-sent-to")
	o.refused.Bool(fs, "R_Keys here come from the provider's own allocator", "rdma-key-o-meter")
	o.refused.Value(fs, "use --show-histogram or -json's histogram", "show-outliers")
	o.refused.Value(fs, "use -T, or interrupt", "abort-after")
	o.refused.Value(fs, "the active side waits --timeout for the hello answer", "connect-retries")
	o.refused.Value(fs, "congestion monitoring is always on", "use-cong-monitor")
	o.refused.Value(fs, "each request's memory is registered once with GET_MR and kept", "rdma-use-once",
		"rdma-use-get-mr", "rdma-cache-mrs")
	o.refused.Value(fs, "RDMA READs here are always fenced", "rdma-use-fence")
	o.refused.Value(fs, "RDMA notifications are always on", "rdma-use-notify")
	o.refused.Value(fs, "RDMA buffers are Go slices, whose alignment the runtime chooses", "rdma-alignment")
	return rdstool.Tool{Name: "rds-stress", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			o.set = map[string]bool{}
			fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
			return o.run(ctx, args, stdout, stderr)
		}}
}

func (o *options) isSet(names ...string) bool {
	for _, n := range names {
		if o.set[n] {
			return true
		}
	}
	return false
}

func (o *options) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) != 0 {
		return rdstool.Usagef("unexpected argument %q", args[0])
	}
	if err := o.refused.Check(); err != nil {
		return err
	}
	p, err := o.params()
	if err != nil {
		return err
	}
	if o.port < 1 || o.port+p.tasks > 65535 {
		return rdstool.Usagef("-p %d: the base port and the %d above it must be RDS ports (1-65535)", o.port, p.tasks)
	}
	if o.trace && o.common.Log == "" {
		o.common.Log = "trace"
	}
	if err := o.common.Setup(stderr); err != nil {
		return err
	}
	switch {
	case o.demo:
		if o.server != "" || o.local != "" {
			return rdstool.Usagef("--demo picks its own addresses: drop -s and -r")
		}
		return o.runDemo(ctx, p, stdout, stderr)
	case o.server == "":
		if o.isSet("q", "req-bytes", "a", "ack-bytes", "t", "tasks", "d", "depth", "T", "time", "o", "one-way",
			"D", "rdma-bytes", "M", "rdma-mode", "rdma", "json") {
			return rdstool.Usagef("the passive instance takes its workload from the active one: give -q, -a, -t, -d, -T, -o, -D, -M and -json with -s")
		}
		return o.passive(ctx, stdout)
	default:
		server, err := rdstool.ResolveAddr(ctx, "-s", o.server)
		if err != nil {
			return err
		}
		var local netip.Addr
		if o.local != "" {
			if local, err = rdstool.ResolveAddr(ctx, "-r", o.local); err != nil {
				return err
			}
		} else if local, err = rdstool.SourceFor(server); err != nil {
			return err
		} else if local == server {
			// The passive instance runs on this host and is the RDS node
			// of that address (one node per address per process): speak
			// from a fresh loopback address, which reaches every local
			// address.
			local = randomLoopback(2)
			o.common.Logger.Info().Stringer("local", local).Msg("passive instance on this host: using a loopback address of its own")
		}
		return o.client(ctx, p, local, netip.AddrPortFrom(server, uint16(o.port)), stdout, stderr)
	}
}

// params checks the workload flags.
func (o *options) params() (params, error) {
	p := params{oneway: o.oneway, tasks: o.tasks, depth: o.depth, duration: o.duration, timeout: o.timeout,
		verify: o.verify, cpu: o.cpu}
	for _, f := range strings.Split(o.sizes, ",") {
		n, err := rdstool.ParseSize("-q", strings.TrimSpace(f), maxMsg)
		if err != nil || n < hdrLen {
			return p, rdstool.Usagef("-q %q: want sizes of %d-%d bytes, K or M allowed (the header takes %d)",
				o.sizes, hdrLen, maxMsg, hdrLen)
		}
		p.sizes = append(p.sizes, int(n))
	}
	p.ack = hdrLen // the real tool's default: the smallest ack
	if o.ack != "" {
		n, err := rdstool.ParseSize("-a", o.ack, maxMsg)
		if err != nil || n < hdrLen {
			return p, rdstool.Usagef("-a %q: want %d-%d bytes, K or M allowed", o.ack, hdrLen, maxMsg)
		}
		p.ack = int(n)
	}
	switch {
	case o.tasks < 1 || o.tasks > maxTasks:
		return p, rdstool.Usagef("-t %d: want 1-%d", o.tasks, maxTasks)
	case o.depth < 1 || o.depth > 4096:
		return p, rdstool.Usagef("-d %d: want 1-4096", o.depth)
	case o.timeout <= 0 || o.interval <= 0:
		return p, rdstool.Usagef("--timeout and --interval must be positive")
	case o.tos != 0:
		return p, rdstool.Usagef("-Q %d: only type of service 0 here (rdsoverdat keeps one connection per pair of addresses)", o.tos)
	case o.rdmaBufs != 1:
		return p, rdstool.Usagef("-I %d: only 1 here (each request targets one registered buffer)", o.rdmaBufs)
	case o.rdmaMode < 0 || o.rdmaMode > 2:
		return p, rdstool.Usagef("-M %d: want 0 (READ and WRITE alternately), 1 (READ only) or 2 (WRITE only)", o.rdmaMode)
	}
	mode := rdmaMode(o.rdmaMode + 1)
	switch o.rdma {
	case "":
	case "read":
		mode = rdmaRead
	case "write":
		mode = rdmaWrite
	default:
		return p, rdstool.Usagef("--rdma %q: want read or write", o.rdma)
	}
	size := int64(0)
	if o.rdmaSize != "" {
		n, err := rdstool.ParseSize("-D", o.rdmaSize, rdsoverdat.DefaultRDMAMaxBytes)
		if err != nil {
			return p, err
		}
		size = n
	} else if o.rdma != "" {
		size = 64 << 10
	}
	if o.rdmaSize == "" && o.rdma == "" && o.isSet("M", "rdma-mode") {
		return p, rdstool.Usagef("-M chooses the RDMA operation: give -D BYTES to turn RDMA on")
	}
	if size > 0 {
		p.rdma, p.rdmaSize = mode, int(size)
		switch {
		case o.common.Transport != rdstool.TransportDAT && o.common.Daemon == "":
			return p, rdstool.Usagef("-D needs --transport dat (RDS has RDMA only over its RDMA transport)")
		case o.tasks*o.depth > rdsoverdat.DefaultRDMAMaxMRs:
			return p, rdstool.Usagef("-D maps -t x -d = %d buffers, more than a node may (%d)",
				o.tasks*o.depth, rdsoverdat.DefaultRDMAMaxMRs)
		}
	}
	return p, nil
}
