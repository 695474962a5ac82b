package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// cat is one run's socket and output.
type cat struct {
	o      *options
	s      *rdsoverdat.Socket
	kernel bool      // s is a kernel socket (Config.Kernel)
	out    io.Writer // a syncWriter: the sender and its reply printer share it
	errOut io.Writer
	buf    []byte
	sent   int // datagrams sent
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// recv receives the next datagram, skipping congestion notifications.
func (c *cat) recv() (rdsoverdat.Msg, int, error) {
	for {
		m := rdsoverdat.Msg{Data: c.buf}
		n, err := c.s.RecvMsg(&m, 0)
		if err != nil || len(m.Control) == 0 {
			return m, n, err
		}
	}
}

// print writes a received datagram: the payload on its own line, or a
// "recv from" line when verbose.
func (c *cat) print(m rdsoverdat.Msg, n int, verbose bool) {
	p := m.Data[:n]
	if verbose {
		fmt.Fprintf(c.out, "recv from %v len %d: %q\n", m.Addr, n, abbrev(p))
		return
	}
	if n > 0 && p[n-1] == '\n' {
		p = p[:n-1]
	}
	fmt.Fprintf(c.out, "%s\n", p)
}

// listen prints (and with --echo returns) datagrams until interrupted,
// --timeout (a normal end) or --count datagrams.
func (c *cat) listen(ctx context.Context) error {
	if c.o.timeout > 0 {
		c.s.SetReadDeadline(time.Now().Add(c.o.timeout))
	}
	for got := 0; c.o.count == 0 || got < c.o.count; got++ {
		m, n, err := c.recv()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if c.o.count > 0 {
				return fmt.Errorf("%d of %d datagrams received within %v", got, c.o.count, c.o.timeout)
			}
			return nil
		case err != nil:
			return err
		}
		c.print(m, n, c.o.verbose || c.o.echo)
		if c.o.echo {
			if _, err := c.s.SendTo(m.Data[:n], m.Addr, 0); err != nil {
				return fmt.Errorf("echo to %v: %w", m.Addr, err)
			}
		}
	}
	if c.o.echo {
		return c.drain(ctx)
	}
	return nil
}

func abbrev(b []byte) string {
	if len(b) > 48 {
		return string(b[:48]) + "..."
	}
	return string(b)
}
