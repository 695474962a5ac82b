// Command rds-info prints the RDS state of running nodes: sockets,
// connections, congestion and counters, in tables like rds-tools'
// rds-info.
//
//	rds-info [-k] [-n] [-g] [-c] [--socket PATH] [-json]
//	rds-info --transport kernel [-k] [-n] [-c]
//
// rdsoverdat's RDS state lives in the process that runs it, so every RDS
// tool serves its state on a unix socket (--info-socket, by default
// /run/godapl/TOOL-PID.sock) and rds-info reads it: every socket of that
// directory, or the one --socket names. With --transport kernel it reads
// the host kernel's own tables through getsockopt(RDS_INFO_*), as
// rds-tools' rds-info does. With no table flags it prints every table.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
)

const synopsis = `usage: rds-info [-k] [-n] [-g] [-c] [--socket PATH] [-json]
       rds-info --transport kernel [-k] [-n] [-c]

Prints the RDS sockets, connections, congestion state and counters of the
running RDS tools (each serves them on a unix socket, see --info-socket in
their -h), or of the host kernel with --transport kernel.`

type options struct {
	sockets, conns, cong, counters bool
	socket                         string
	json                           bool
	transport                      string
	log                            string
	timeout                        time.Duration
}

func main() {
	rdstool.Main(tool(os.Stdout, os.Stderr))
}

func tool(stdout, stderr io.Writer) rdstool.Tool {
	o := &options{}
	fs := rdstool.NewFlagSet("rds-info")
	fs.BoolVar(&o.sockets, "k", false, "sockets: bound address, transport, buffers, queued bytes, congestion")
	fs.BoolVar(&o.conns, "n", false, "connections: addresses, transport, paths with next sequence numbers and queues")
	fs.BoolVar(&o.cong, "g", false, "congestion: the ports each node marks congested, and each peer's")
	fs.BoolVar(&o.counters, "c", false, "counters, named as the kernel's rds-info -c names them")
	fs.StringVar(&o.socket, "socket", "", "read this info socket only (default: every *.sock in $"+rdstool.InfoDirEnv+
		",\nelse "+rdstool.DefaultInfoDir+")")
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
	if !o.sockets && !o.conns && !o.cong && !o.counters {
		o.sockets, o.conns, o.cong, o.counters = true, true, true, true
	}
	switch o.transport {
	case "":
	case rdstool.TransportKernel:
		if o.socket != "" {
			return rdstool.Usagef("--socket and --transport kernel exclude each other")
		}
		doc, err := kernelDocument()
		if err != nil {
			return err
		}
		return o.print(stdout, []source{{name: "kernel", doc: doc}})
	default:
		return rdstool.Usagef("--transport %q: rds-info reads the tools' state, or the kernel's with --transport kernel",
			o.transport)
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
		return fmt.Errorf("no running RDS tool serves its state in %s (tools serve it unless started with --info-socket none)", dir)
	}
	return o.print(stdout, srcs)
}
