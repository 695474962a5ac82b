package rping

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Default bounds of the waits rping.c leaves unbounded.
const (
	// DefaultConnectTimeout bounds Connect: rping's 2 s for address and
	// route resolution plus siw's 10 s wait for the MPA Reply.
	DefaultConnectTimeout = 12 * time.Second
	// DefaultStepTimeout bounds each wait for a completion within a ping
	// and, on the server, for the next ping. A kernel peer in the lab VM
	// answers within milliseconds even under emulation.
	DefaultStepTimeout = 10 * time.Second
	// disconnectGrace bounds how long a side that saw its work flushed
	// waits for the connection to report its end.
	disconnectGrace = 5 * time.Second
	// wcErrorGrace is how long a failed completion waits to see whether
	// the connection is ending anyway (see failedWC).
	wcErrorGrace = time.Second
)

// Config is what rping's options set, plus where output goes.
type Config struct {
	Size     int  // -S: ping size in bytes, MinSize..MaxSize
	Count    int  // -C: pings the client sends; 0 runs until the server goes away or ctx ends. The server ignores it, as rping's does
	Verbose  bool // -v: print each ping's data
	Validate bool // -V: the client compares what came back with what it sent
	Debug    bool // -d: rping's debug lines
	// SelfQP (-q) mirrors rping's "self-created, self-modified QP": the
	// server accepts with IRD and ORD 1 (rping's conn_param) instead of the
	// request's values, and both sides move their QP to ERROR themselves
	// before disconnecting, which aborts the stream instead of closing it.
	SelfQP bool
	// LocalAddr (-I) binds the client's side of the connection.
	LocalAddr string

	// ConnectTimeout and StepTimeout override the defaults above.
	ConnectTimeout time.Duration
	StepTimeout    time.Duration

	// Stdout receives ping data (-v) and debug lines (-d), Stderr the
	// DISCONNECT EVENT notices; nil discards. Each line is written with one
	// Write, and lines of concurrent connections never interleave.
	Stdout, Stderr io.Writer
}

// check validates the options the way rping's option parser does.
func (c *Config) check() error {
	if c.Size < MinSize || c.Size > MaxSize {
		return fmt.Errorf("Invalid size %d (valid range is %d to %d)", c.Size, MinSize, MaxSize)
	}
	if c.Count < 0 {
		return fmt.Errorf("Invalid count %d", c.Count)
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = DefaultStepTimeout
	}
	return c
}

// printer writes whole lines to an optional writer, one Write per line,
// serialized across the connections of a persistent server.
type printer struct {
	mu  *sync.Mutex
	w   io.Writer
	buf []byte
}

func newPrinter(mu *sync.Mutex, w io.Writer) *printer { return &printer{mu: mu, w: w} }

func (p *printer) printf(format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = fmt.Appendf(p.buf[:0], format, args...)
	p.w.Write(p.buf)
}

// line writes prefix, data and a newline: printf("%s%s\n") without
// formatting the data.
func (p *printer) line(prefix string, data []byte) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(append(append(p.buf[:0], prefix...), data...), '\n')
	p.w.Write(p.buf)
}

// output is the pair of printers of one run.
type output struct {
	out, err *printer // stdout, stderr
	debug    bool
}

func newOutput(cfg *Config) *output {
	var mu sync.Mutex // one lock: stdout and stderr often are one terminal
	return &output{out: newPrinter(&mu, cfg.Stdout), err: newPrinter(&mu, cfg.Stderr), debug: cfg.Debug}
}

// debugf prints one of rping's DEBUG_LOG lines (on stdout, as rping does).
func (o *output) debugf(format string, args ...any) {
	if o.debug {
		o.out.printf(format, args...)
	}
}
