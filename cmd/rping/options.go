package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/godapl/godapl/cmd/rping/internal/rping"
)

// Exit codes, as rping's main returns them.
const (
	exitOK      = 0
	exitInvalid = 22  // EINVAL: bad options
	exitFailed  = 255 // rping's -1: the run failed
)

// options are rping's command line.
type options struct {
	server     bool // -s, else -c
	modeSet    bool
	persistent bool   // -P
	addr       string // -a, resolved
	source     string // -I, resolved
	port       int    // -p
	cfg        rping.Config
	help       bool
	provider   string // --provider: siw (default) or rdmacore
}

// optstring is rping's getopt string plus h: letters followed by a colon
// take an argument. rping accepts -t in getopt but handles it nowhere, so
// it ends in the usage text; so does it here.
const optstring = "a:I:Pp:C:S:t:scvVdqh"

var errUsage = errors.New("usage")

// parseOptions parses args the way getopt(3) does for rping: single-letter
// options, clusters ("-vV"), arguments attached or separate ("-S64",
// "-S 64"), "--" ending the options. Like rping it reports every bad
// value before giving up, on stderr.
func parseOptions(ctx context.Context, args []string, stderr io.Writer) (*options, error) {
	o := &options{port: rping.DefaultPort, cfg: rping.Config{Size: rping.DefaultSize}}
	var bad error
	fail := func(format string, a ...any) {
		fmt.Fprintf(stderr, format+"\n", a...)
		bad = errUsage
	}
	o.provider = "siw"
	for i := 0; i < len(args); i++ {
		arg := args[i]
		// --provider is godapl's own, the one long option: rping has
		// one device kind, godapl several.
		if name, ok := strings.CutPrefix(arg, "--provider="); ok {
			o.provider = name
			continue
		}
		if arg == "--provider" {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("%w: option --provider needs an argument", errUsage)
			}
			i++
			o.provider = args[i]
			continue
		}
		if arg == "--" {
			if i+1 < len(args) {
				return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, args[i+1])
			}
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			return nil, fmt.Errorf("%w: unexpected argument %q", errUsage, arg)
		}
		for j := 1; j < len(arg); j++ {
			c := arg[j]
			k := strings.IndexByte(optstring, c)
			if c == ':' || k < 0 {
				return nil, fmt.Errorf("%w: unknown option -%c", errUsage, c)
			}
			var val string
			if k+1 < len(optstring) && optstring[k+1] == ':' {
				switch {
				case j+1 < len(arg):
					val = arg[j+1:]
				case i+1 < len(args):
					i++
					val = args[i]
				default:
					return nil, fmt.Errorf("%w: option -%c needs an argument", errUsage, c)
				}
				j = len(arg)
			}
			switch c {
			case 'a', 'I':
				ip, err := resolve(ctx, val)
				if err != nil {
					fail("getaddrinfo failed (%v) - invalid hostname or IP address", err)
				} else if c == 'a' {
					o.addr = ip
				} else {
					o.source = ip
				}
			case 'P':
				o.persistent = true
			case 'p':
				p, err := strconv.Atoi(val)
				if err != nil || p < 0 || p > 65535 {
					fail("Invalid port %s", val)
				}
				o.port = p
			case 'S':
				n, err := strconv.Atoi(val)
				if err != nil || n < rping.MinSize || n > rping.MaxSize {
					fail("Invalid size %s (valid range is %d to %d)", val, rping.MinSize, rping.MaxSize)
				}
				o.cfg.Size = n
			case 'C':
				n, err := strconv.Atoi(val)
				if err != nil || n < 0 {
					fail("Invalid count %s", val)
				}
				o.cfg.Count = n
			case 's', 'c':
				o.server, o.modeSet = c == 's', true
			case 'v':
				o.cfg.Verbose = true
			case 'V':
				o.cfg.Validate = true
			case 'd':
				o.cfg.Debug = true
			case 'q':
				o.cfg.SelfQP = true
			case 'h':
				o.help = true
			case 't':
				return nil, fmt.Errorf("%w: option -t is not supported", errUsage)
			}
		}
	}
	switch {
	case bad != nil:
		return nil, bad
	case o.help:
		return o, nil
	case o.provider != "siw" && o.provider != "rdmacore":
		return nil, fmt.Errorf("%w: --provider %q: want siw or rdmacore", errUsage, o.provider)
	case !o.modeSet:
		return nil, fmt.Errorf("%w: one of -s and -c is required", errUsage)
	case !o.server && o.addr == "":
		return nil, fmt.Errorf("%w: the client needs the server's address (-a)", errUsage)
	}
	o.cfg.LocalAddr = o.source
	return o, nil
}

// resolve turns a host name or address into one IP address, IPv4 first,
// as getaddrinfo's first answer usually is.
func resolve(ctx context.Context, host string) (string, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.String(), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return "", err
	}
	for _, ip := range ips {
		if ip.Is4() || ip.Is4In6() {
			return ip.Unmap().String(), nil
		}
	}
	if len(ips) == 0 {
		return "", fmt.Errorf("no address for %s", host)
	}
	return ips[0].String(), nil
}

// listenAddr is where the server binds: -a, or every address.
func (o *options) listenAddr() string {
	if o.addr == "" {
		return net.JoinHostPort("0.0.0.0", strconv.Itoa(o.port))
	}
	return net.JoinHostPort(o.addr, strconv.Itoa(o.port))
}

// serverAddr is where the client connects.
func (o *options) serverAddr() string { return net.JoinHostPort(o.addr, strconv.Itoa(o.port)) }

const usageText = `rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]
rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
	-c		client side
	-I		Source address to bind to for client.
	-s		server side.  To bind to any address with IPv6 use -a ::0
	-v		display ping data to stdout
	-V		validate ping data
	-d		debug printfs
	-S size 	ping data size
	-C count	ping count times
	-a addr		address
	-p port		port
	-P		persistent server mode allowing multiple connections
	-q		use self-created, self-modified QP
	-h		this text
	--provider NAME	siw (default) or rdmacore

godapl's rping speaks rdma-core's rping protocol over its own soft-iWARP
(verbs/siw, the device "siw" on every local address) and interoperates
with the kernel's rping over siw. Defaults: port 7174, size 64 (valid 26 to
65535), count 0 (ping until the server goes away or the process is
stopped). The server ignores -C, as rping's does.

-q here: the QP is always created by rping itself (godapl has no
rdma_create_qp); -q makes the server accept with IRD and ORD 1 instead of
the client's values, and makes both sides move their QP to ERROR before
disconnecting, which aborts the stream instead of closing it, as rping -q
does.

--provider rdmacore (an rping built with -tags rdmacore) runs over the
rdma-core device rdma_cm uses for -a, as rdma-core's rping does, and
interoperates with it on rxe and siw.

-P serves every connection on its own goroutine until SIGINT or SIGTERM.
Every wait is bounded: connecting by 12 s (rping's 2 s resolution plus
siw's 10 s MPA timeout), each step of a ping by 10 s.

Exit status: 0 on success, 22 for bad options, 255 when the run failed.
`
