// Command rping is rdma-core's rping on godapl: the same options, the same
// protocol and output, over the pure-Go soft-iWARP provider, so that it
// pings the kernel's rping over siw and the kernel's rping pings it.
//
// main only parses the options and opens the device; the protocol is in
// internal/rping. Run rping -h for the options.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/cmd/rping/internal/rping"
	"github.com/godapl/godapl/internal/version"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, openDevice)
	stop()
	os.Exit(code)
}

// opener opens the device rping runs on; tests pass one of the in-memory
// provider.
type opener func(o *options, stderr io.Writer) (verbs.Device, error)

// openDevice opens the device of --provider: siw's, or the rdma-core
// device rdma_cm uses for -a.
func openDevice(o *options, stderr io.Writer) (verbs.Device, error) {
	if o.provider == "rdmacore" {
		addr := o.addr
		if addr == "" {
			addr = "0.0.0.0"
		}
		return openRdmacore(addr)
	}
	return openSiw(o, stderr)
}

// openSiw opens the siw device that spans every local address. -d also
// turns on the provider's connection log.
func openSiw(o *options, stderr io.Writer) (verbs.Device, error) {
	var opts siw.Options
	if o.cfg.Debug {
		opts.Logger = zerolog.New(zerolog.ConsoleWriter{Out: stderr}).With().Timestamp().Logger()
	}
	return siw.New(opts).Open(siw.DeviceName)
}

// run is rping without the process around it, returning the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, open opener) int {
	if version.Requested(args) {
		version.Print(stdout, "rping")
		return exitOK
	}
	o, err := parseOptions(ctx, args, stderr)
	switch {
	case err == errUsage: // the bad values are already reported
		return exitInvalid
	case err != nil:
		fmt.Fprintf(stderr, "rping: %v\n", err)
		fmt.Fprint(stdout, usageText)
		return exitInvalid
	case o.help:
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	o.cfg.Stdout, o.cfg.Stderr = stdout, stderr
	dev, err := open(o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "rping: open device: %s\n", oneLine(err))
		return exitFailed
	}
	defer dev.Close()

	side := "client"
	if o.server {
		side = "server"
		err = serve(ctx, dev, o)
	} else {
		err = rping.Client(ctx, dev, o.serverAddr(), o.cfg)
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// Stopped by a signal: the normal end of a run without an end.
		if o.persistent || (!o.server && o.cfg.Count == 0) {
			return exitOK
		}
		fmt.Fprintf(stderr, "rping %s interrupted\n", side)
		return exitFailed
	}
	fmt.Fprintf(stderr, "rping %s failed: %s\n", side, oneLine(err))
	return exitFailed
}

// oneLine renders err on one line: joined errors (errors.Join) print one
// per line, and a failure should be a single line, as rping's are.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// serve listens as rping_bind_server does and runs the server.
func serve(ctx context.Context, dev verbs.Device, o *options) error {
	l, err := dev.Listen(o.listenAddr(), rping.Backlog)
	if err != nil {
		return fmt.Errorf("rdma_bind_addr: %w", err)
	}
	defer l.Close()
	if o.cfg.Debug {
		fmt.Fprintf(o.cfg.Stdout, "rdma_listen on %s\n", l.Addr())
	}
	if o.persistent {
		return rping.ServePersistent(ctx, dev, l, o.cfg)
	}
	return rping.Serve(ctx, dev, l, o.cfg)
}
