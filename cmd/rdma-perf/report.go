package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/godapl/godapl/internal/perf"
)

// figure is one number of the report with its unit; higher is better
// unless lowerBetter.
type figure struct {
	Test        string  `json:"test"`
	Size        int     `json:"size"`
	Metric      string  `json:"metric"`
	Unit        string  `json:"unit"`
	RDMA        float64 `json:"rdma"`
	TCP         float64 `json:"tcp,omitempty"`
	Ratio       float64 `json:"ratio,omitempty"` // RDMA / TCP
	lowerBetter bool
}

func figures(r row) []figure {
	fs := figuresOf(r)
	for i := range fs {
		fs[i].Test, fs[i].Size = testName(r.RDMA.Test), r.RDMA.Size
	}
	return fs
}

func figuresOf(r row) []figure {
	switch r.RDMA.Test {
	case perf.TestWrite:
		f := figure{Metric: fmt.Sprintf("RDMA Write %s", sizeName(r.RDMA.Size)), Unit: "MB/s", RDMA: r.RDMA.MBps()}
		if r.TCP != nil {
			f.TCP = r.TCP.MBps()
		}
		return []figure{f}
	case perf.TestSendRate:
		f := figure{Metric: fmt.Sprintf("Send rate %s", sizeName(r.RDMA.Size)), Unit: "msg/s", RDMA: r.RDMA.Rate()}
		if r.TCP != nil {
			f.TCP = r.TCP.Rate()
		}
		return []figure{f}
	default:
		var out []figure
		for _, p := range []float64{50, 99} {
			f := figure{Metric: fmt.Sprintf("Round trip %s p%g", sizeName(r.RDMA.Size), p), Unit: "µs", RDMA: us(r.RDMA.Percentile(p)), lowerBetter: true}
			if r.TCP != nil {
				f.TCP = us(r.TCP.Percentile(p))
			}
			out = append(out, f)
		}
		return out
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func report(w io.Writer, rows []row, provider, addr string, d time.Duration, iters uint64, asJSON, interrupted bool) {
	var figs []figure
	for _, r := range rows {
		for _, f := range figures(r) {
			if f.TCP > 0 {
				f.Ratio = f.RDMA / f.TCP
			}
			figs = append(figs, f)
		}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if figs == nil {
			figs = []figure{}
		}
		out := map[string]any{"provider": provider, "address": addr, "results": figs, "interrupted": interrupted}
		if iters > 0 {
			out["iterations_per_test"] = iters
		} else {
			out["seconds_per_test"] = d.Seconds()
		}
		enc.Encode(out)
		return
	}
	per := fmt.Sprintf("%v per test", d)
	if iters > 0 {
		per = fmt.Sprintf("%d iterations per test", iters)
	}
	if interrupted {
		per += ", interrupted"
	}
	fmt.Fprintf(w, "rdma-perf: provider %s on %s, %s\n\n", provider, addr, per)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\tunit\tgodapl\traw TCP\tgodapl/TCP\t")
	for _, f := range figs {
		tcp, ratio := "-", "-"
		if f.TCP > 0 {
			tcp, ratio = num(f.TCP), fmt.Sprintf("%.2f", f.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", f.Metric, f.Unit, num(f.RDMA), tcp, ratio)
	}
	tw.Flush()
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
