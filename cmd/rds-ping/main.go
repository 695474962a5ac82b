// Command rds-ping checks that an RDS node answers and how long it takes,
// like rds-tools' rds-ping: it sends 0-byte messages to RDS port 0 of the
// destination, which every RDS node (the Linux kernel's, or any process
// running rdsoverdat) answers with a 0-byte pong, and prints each round
// trip.
//
//	rds-ping [-c count] [-i interval] [-I local-address] [-W timeout] [-json] [--transport dat|tcp|kernel] ADDRESS
//
// -i takes seconds, or a number with msec or usec, as the real tool; the
// addresses may be host names. It prints "  N: T usec" per reply and a
// summary (-json: the summary and every round trip as JSON), and, as
// ping does, exits 0 only if at least one reply came back (1 otherwise,
// 2 for a bad command line), interrupted or not.
// A ping that is not answered within -W counts as lost; its socket is
// replaced so that a late pong is never taken for the next one's.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

const synopsis = `usage: rds-ping [flags] ADDRESS

Sends 0-byte RDS messages to port 0 of ADDRESS, which any RDS node answers
with a 0-byte pong, and prints each round trip in microseconds.`

func main() {
	rdstool.Main(tool(os.Stdout, os.Stderr))
}

func tool(stdout, stderr io.Writer) rdstool.Tool {
	var c rdstool.Common
	fs := rdstool.NewFlagSet("rds-ping")
	c.Register(fs, "rds-ping")
	count := fs.Int("c", 0, "stop after this many pings (0: until interrupted)")
	interval := fs.String("i", "1", "time between pings: seconds (\"0.2\"), or with msec or usec (\"200msec\")")
	local := fs.String("I", "", "local address or host name to ping from (default: the address the host routes\n"+
		"to ADDRESS from)")
	timeout := fs.Duration("W", 2*time.Second, "how long to wait for each reply before counting it lost")
	tos := fs.Int("Q", 0, "type of service: only 0 here (one connection per pair of addresses)")
	asJSON := fs.Bool("json", false, "print the summary and every round trip as JSON instead of lines")
	return rdstool.Tool{Name: "rds-ping", Synopsis: synopsis, Flags: fs,
		Run: func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return rdstool.Usagef("want one destination address, got %d arguments", len(args))
			}
			ival, err := rdstool.ParseInterval("-i", *interval)
			if err != nil {
				return err
			}
			if *count < 0 || *timeout <= 0 {
				return rdstool.Usagef("-c must be >= 0 and -W > 0")
			}
			if *tos != 0 {
				return rdstool.Usagef("-Q %d: only type of service 0 here (rdsoverdat keeps one connection per pair of addresses)", *tos)
			}
			dst, err := rdstool.ResolveAddr(ctx, "destination", args[0])
			if err != nil {
				return err
			}
			if err := c.Setup(stderr); err != nil {
				return err
			}
			var src netip.Addr
			if *local != "" {
				if src, err = rdstool.ResolveAddr(ctx, "-I", *local); err != nil {
					return err
				}
			} else if src, err = rdstool.SourceFor(dst); err != nil {
				return err
			}
			p := &pinger{c: &c, dst: dst, src: src, count: *count, interval: ival, timeout: *timeout, out: stdout, json: *asJSON}
			if p.json {
				p.out = io.Discard
			}
			err = p.run(ctx)
			if p.json && (p.sent > 0 || err == nil) {
				if jerr := p.writeJSON(stdout, ctx.Err() != nil); jerr != nil {
					return jerr
				}
			}
			return err
		}}
}

type pinger struct {
	c        *rdstool.Common
	dst, src netip.Addr
	count    int
	interval time.Duration
	timeout  time.Duration
	out      io.Writer
	json     bool

	sent, received int
	min, max, sum  time.Duration
	rtts           []time.Duration // -json: every round trip, -1 for a lost ping
	interrupted    bool
}

