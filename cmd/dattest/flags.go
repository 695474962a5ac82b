package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/dat"
)

// options is the parsed command line.
type options struct {
	mode     string // S, T, P, L, Q
	provider string
	server   netip.Addr // invalid: in-process server
	port     int
	iters    int
	threads  int
	eps      int
	size     int
	ops      []op // -T T
	op       perfOp
	segs     int
	depth    int
	poll     bool
	json     bool
	maxEPs   int
	maxQLen  int
	maxLMR   int64
	timeout  time.Duration
	level    zerolog.Level
	stderr   io.Writer
}

const usageHead = `usage: dattest -T S [-D provider] [-n port] [-d]                     server
       dattest -T T [-s server] [-n port] [-t threads] [-w eps] [-i iters] [-V] [-P]
                    [-json] [client|server RR|RW|SR [seg_size [num_segs]] [-f]] ...  transaction test
       dattest -T P [-s server] [-n port] [-p pipeline] [-i iters] [-m b|p] [-json]
                    [RR|RW|SR [seg_size [num_segs]]]                  performance test
       dattest -T L [-D provider] [-m max_eps] [--max-qlen n] [--max-lmr bytes]   limit test
       dattest -T Q -s server [-n port]                                 ask a server to quit

dapltest's letters with dapltest's meanings. A client without -s runs
against a server in its own process (a second IA of the same provider).
The default transaction is "client RW 4096 client RR 4096 client SR 4096
server SR 4096"; the dattest server initiates no RDMA, so "server RR|RW"
are refused, and each "server SR" is the echo of the client SR before it.
Sizes of -S and --max-lmr take a k, m or g suffix (powers of 1024).
Ctrl-C stops a test and prints what it measured, marked "interrupted".
Exit status: 0 passed, 1 failed or interrupted (reason on stderr), 2 bad
command line.

Flags:
`

// notHere are dapltest letters that make no sense here, with the reason
// each is refused.
var notHere = map[string]string{
	"r": "-r (RSP instead of PSP) is refused here: the dattest server listens on a PSP only",
	"f": "-f is refused as a flag: it belongs in an SR op (\"client SR 4096 -f\")",
}

