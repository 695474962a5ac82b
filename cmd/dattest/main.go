// Command dattest exercises a DAT provider the way rdma-core's dapltest
// does: a server (-T S) that any number of clients use, a transaction
// test (-T T: several EPs on several threads, RDMA Write, RDMA Read and
// Send/Receive with every byte checked), a performance test (-T P: one
// EP, a pipeline of RDMA Writes, RDMA Reads or echoed Sends, reporting
// ops/s, MB/s and latency) and a limit test (-T L: EPs, EVD length and
// LMR size raised until the provider refuses).
//
// Clients name the server with -s; without it they start a server in
// their own process on a second IA of the same provider, which is how
// the in-memory provider "mem" is tested. Run dattest -h for the flags.
//
// Exit status: 0 the test passed, 1 it failed (the reason is one line on
// stderr), 2 the command line is wrong.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/internal/version"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// LogEnv names the environment variable that sets the log level when
// -log is not given.
const LogEnv = "DATTEST_LOG"

// DefaultPort is the server's connection qualifier unless -p says
// otherwise (dapltest's default, 0xB0D0).
const DefaultPort = 45264

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is dattest without the process around it; it returns the exit
// status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if version.Requested(args) {
		version.Print(stdout, "dattest")
		return exitOK
	}
	o, err := parseFlags(args, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "dattest: %v (dattest -h lists the flags)\n", err)
		return exitUsage
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(o.level).With().Timestamp().Logger()
	if err := o.exec(ctx, stdout, log); err != nil {
		fmt.Fprintf(stderr, "dattest: %s\n", oneLine(err))
		return exitFailed
	}
	return exitOK
}

// oneLine keeps a failure on one line: joined errors print one per line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// exec runs the test o describes.
func (o *options) exec(ctx context.Context, stdout io.Writer, log zerolog.Logger) error {
	cli, err := ia.Open(o.provider)
	if err != nil {
		return fmt.Errorf("open %q: %w", o.provider, err)
	}
	defer cli.Close(dat.CloseAbrupt)
	log.Debug().Str("provider", o.provider).Stringer("addr", cli.Addr()).Msg("IA open")

	switch o.mode {
	case "S":
		return serve(ctx, cli, dat.ConnQual(o.port), log, func(q dat.ConnQual) {
			fmt.Fprintf(stdout, "dattest server: %s listening on %v port %d\n", o.provider, cli.Addr(), q)
		})
	case "L":
		return runLimits(cli, limitConfig{maxEPs: o.maxEPs, maxQLen: o.maxQLen, maxLMR: o.maxLMR}, stdout)
	}

	addr, qual := o.server, dat.ConnQual(o.port)
	if !addr.IsValid() {
		// No server named: serve from a second IA of this process.
		srvIA, err := ia.Open(o.provider)
		if err != nil {
			return fmt.Errorf("open %q for the in-process server: %w", o.provider, err)
		}
		defer srvIA.Close(dat.CloseAbrupt)
		sctx, stop := context.WithCancel(ctx)
		ready, done := make(chan dat.ConnQual, 1), make(chan error, 1)
		go func() {
			done <- serve(sctx, srvIA, 0, log.With().Str("side", "server").Logger(), func(q dat.ConnQual) { ready <- q })
		}()
		defer func() {
			stop()
			<-done
		}()
		select {
		case qual = <-ready:
		case err := <-done:
			return fmt.Errorf("in-process server: %w", err)
		}
		addr = srvIA.Addr()
		log.Debug().Stringer("addr", addr).Uint64("port", uint64(qual)).Msg("in-process server ready")
	}

	switch o.mode {
	case "T":
		return runTransaction(ctx, cli, addr, qual, txnConfig{threads: o.threads, eps: o.eps, iters: o.iters, size: o.size, timeout: o.timeout}, stdout)
	default: // "P"
		c := perfConfig{op: o.op, iters: o.iters, size: o.size, depth: o.depth, timeout: o.timeout}
		r, err := runPerf(ctx, cli, addr, qual, c)
		if err != nil {
			return err
		}
		r.print(stdout, c)
		return nil
	}
}

// options is the parsed command line.
type options struct {
	mode     string // S, T, P, L
	provider string
	server   netip.Addr // invalid: in-process server
	port     int
	iters    int
	threads  int
	eps      int
	size     int
	op       perfOp
	depth    int
	maxEPs   int
	maxQLen  int
	maxLMR   int64
	timeout  time.Duration
	level    zerolog.Level
}

const usageHead = `usage: dattest -T S [-D provider] [-p port]                       server
       dattest -T T [-s addr] [-t threads] [-w eps] [-i iters] [-S size]   transaction test
       dattest -T P [-s addr] [-o write|read|send] [-S size] [-i iters] [-q depth]
                                                                    performance test
       dattest -T L [-D provider] [-m eps] [-max-qlen n] [-max-lmr bytes]  limit test

A client without -s runs against a server in its own process (a second IA
of the same provider). Sizes take a k, m or g suffix (powers of 1024).
Exit status: 0 passed, 1 failed (reason on stderr), 2 bad command line.

Flags:
`