func (p *pinger) run(ctx context.Context) error {
	st, err := p.c.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	s, err := rdstool.Bind(st, netip.AddrPortFrom(p.src, 0), 0, 0)
	if err != nil {
		return err
	}
	info, err := p.c.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	// An interrupt closes the stack, which ends any blocked receive.
	defer context.AfterFunc(ctx, func() { st.Close() })()

	buf := make([]byte, 64)
	for seq := 1; p.count == 0 || seq <= p.count; seq++ {
		t0 := time.Now()
		p.sent++
		rtt, err := p.ping(s, buf, t0)
		switch {
		case ctx.Err() != nil:
			// The ping went out; its reply did not come back in time.
			p.rtts = append(p.rtts, -1)
			return p.summary(ctx)
		case errors.Is(err, os.ErrDeadlineExceeded):
			p.rtts = append(p.rtts, -1)
			fmt.Fprintf(p.out, "%4d: no reply within %v\n", seq, p.timeout)
			// A late pong must not answer the next ping: new socket.
			s.Close()
			if s, err = rdstool.Bind(st, netip.AddrPortFrom(p.src, 0), 0, 0); err != nil {
				return err
			}
		case err != nil:
			p.rtts = append(p.rtts, -1)
			fmt.Fprintf(p.out, "%4d: ERROR: %v\n", seq, err)
		default:
			p.rtts = append(p.rtts, rtt)
			p.record(rtt)
			fmt.Fprintf(p.out, "%4d: %d usec\n", seq, rtt.Microseconds())
		}
		if p.count != 0 && seq == p.count {
			break
		}
		select {
		case <-ctx.Done():
			return p.summary(ctx)
		case <-time.After(time.Until(t0.Add(p.interval))):
		}
	}
	return p.summary(ctx)
}

// ping sends one ping and waits for its pong until t0 + timeout.
func (p *pinger) ping(s *rdsoverdat.Socket, buf []byte, t0 time.Time) (time.Duration, error) {
	s.SetDeadline(t0.Add(p.timeout))
	want := netip.AddrPortFrom(p.dst, 0)
	if _, err := s.SendTo(nil, want, 0); err != nil {
		return 0, err
	}
	for {
		m := rdsoverdat.Msg{Data: buf}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return 0, err
		}
		if len(m.Control) == 0 && n == 0 && m.Addr == want {
			return time.Since(t0), nil
		}
	}
}

func (p *pinger) record(rtt time.Duration) {
	if p.received == 0 || rtt < p.min {
		p.min = rtt
	}
	p.max = max(p.max, rtt)
	p.sum += rtt
	p.received++
}

func (p *pinger) summary(ctx context.Context) error {
	p.interrupted = ctx.Err() != nil
	loss := 0
	if p.sent > 0 {
		loss = 100 * (p.sent - p.received) / p.sent
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--- %v rds-ping: %d sent, %d received, %d%% lost", p.dst, p.sent, p.received, loss)
	if p.interrupted {
		b.WriteString(", interrupted")
	}
	if p.received > 0 {
		fmt.Fprintf(&b, ", rtt min/avg/max %d/%d/%d usec", p.min.Microseconds(),
			(p.sum / time.Duration(p.received)).Microseconds(), p.max.Microseconds())
	}
	fmt.Fprintln(p.out, b.String())
	if p.received == 0 {
		return fmt.Errorf("no reply from %v (from %v over %s)", p.dst, p.src, p.c.Transport)
	}
	return nil
}

// writeJSON prints the run as one JSON object.
func (p *pinger) writeJSON(w io.Writer, interrupted bool) error {
	type out struct {
		Destination string    `json:"destination"`
		Source      string    `json:"source"`
		Transport   string    `json:"transport"`
		Sent        int       `json:"sent"`
		Received    int       `json:"received"`
		LossPct     float64   `json:"loss_pct"`
		MinUS       float64   `json:"min_us"`
		AvgUS       float64   `json:"avg_us"`
		MaxUS       float64   `json:"max_us"`
		RTTsUS      []float64 `json:"rtts_us"` // one per ping, -1 when lost
		Interrupted bool      `json:"interrupted"`
	}
	o := out{Destination: p.dst.String(), Source: p.src.String(), Transport: p.c.Transport, Sent: p.sent,
		Received: p.received, RTTsUS: []float64{}, Interrupted: interrupted}
	if p.sent > 0 {
		o.LossPct = 100 * float64(p.sent-p.received) / float64(p.sent)
	}
	if p.received > 0 {
		o.MinUS, o.MaxUS = us(p.min), us(p.max)
		o.AvgUS = us(p.sum / time.Duration(p.received))
	}
	for _, r := range p.rtts {
		if r < 0 {
			o.RTTsUS = append(o.RTTsUS, -1)
		} else {
			o.RTTsUS = append(o.RTTsUS, us(r))
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }
