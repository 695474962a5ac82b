// Command dattest exercises a DAT provider the way dapl2-utils' dapltest
// does, with dapltest's letters and meanings: a server (-T S) that any
// number of clients use, a transaction test (-T T: -t threads of -w EPs
// each, running -i iterations of an operation list such as
// "client RW 4096 client RR 4096 client SR 4096 server SR 4096", every
// byte checked), a performance test (-T P: one EP, a pipeline of -p RDMA
// Writes, RDMA Reads or echoed Sends, "RW 65536" style, reporting ops/s,
// MB/s and latency), a limit test (-T L: EPs, EVD length and LMR size
// raised until the provider refuses, -m the most EPs) and -T Q, which
// tells a server to quit. -D names the provider (the device), -n the
// server's port, -s the server, -d turns debugging on, -R the service
// level (best effort only here), -P and -m p reap by polling.
//
// Clients name the server with -s; without it they start a server in
// their own process on a second IA of the same provider, which is how
// the in-memory provider "mem" is tested. Run dattest -h for the flags.
// Options of this tool alone take long names or letters dapltest does
// not use (-S size, -o operation, -json).
//
// Exit status: 0 the test passed, 1 it failed or was interrupted (the
// reason is one line on stderr; what was measured is printed, marked
// "interrupted"), 2 the command line is wrong.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

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

// DefaultPort is the server's connection qualifier unless -n says
// otherwise (dapltest's SERVER_PORT_NUMBER).
const DefaultPort = 62000

// errInterrupted is what a test cut short by SIGINT or SIGTERM returns
// after printing what it measured: the run did not do what it promised.
var errInterrupted = errors.New("interrupted")

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
	if ctx.Err() != nil && o.mode != "S" {
		// A test that an interrupt ended early did not do all it was asked.
		fmt.Fprintln(stderr, "dattest: interrupted")
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
		err := serve(ctx, cli, dat.ConnQual(o.port), log, func(q dat.ConnQual) {
			fmt.Fprintf(stdout, "dattest server: %s listening on %v port %d\n", o.provider, cli.Addr(), q)
		})
		if err == nil && ctx.Err() == nil {
			fmt.Fprintln(stdout, "dattest server: quit requested")
		}
		return err
	case "L":
		return runLimits(cli, limitConfig{maxEPs: o.maxEPs, maxQLen: o.maxQLen, maxLMR: o.maxLMR}, stdout)
	case "Q":
		if err := quitServer(ctx, cli, o.server, dat.ConnQual(o.port), o.timeout); err != nil {
			return fmt.Errorf("quit %v port %d: %w", o.server, o.port, err)
		}
		fmt.Fprintf(stdout, "dattest: the server at %v port %d quits\n", o.server, o.port)
		return nil
	}

	addr, qual := o.server, dat.ConnQual(o.port)
	if !addr.IsValid() {
		// No server named: serve from a second IA of this process.
		srvIA, err := ia.Open(o.provider)
		if err != nil {
			return fmt.Errorf("open %q for the in-process server: %w", o.provider, err)
		}
		defer srvIA.Close(dat.CloseAbrupt)
		// The server outlives an interrupt until the client is done.
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
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
		c := txnConfig{threads: o.threads, eps: o.eps, iters: o.iters, ops: o.ops, poll: o.poll, timeout: o.timeout,
			json: o.json, progress: stdout}
		if o.json {
			c.progress = o.stderr
		}
		return runTransaction(ctx, cli, addr, qual, c, stdout)
	default: // "P"
		c := perfConfig{op: o.op, iters: o.iters, size: o.size, depth: o.depth, segs: o.segs, poll: o.poll, timeout: o.timeout,
			progress: stdout}
		if o.json {
			c.progress = o.stderr
		}
		r, err := runPerf(ctx, cli, addr, qual, c)
		if err != nil {
			return err
		}
		if o.json {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r.json(c)); err != nil {
				return err
			}
		} else {
			r.print(stdout, c)
		}
		if r.interrupted {
			return errInterrupted
		}
		return nil
	}
}
