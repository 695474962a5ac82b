package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
)

// interruptedDrain bounds the wait for acknowledgements after an
// interrupt (--timeout still applies when it is shorter).
const interruptedDrain = 2 * time.Second

// errStopped ends the sending loop on an interrupt.
var errStopped = errors.New("stopped")

// send sends the datagrams, prints replies while it waits for the peer's
// acknowledgements, and then for --wait.
func (c *cat) send(ctx context.Context, stdin io.Reader, dst netip.AddrPort) error {
	replies := c.startPrinter()
	defer replies.stop()
	c.s.SetWriteDeadline(time.Now().Add(c.o.timeout))
	sendOne := func(p []byte) error {
		if ctx.Err() != nil {
			return errStopped
		}
		if _, err := c.s.SendTo(p, dst, 0); err != nil {
			if ctx.Err() != nil {
				return errStopped
			}
			return fmt.Errorf("send to %v: %w", dst, err)
		}
		c.sent++
		if c.o.verbose {
			fmt.Fprintf(c.out, "sent %d bytes to %v\n", len(p), dst)
		}
		return nil
	}
	if c.o.size >= 0 {
		p := make([]byte, c.o.size)
		for i := range c.o.count {
			for j := range p {
				p[j] = byte('a' + (i+j)%26)
			}
			if err := sendOne(p); err != nil {
				if err == errStopped {
					break
				}
				return err
			}
		}
	} else {
		in := stdin
		if c.o.file != "" {
			f, err := os.Open(c.o.file)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		lines := readLines(in, len(c.buf))
	loop:
		for {
			select {
			case <-ctx.Done():
				break loop
			case l, ok := <-lines:
				if !ok {
					break loop
				}
				if l.err != nil {
					if ctx.Err() == nil {
						return fmt.Errorf("reading input: %w", l.err)
					}
					break loop
				}
				if err := sendOne(l.b); err != nil {
					if err == errStopped {
						break loop
					}
					return err
				}
			}
		}
	}
	// Interrupted or not, what was sent is waited for: the exit status
	// says whether it all arrived.
	var err error
	if ctx.Err() != nil {
		// The user wants out: wait for the acknowledgements briefly.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptedDrain)
		err = c.drain(dctx)
		cancel()
		if q, _ := c.s.Buffered(); err == nil && q > 0 {
			err = fmt.Errorf("%d bytes unacknowledged %v after the interrupt", q, interruptedDrain)
		}
	} else {
		err = c.drain(ctx)
	}
	if ctx.Err() != nil {
		if err != nil {
			return rdstool.Interruptedf("%d datagrams sent to %v, not all acknowledged: %v", c.sent, dst, err)
		}
		fmt.Fprintf(c.errOut, "rds-cat: interrupted: %d datagrams sent to %v, all acknowledged\n", c.sent, dst)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v: %w (is it reachable and running RDS over %s?)", dst, err, c.o.common.Transport)
	}
	if c.o.wait > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(c.o.wait):
		}
	}
	return replies.err()
}

// drain waits until the peer has acknowledged everything the socket sent,
// at most --timeout (default 10 s when listening): closing the socket
// earlier would drop it. A kernel socket does not report what is queued,
// so there the wait is a fixed 100 ms.
func (c *cat) drain(ctx context.Context) error {
	limit := c.o.timeout
	if limit == 0 {
		limit = defaultTimeout
	}
	if c.kernel {
		time.Sleep(100 * time.Millisecond)
		return nil
	}
	end := time.Now().Add(limit)
	for ctx.Err() == nil {
		queued, _ := c.s.Buffered()
		if queued == 0 {
			return nil
		}
		if time.Now().After(end) {
			return fmt.Errorf("no acknowledgement within %v, %d bytes outstanding", limit, queued)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// printer prints the datagrams that arrive while the sender runs.
type printer struct {
	c    *cat
	done chan struct{}
	e    error
}

func (c *cat) startPrinter() *printer {
	p := &printer{c: c, done: make(chan struct{})}
	go p.run()
	return p
}

func (p *printer) run() {
	defer close(p.done)
	for {
		m, n, err := p.c.recv()
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, net.ErrClosed) {
				p.e = err
			}
			return
		}
		p.c.print(m, n, p.c.o.verbose)
	}
}

// stop ends the printer: a read deadline in the past wakes it.
func (p *printer) stop() {
	p.c.s.SetReadDeadline(time.Unix(1, 0))
	<-p.done
}

func (p *printer) err() error {
	p.stop()
	return p.e
}

// line is one line of input, or the error that ended the input.
type line struct {
	b   []byte
	err error
}

// readLines reads lines of at most max bytes from in on a goroutine of
// its own, so that an interrupt need not wait for input that may never
// come: a read blocked on a terminal or pipe cannot be cancelled, and
// that goroutine ends with the process when the sender stops.
func readLines(in io.Reader, max int) <-chan line {
	ch := make(chan line)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), max)
		for sc.Scan() {
			ch <- line{b: bytes.Clone(sc.Bytes())}
		}
		if err := sc.Err(); err != nil {
			ch <- line{err: err}
		}
	}()
	return ch
}