func parseFlags(args []string, stdout, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("dattest", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	fs.StringVar(&o.mode, "T", "", "test `type`: S server, T transaction, P performance, L limit (required)")
	fs.StringVar(&o.provider, "D", "siw-lo", "DAT `provider` name from the registry: mem, siw-lo, siw-<ifname> (file in $"+dat.ConfEnv+" overrides the list)")
	server := fs.String("s", "", "server IPv4 `address` (T and P); empty: an in-process server")
	fs.IntVar(&o.port, "p", DefaultPort, "server `port` (DAT connection qualifier); -T S -p 0 picks a free one and prints it")
	fs.IntVar(&o.iters, "i", 0, "`iterations`: transactions per EP (T, default 100) or operations (P, default 10000)")
	fs.IntVar(&o.threads, "t", 2, "client `threads` (T)")
	fs.IntVar(&o.eps, "w", 2, "connected `EPs` per thread (T)")
	size := fs.String("S", "4k", "message and RDMA `size` in bytes (T, P)")
	op := fs.String("o", "write", "performance `operation` (P): write (RDMA Write), read (RDMA Read), send (Send echoed by the server)")
	fs.IntVar(&o.depth, "q", 8, "pipeline `depth`: operations in flight (P)")
	fs.IntVar(&o.maxEPs, "m", 1024, "most `EPs` the limit test creates (L)")
	fs.IntVar(&o.maxQLen, "max-qlen", 65536, "longest EVD `qlen` the limit test tries (L)")
	maxLMR := fs.String("max-lmr", "256m", "largest LMR `size` the limit test tries (L)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "connection setup `limit`, and longest time a test may make no progress")
	level := fs.String("log", "", "log `level`: debug, info, warn, error, disabled (default $"+LogEnv+", else warn)")
	fs.Usage = func() {} // -h is handled below; errors by run
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprint(stdout, usageHead)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch o.mode {
	case "S", "T", "P", "L":
	case "":
		return nil, errors.New("-T is required")
	default:
		return nil, fmt.Errorf("-T %q: want S, T, P or L", o.mode)
	}
	if *server != "" {
		a, err := netip.ParseAddr(*server)
		if err != nil || !a.Unmap().Is4() {
			return nil, fmt.Errorf("-s %q: not an IPv4 address", *server)
		}
		o.server = a.Unmap()
	}
	var err error
	if o.size, err = parseSize("-S", *size, maxMsgSize); err != nil {
		return nil, err
	}
	lmrSize, err := parseSize("-max-lmr", *maxLMR, 1<<50)
	if err != nil {
		return nil, err
	}
	o.maxLMR = int64(lmrSize)
	o.op = perfOp(*op)
	if o.op != perfWrite && o.op != perfRead && o.op != perfSend {
		return nil, fmt.Errorf("-o %q: want write, read or send", *op)
	}
	if o.iters == 0 {
		o.iters = 100
		if o.mode == "P" {
			o.iters = 10000
		}
	}
	switch {
	case o.port < 0 || o.port > 65535 || (o.port == 0 && o.mode != "S"):
		return nil, fmt.Errorf("-p %d: want 1..65535", o.port)
	case o.iters < 0:
		return nil, fmt.Errorf("-i %d: want at least 1", o.iters)
	case o.threads < 1 || o.threads > 256:
		return nil, fmt.Errorf("-t %d: want 1..256", o.threads)
	case o.eps < 1 || o.eps > 256:
		return nil, fmt.Errorf("-w %d: want 1..256", o.eps)
	case o.depth < 1 || o.depth > maxDepth:
		return nil, fmt.Errorf("-q %d: want 1..%d", o.depth, maxDepth)
	case o.size*o.depth > maxRegion:
		return nil, fmt.Errorf("-S %d with -q %d: more than %d bytes in flight", o.size, o.depth, maxRegion)
	case o.maxEPs < 1 || o.maxQLen < 1:
		return nil, errors.New("-m and -max-qlen must be at least 1")
	case o.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want a positive duration", o.timeout)
	}
	if o.level, err = parseLevel(*level); err != nil {
		return nil, err
	}
	return o, nil
}

// parseSize parses a byte count with an optional k, m or g suffix.
func parseSize(flagName, s string, most int) (int, error) {
	mult := 1
	t := strings.ToLower(s)
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	var n int
	if _, err := fmt.Sscanf(t, "%d", &n); err != nil || fmt.Sprint(n) != t || n < 1 || n > most/mult {
		return 0, fmt.Errorf("%s %q: want a size from 1 to %d bytes", flagName, s, most)
	}
	return n * mult, nil
}

// parseLevel takes the -log flag, else $DATTEST_LOG, else warn.
func parseLevel(s string) (zerolog.Level, error) {
	src := "-log"
	if s == "" {
		s, src = os.Getenv(LogEnv), "$"+LogEnv
	}
	if s == "" {
		return zerolog.WarnLevel, nil
	}
	l, err := zerolog.ParseLevel(strings.ToLower(s))
	if err != nil || s == "" {
		return 0, fmt.Errorf("%s %q: want debug, info, warn, error or disabled", src, s)
	}
	return l, nil
}
