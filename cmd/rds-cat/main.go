// Command rds-cat is netcat for RDS: the simplest way for a person or a
// script to talk to any RDS peer, the Linux kernel included.
//
//	rds-cat -l -b ADDR:PORT [--echo] [--count N] [-v]   print (and echo) each datagram received
//	rds-cat [-b ADDR:PORT] DEST:PORT [-f FILE]          send each line of stdin (or FILE) as one datagram
//	rds-cat [-b ADDR:PORT] DEST:PORT --size N --count M send M generated N-byte datagrams
//	rds-cat -b ADDR:PORT --ping ADDR --count N          ping a node (rds-ping is the full tool)
//
// Listening, it prints each datagram's payload on its own line (-v: a
// "recv from ADDR len N: ..." line instead); with --echo it sends every
// datagram back to its sender unchanged and prints the "recv from" line.
// Sending, it strips each line's newline, prints what comes back while it
// waits, and exits once the peer has acknowledged every datagram (an RDS
// socket that closes drops what is unacknowledged) or fails when that
// takes longer than --timeout: an unreachable peer is an error, not a
// hang. Every run also answers pings on its node while it lasts.
//
// Interrupted, a sender stops sending, waits (at most --timeout) for the
// acknowledgement of what it sent, says on stderr how many datagrams went
// out and whether all were acknowledged, and exits 0 only if they were;
// a listener's interrupt is its normal end.
package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

const synopsis = `usage: rds-cat -l -b ADDR:PORT [--echo] [--count N]   print (and echo) datagrams received
       rds-cat [-b ADDR:PORT] DEST:PORT [-f FILE]         send each line of stdin or FILE as a datagram
       rds-cat [-b ADDR:PORT] DEST:PORT --size N --count M  send M generated N-byte datagrams
       rds-cat -b ADDR:PORT --ping ADDR [--count N]        ping a node (port 0)

netcat for RDS: reliable datagrams to and from any RDS node, the Linux kernel's included.`

// options is rds-cat's command line.
type options struct {
	common  rdstool.Common
	listen  bool
	bind    string
	echo    bool
	file    string
	size    int
	count   int
	ping    string
	timeout time.Duration
	wait    time.Duration
	verbose bool
	sndbuf  int
}

func main() {
	rdstool.Main(tool(os.Stdin, os.Stdout, os.Stderr))
}

func tool(stdin io.Reader, stdout, stderr io.Writer) rdstool.Tool {
	o := &options{}
	fs := rdstool.NewFlagSet("rds-cat")
	o.common.Register(fs, "rds-cat")
	fs.BoolVar(&o.listen, "l", false, "listen: print each datagram received on -b until interrupted, --timeout or --count")
	fs.StringVar(&o.bind, "b", "", "local RDS address ADDR:PORT (required with -l; default for sending: the\n"+
		"address the host routes to DEST from, a free port)")
	fs.StringVar(&o.bind, "bind", "", "same as -b")
	fs.BoolVar(&o.echo, "echo", false, "listen and send every datagram back to its sender unchanged")
	fs.StringVar(&o.file, "f", "", "send the lines of this file instead of standard input")
	fs.IntVar(&o.size, "size", -1, "send generated payloads of this many bytes (0-1048576) instead of lines")
	fs.IntVar(&o.count, "count", 0, "generated payloads to send (default 1); listening or pinging: stop after\n"+
		"this many datagrams or pongs (0: no limit; pinging: 1)")
	fs.StringVar(&o.ping, "ping", "", "ping this node's port 0 --count times, printing a line per pong")
	fs.DurationVar(&o.timeout, "timeout", 0, "listening: stop after this long (a normal end); sending and pinging:\n"+
		"fail if the peer has not acknowledged or answered within it (default 10s)")
	fs.DurationVar(&o.wait, "wait", 0, "sending: after the last datagram is acknowledged, keep printing replies this long")
	fs.BoolVar(&o.verbose, "v", false, "print a line per datagram sent and a \"recv from\" line per datagram received")
	fs.IntVar(&o.sndbuf, "sndbuf", 4<<20, "SO_SNDBUF and SO_RCVBUF in bytes")
	return rdstool.Tool{Name: "rds-cat", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			return o.run(ctx, args, stdin, stdout, stderr)
		}}
}

func (o *options) run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	mode, dst, err := o.check(args)
	if err != nil {
		return err
	}
	if err := o.common.Setup(stderr); err != nil {
		return err
	}
	st, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	local, err := o.local(mode, dst)
	if err != nil {
		return err
	}
	s, err := rdstool.Bind(st, local, o.sndbuf, o.sndbuf)
	if err != nil {
		return err
	}
	info, err := o.common.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	c := &cat{o: o, s: s, kernel: st.Kernel(), out: &syncWriter{w: stdout}, errOut: stderr, buf: make([]byte, wire.MaxMsgSize+1)}
	if mode == modeSend {
		// An interrupt stops the sending (a send blocked for room fails
		// at once) but keeps the socket, so that what was sent can still
		// be acknowledged before rds-cat says whether it was.
		defer context.AfterFunc(ctx, func() { s.SetWriteDeadline(time.Unix(1, 0)) })()
	} else {
		// An interrupt closes the socket, which ends any blocked call.
		defer context.AfterFunc(ctx, func() { s.Close() })()
	}
	switch mode {
	case modeListen:
		err := c.listen(ctx)
		rdstool.Linger(ctx, st) // let the transport acknowledge the last datagrams
		return err
	case modePing:
		return c.pingLoop(ctx, dst.Addr())
	default:
		return c.send(ctx, stdin, dst)
	}
}
