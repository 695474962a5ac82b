// Command rds-info prints the RDS state of running nodes: sockets,
// connections, message queues, transports, congestion and counters, in
// the tables and with the letters of rds-tools' rds-info.
//
//	rds-info [-cknrstTIgv] [--socket PATH] [-json]
//	rds-info [-cknrstTIgv] --rdsd PATH
//	rds-info --transport kernel [-cknrstTIv]
//
// rdsoverdat's RDS state lives in the process that runs it, so every RDS
// tool serves its state on a unix socket (--info-socket, by default
// /run/godapl/TOOL-PID.sock) and rds-info reads it: every socket of that
// directory, or the one --socket names. With --transport kernel it reads
// the host kernel's own tables through getsockopt(RDS_INFO_*), as
// rds-tools' rds-info does. With --rdsd (default $RDSD_SOCKET) it reads
// the rdsd daemon's state, the host's. With no table flags it prints every table;
// with no RDS node running, the tables are empty (exit 0), as the real
// tool prints them on a quiet host. Letters combine as with getopt
// ("-kn").
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

const synopsis = `usage: rds-info [-cknrstTIgv] [--socket PATH] [-json]
       rds-info --transport kernel [-cknrstTIv]

Prints the RDS sockets, connections, message queues, transport connections,
congestion state and counters of the running RDS tools (each serves them on
a unix socket, see --info-socket in their -h), or of the host kernel with
--transport kernel. The tools keep counts of queued messages per path, not
the messages themselves, so their -s, -t and -r tables count messages and
bytes where the kernel's list each message.`

type options struct {
	sockets, conns, cong, counters bool
	sendQ, retransQ, recvQ         bool
	tcp, ib                        bool
	verbose                        int
	socket                         string
	rdsd                           string
	json                           bool
	transport                      string
	log                            string
	timeout                        time.Duration
}

func main() {
	t := tool(os.Stdout, os.Stderr)
	os.Exit(rdstool.Run(t, splitLetters(os.Args[1:]), os.Stdout, os.Stderr))
}

// tableLetters are the one-letter flags getopt lets a user combine.
const tableLetters = "cknrstTIgv"

// splitLetters expands "-kn" into "-k" "-n", as getopt reads it, for
// arguments made only of table letters; "--" ends the flags.
func splitLetters(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], tableLetters) == "" {
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func tool(stdout, stderr io.Writer) rdstool.Tool {
	o := &options{}
	fs := rdstool.NewFlagSet("rds-info")
	fs.BoolVar(&o.sockets, "k", false, "sockets: bound address, transport, buffers, queued bytes, congestion")
	fs.BoolVar(&o.conns, "n", false, "connections: addresses, transport, paths with next sequence numbers and queues")
	fs.BoolVar(&o.cong, "g", false, "congestion: the ports each node marks congested, and each peer's")
	fs.BoolVar(&o.counters, "c", false, "counters, named as the kernel's rds-info -c names them")
	fs.BoolVar(&o.sendQ, "s", false, "send queue: messages waiting for transmission (tools: per path)")
	fs.BoolVar(&o.retransQ, "t", false, "retransmit queue: messages sent and not yet acknowledged (tools: per path)")
	fs.BoolVar(&o.recvQ, "r", false, "receive queue: messages waiting to be read (tools: bytes per socket)")
	fs.BoolVar(&o.tcp, "T", false, "TCP transport connections (rds_tcp; tools: connections of the tcp transport)")
	fs.BoolVar(&o.ib, "I", false, "RDMA transport connections (rds_rdma; tools: connections of the dat transport)")
	fs.BoolFunc("v", "verbose: -I adds queue and MR limits (kernel) or message counts (tools); repeatable", func(string) error {
		o.verbose++
		return nil
	})
	fs.StringVar(&o.socket, "socket", "", "read this info socket only (default: every *.sock in $"+rdstool.InfoDirEnv+
		",\nelse "+rdstool.DefaultInfoDir+")")
	fs.StringVar(&o.rdsd, "rdsd", os.Getenv(rdsoverdat.DaemonEnv),
		"read the host's state from the rdsd daemon listening on this unix socket (default $"+rdsoverdat.DaemonEnv+")")
	fs.BoolVar(&o.json, "json", false, "print what the tools served, as JSON")
	fs.StringVar(&o.transport, "transport", "", "kernel: read the host kernel's RDS_INFO tables instead of the tools'")
	fs.StringVar(&o.log, "log", "", "log level (default $"+rdstool.LogEnv+", else "+rdstool.DefaultLogLevel+")")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "how long to wait for each tool's answer")
	return rdstool.Tool{Name: "rds-info", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			return o.run(args, stdout, stderr)
		}}
}

func (o *options) run(args []string, stdout, stderr io.Writer) error {
	if len(args) != 0 {
		return rdstool.Usagef("unexpected argument %q", args[0])
	}
	if o.timeout <= 0 {
		return rdstool.Usagef("--timeout must be positive")
	}
	log, err := rdstool.Logger(o.log, stderr)
	if err != nil {
		return err
	}
	if !o.sockets && !o.conns && !o.cong && !o.counters && !o.sendQ && !o.retransQ && !o.recvQ && !o.tcp && !o.ib {
		o.sockets, o.conns, o.cong, o.counters = true, true, true, true
		o.sendQ, o.retransQ, o.recvQ, o.tcp, o.ib = true, true, true, true, true
	}
	switch o.transport {
	case "":
	case rdstool.TransportKernel:
		if o.socket != "" {
			return rdstool.Usagef("--socket and --transport kernel exclude each other")
		}
		doc, kt, err := o.kernelDocument()
		if err != nil {
			return err
		}
		return o.print(stdout, []source{{name: "kernel", doc: doc, kernel: &kt}})
	default:
		return rdstool.Usagef("--transport %q: rds-info reads the tools' state, or the kernel's with --transport kernel",
			o.transport)
	}

	if o.rdsd != "" && o.socket == "" {
		st := rdsoverdat.NewStack(rdsoverdat.Config{Daemon: o.rdsd})
		defer st.Close()
		info, err := st.DaemonInfo()
		if err != nil {
			return fmt.Errorf("no rdsd answers on %s: %w", o.rdsd, err)
		}
		return o.print(stdout, []source{{name: o.rdsd, doc: rdstool.Document{Tool: "rdsd", Stacks: []rdsoverdat.Info{info}}}})
	}
	if o.socket != "" {
		doc, err := rdstool.ReadInfo(o.socket, o.timeout)
		if err != nil {
			return fmt.Errorf("no RDS tool answers on %s: %w", o.socket, err)
		}
		return o.print(stdout, []source{{name: o.socket, doc: doc}})
	}
	dir := rdstool.InfoDir()
	paths, err := rdstool.InfoSockets(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var srcs []source
	for _, p := range paths {
		doc, err := rdstool.ReadInfo(p, o.timeout)
		if err != nil {
			// A socket left by a tool that was killed: nobody answers.
			if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, os.ErrNotExist) {
				log.Debug().Str("path", p).Msg("stale info socket")
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				log.Warn().Str("path", p).Msg("no answer")
				continue
			}
			return err
		}
		srcs = append(srcs, source{name: p, doc: doc})
	}
	if len(srcs) == 0 {
		// As the real tool on a host with no RDS traffic: empty tables.
		log.Info().Str("dir", dir).Msg("no running RDS tool serves its state here (tools do unless started with --info-socket none)")
	}
	return o.print(stdout, srcs)
}
