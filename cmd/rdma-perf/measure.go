package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/godapl/godapl/internal/perf"
	"github.com/godapl/godapl/verbs"
)

// measurement says how each case is run and where progress goes.
type measurement struct {
	dur      time.Duration
	iters    uint64
	noTCP    bool
	progress io.Writer // a line per finished case (nil: none)
}

// measure runs every case against the servers at raddr (RDMA) and taddr
// (TCP baseline). An interrupt ends it with the rows measured so far and
// interrupted set; any other failure is an error.
func (m measurement) measure(ctx context.Context, dev verbs.Device, raddr, taddr string, cases []testCase) (rows []row, interrupted bool, err error) {
	limit := m.dur + 30*time.Second
	if m.iters > 0 {
		limit = 10 * time.Minute // the iterations end it; this only bounds a stuck peer
	}
	for i, c := range cases {
		p := c.params
		p.Duration, p.Iters = m.dur, m.iters
		if m.iters > 0 {
			p.Duration = 0
		}
		tctx, cancel := context.WithTimeout(ctx, limit)
		r, err := perf.Run(tctx, dev, raddr, p)
		cancel()
		if ctx.Err() != nil {
			return rows, true, nil
		}
		if err != nil {
			return rows, false, fmt.Errorf("%s: %w", c.name, err)
		}
		rw := row{Name: c.name, RDMA: r}
		if !m.noTCP {
			tctx, cancel := context.WithTimeout(ctx, limit)
			rw.TCP, err = perf.RunTCP(tctx, taddr, p)
			cancel()
			if ctx.Err() != nil {
				return rows, true, nil
			}
			if err != nil {
				return rows, false, fmt.Errorf("%s (tcp): %w", c.name, err)
			}
		}
		rows = append(rows, rw)
		if m.progress != nil {
			for _, f := range figures(rw) {
				line := fmt.Sprintf("rdma-perf: [%d/%d] %s: %s %s", i+1, len(cases), f.Metric, num(f.RDMA), f.Unit)
				if f.TCP > 0 {
					line += fmt.Sprintf(" (raw TCP %s)", num(f.TCP))
				}
				fmt.Fprintln(m.progress, line)
			}
		}
	}
	return rows, false, nil
}

// measureAndReport runs o's cases and prints the report; an interrupted
// run prints what it measured and fails.
func (o *options) measureAndReport(ctx context.Context, dev verbs.Device, raddr, taddr, host string, stdout, stderr io.Writer) error {
	m := measurement{dur: o.dur, iters: o.pt.iters, noTCP: o.noTCP, progress: stderr}
	rows, interrupted, err := m.measure(ctx, dev, raddr, taddr, o.cases)
	if err != nil {
		return err
	}
	report(stdout, rows, o.provider, host, o.dur, o.pt.iters, o.asJSON, interrupted)
	if interrupted {
		return fmt.Errorf("interrupted after %d of %d measurements", len(rows), len(o.cases))
	}
	return nil
}