func parseFlags(args []string, stdout, stderr io.Writer) (*options, error) {
	o := &options{stderr: stderr}
	fs := flag.NewFlagSet("dattest", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	fs.StringVar(&o.mode, "T", "", "test `type`: S server, T transaction, P performance, L limit, Q quit a server (required)")
	fs.StringVar(&o.provider, "D", "siw-lo", "DAT `device` (provider) name from the registry: mem, siw-lo, siw-<ifname>\n"+
		"(a file in $"+dat.ConfEnv+" overrides the list; godapl-devinfo lists them)")
	server := fs.String("s", "", "server `address` or host name (T, P, Q); empty: an in-process server")
	fs.IntVar(&o.port, "n", DefaultPort, "server `port` (DAT connection qualifier); -T S -n 0 picks a free one and prints it")
	fs.IntVar(&o.iters, "i", 1000, "`iterations`: transactions per EP (T) or operations (P)")
	fs.IntVar(&o.threads, "t", 1, "client `threads` (T)")
	fs.IntVar(&o.eps, "w", 1, "connected `EPs` per thread (T); -T L: width, only 1 here")
	debug := fs.Bool("d", false, "debug: log at debug level")
	fs.Bool("V", false, "validate data (T): every byte is always checked here")
	fs.BoolVar(&o.poll, "P", false, "reap completions by polling the EVD instead of waiting (T)")
	mode := fs.String("m", "", "P: mode, b (blocking, the default) or p (polling); L: the most EPs to create (default 1000)")
	fs.IntVar(&o.depth, "p", 8, "`pipeline` length: operations in flight (P)")
	rel := fs.String("R", "BE", "service reliability (QoS): BE only here (best effort)")
	size := fs.String("S", "4k", "default op size in bytes, where an op names none (T, P)")
	opName := fs.String("o", "", "P: the operation, write, read or send, instead of RW, RR or SR")
	fs.BoolVar(&o.json, "json", false, "T, P: print the result as JSON on stdout (progress lines go to stderr)")
	fs.IntVar(&o.maxQLen, "max-qlen", 65536, "longest EVD `qlen` the limit test tries (L)")
	maxLMR := fs.String("max-lmr", "256m", "largest LMR `size` the limit test tries (L)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "connection setup `limit`, and longest time a test may make no progress")
	level := fs.String("log", "", "log `level`: debug, info, warn, error, disabled (default $"+LogEnv+", else warn)")
	var refused []string
	for name, why := range notHere {
		fs.BoolFunc(name, why, func(string) error { refused = append(refused, why); return nil })
	}
	fs.Usage = func() {} // -h is handled below; errors by run
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprint(stdout, usageHead)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if len(refused) > 0 {
		return nil, errors.New(refused[0])
	}
	switch o.mode {
	case "S", "T", "P", "L", "Q":
	case "F":
		return nil, errors.New("-T F: the FFT suites are not here; the provider's corner cases are the DAT conformance tests (go test ./dat/...)")
	case "":
		return nil, errors.New("-T is required")
	default:
		return nil, fmt.Errorf("-T %q: want S, T, P, L or Q", o.mode)
	}
	if *rel != "BE" {
		return nil, fmt.Errorf("-R %q: only BE (best effort) here; the providers have no other service levels", *rel)
	}
	if *server != "" {
		a, err := resolve(*server)
		if err != nil {
			return nil, err
		}
		o.server = a
	} else if o.mode == "Q" {
		return nil, errors.New("-T Q needs -s, the server to stop")
	}
	if o.size, err = parseSize("-S", *size, maxMsgSize); err != nil {
		return nil, err
	}
	lmrSize, err := parseSize("-max-lmr", *maxLMR, 1<<50)
	if err != nil {
		return nil, err
	}
	o.maxLMR = int64(lmrSize)
	o.maxEPs = 1000
	switch {
	case o.mode == "L" && *mode != "":
		if o.maxEPs, err = strconv.Atoi(*mode); err != nil || o.maxEPs < 1 {
			return nil, fmt.Errorf("-m %q: with -T L, the most EPs, at least 1", *mode)
		}
	case *mode == "p":
		o.poll = true
	case *mode == "" || *mode == "b":
	default:
		return nil, fmt.Errorf("-m %q: want b (blocking) or p (polling)", *mode)
	}
	if err := o.parseOps(pos, *opName); err != nil {
		return nil, err
	}
	switch {
	case o.port < 0 || o.port > 65535 || (o.port == 0 && o.mode != "S"):
		return nil, fmt.Errorf("-n %d: want 1..65535", o.port)
	case o.iters < 1:
		return nil, fmt.Errorf("-i %d: want at least 1", o.iters)
	case o.threads < 1 || o.threads > 256:
		return nil, fmt.Errorf("-t %d: want 1..256", o.threads)
	case o.eps < 1 || o.eps > 256:
		return nil, fmt.Errorf("-w %d: want 1..256", o.eps)
	case o.mode == "L" && o.eps != 1:
		return nil, fmt.Errorf("-w %d with -T L: only width 1 here (the limit test raises one resource at a time)", o.eps)
	case o.depth < 1 || o.depth > maxDepth:
		return nil, fmt.Errorf("-p %d: want 1..%d", o.depth, maxDepth)
	case o.size*o.depth > maxRegion:
		return nil, fmt.Errorf("%d bytes with -p %d: more than %d bytes in flight", o.size, o.depth, maxRegion)
	case o.maxQLen < 1:
		return nil, errors.New("-max-qlen must be at least 1")
	case o.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want a positive duration", o.timeout)
	}
	if *debug && *level == "" {
		*level = "debug"
	}
	if o.level, err = parseLevel(*level); err != nil {
		return nil, err
	}
	return o, nil
}

// parseInterspersed parses flags before, between and after the words of
// the operation list, which dapltest writes last but users often do not;
// "-f" stays in the list, where it belongs to an SR op, and "--" ends the
// flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), nil
		}
		for len(rest) > 0 && (!strings.HasPrefix(rest[0], "-") || rest[0] == "-f") {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
		if len(rest) == 0 {
			return pos, nil
		}
		args = rest
	}
}

// parseOps reads the positional operation list: a transaction's ops
// (T), or the performance test's one op (P).
func (o *options) parseOps(args []string, opName string) error {
	o.segs = 1
	switch o.mode {
	case "T":
		if opName != "" {
			return errors.New("-o is for -T P; a transaction takes an op list")
		}
		if len(args) == 0 {
			o.ops = defaultTxnOps(o.size)
			return nil
		}
		ops, err := parseTxnOps(args, 4096)
		o.ops = ops
		return err
	case "P":
		o.op = perfWrite
		if opName != "" {
			if len(args) > 0 {
				return errors.New("give the operation as -o or as RR|RW|SR, not both")
			}
			o.op = perfOp(opName)
			if o.op != perfWrite && o.op != perfRead && o.op != perfSend {
				return fmt.Errorf("-o %q: want write, read or send", opName)
			}
			return nil
		}
		if len(args) == 0 {
			return nil
		}
		p, err := parseOp(args, false, o.size)
		if err != nil {
			return err
		}
		o.op = map[string]perfOp{"RW": perfWrite, "RR": perfRead, "SR": perfSend}[p.kind]
		o.size, o.segs = p.bytes(), p.segs
		return nil
	}
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q (ops go with -T T and -T P)", args[0])
	}
	return nil
}

// resolve takes an IPv4 address or a host name, as dapltest's -s does.
func resolve(s string) (netip.Addr, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		if a = a.Unmap(); a.Is4() {
			return a, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", s)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("-s %q: not an IPv4 address, and the name does not resolve to one", s)
	}
	return ips[0].Unmap(), nil
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
