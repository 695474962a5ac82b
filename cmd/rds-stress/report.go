package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// reporter prints a progress line per interval from the tasks' counters
// (requests and answers per second, both directions' bytes, round-trip
// percentiles of the answers in that interval) and keeps the lines for
// the JSON result.
type reporter struct {
	c     *client
	out   io.Writer
	every time.Duration
	lines []interval

	stop chan struct{}
	done sync.WaitGroup
}

// interval is one progress line.
type interval struct {
	Sec     float64 `json:"t_s"`
	TxPerS  float64 `json:"tx_per_s"`
	RxPerS  float64 `json:"rx_per_s"`
	MBPerS  float64 `json:"mb_per_s"`
	P50US   float64 `json:"p50_us"`
	P99US   float64 `json:"p99_us"`
	P999US  float64 `json:"p999_us"`
	Answers uint64  `json:"answers"`
	// RDMAMBPerS counts the bytes moved by RDMA for answered requests.
	RDMAMBPerS float64 `json:"rdma_mb_per_s,omitempty"`
}

// snap is the sum of every task's counters at one instant.
type snap struct {
	at         time.Time
	reqs, acks uint64
	txB, rxB   uint64
	rdmaB      uint64
	lat        counts
}

func (c *client) snapshot() *snap {
	s := &snap{at: time.Now()}
	var tc counts
	for _, t := range c.tasks {
		s.reqs += t.reqs.Load()
		s.acks += t.acks.Load()
		s.txB += t.txB.Load()
		s.rxB += t.rxB.Load()
		s.rdmaB += t.rdmaB.Load()
		t.lat.snapshot(&tc)
		s.lat.add(&tc)
	}
	return s
}

const progressHeader = "   sec  tsks      tx/s      rx/s   tx+rx MB/s   p50 us   p99 us  p99.9 us"

func (r *reporter) start() {
	r.stop = make(chan struct{})
	r.done.Add(1)
	go r.run()
}

func (r *reporter) run() {
	defer r.done.Done()
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	rdma := r.c.p.rdma != rdmaNone
	if rdma {
		fmt.Fprintln(r.out, progressHeader+"  rdma MB/s")
	} else {
		fmt.Fprintln(r.out, progressHeader)
	}
	prev := r.c.snapshot()
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		cur := r.c.snapshot()
		dt := cur.at.Sub(prev.at).Seconds()
		lat := cur.lat
		lat.sub(&prev.lat)
		iv := interval{
			Sec:     cur.at.Sub(r.c.t0).Seconds(),
			TxPerS:  float64(cur.reqs-prev.reqs) / dt,
			RxPerS:  float64(cur.acks-prev.acks) / dt,
			MBPerS:  float64(cur.txB-prev.txB+cur.rxB-prev.rxB) / dt / 1e6,
			P50US:   us(lat.quantile(0.5)),
			P99US:   us(lat.quantile(0.99)),
			P999US:  us(lat.quantile(0.999)),
			Answers: lat.total(),
		}
		if rdma {
			iv.RDMAMBPerS = float64(cur.rdmaB-prev.rdmaB) / dt / 1e6
		}
		r.lines = append(r.lines, iv)
		line := fmt.Sprintf("%6.0f %5d %9.0f %9.0f %12.2f %8.1f %8.1f %9.1f", iv.Sec, len(r.c.tasks),
			iv.TxPerS, iv.RxPerS, iv.MBPerS, iv.P50US, iv.P99US, iv.P999US)
		if rdma {
			line += fmt.Sprintf(" %10.2f", iv.RDMAMBPerS)
		}
		fmt.Fprintln(r.out, line)
		prev = cur
	}
}

func (r *reporter) finish() {
	close(r.stop)
	r.done.Wait()
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// result is the run's outcome, printed as a table or as JSON.
type result struct {
	Transport string      `json:"transport"`
	Local     string      `json:"local"`
	Server    string      `json:"server"`
	Mode      string      `json:"mode"` // "request-response" or "one-way"
	RDMA      string      `json:"rdma,omitempty"`
	RDMASize  int         `json:"rdma_size,omitempty"`
	Tasks     int         `json:"tasks"`
	Depth     int         `json:"depth"`
	Seconds   float64     `json:"seconds"`
	PerTask   []taskStats `json:"per_task"`
	Total     taskStats   `json:"total"`
	Histogram []pow2Bin   `json:"histogram_us"`
	Intervals []interval  `json:"intervals"`
	Error     string      `json:"error,omitempty"`
}

// taskStats is one row of the final table.
type taskStats struct {
	Task     string  `json:"task"`
	Size     int     `json:"size"`
	Reply    int     `json:"reply"`
	Requests uint64  `json:"requests"`
	Answers  uint64  `json:"answers"`
	MsgsPerS float64 `json:"msgs_per_s"` // requests + answers per second
	MBPerS   float64 `json:"mb_per_s"`   // request + answer bytes per second
	AvgUS    float64 `json:"avg_us"`
	P50US    float64 `json:"p50_us"`
	P90US    float64 `json:"p90_us"`
	P99US    float64 `json:"p99_us"`
	P999US   float64 `json:"p999_us"`
	MaxUS    float64 `json:"max_us"`
	// RDMAMBPerS counts the bytes moved by RDMA for answered requests.
	RDMAMBPerS float64 `json:"rdma_mb_per_s,omitempty"`
}

func statsOf(name string, size, reply int, reqs, acks, bytes uint64, lat *counts, secs float64) taskStats {
	ts := taskStats{Task: name, Size: size, Reply: reply, Requests: reqs, Answers: acks,
		MsgsPerS: float64(reqs+acks) / secs, MBPerS: float64(bytes) / secs / 1e6,
		P50US: us(lat.quantile(0.5)), P90US: us(lat.quantile(0.9)), P99US: us(lat.quantile(0.99)),
		P999US: us(lat.quantile(0.999)), MaxUS: us(lat.quantile(1))}
	var sum float64
	for i, v := range lat {
		if v > 0 {
			sum += float64(v) * float64(bucketLow(i))
		}
	}
	if n := lat.total(); n > 0 {
		ts.AvgUS = sum / float64(n) / 1e3
	}
	return ts
}

// result collects the final figures over the run's secs seconds.
func (c *client) result(transport string, secs float64, r *reporter) *result {
	res := &result{Transport: transport, Local: c.local.String(), Server: c.server.String(),
		Mode: "request-response", Tasks: len(c.tasks), Depth: c.p.depth, Seconds: secs, Intervals: r.lines}
	if c.p.oneway {
		res.Mode = "one-way"
	}
	if c.p.rdma != rdmaNone {
		res.RDMA, res.RDMASize = c.p.rdma.String(), c.p.rdmaSize
	}
	var all counts
	var reqs, acks, bytes, rdmaB uint64
	for _, t := range c.tasks {
		var lat counts
		t.lat.snapshot(&lat)
		all.add(&lat)
		tr, ta, tb := t.reqs.Load(), t.acks.Load(), t.txB.Load()+t.rxB.Load()
		reqs, acks, bytes = reqs+tr, acks+ta, bytes+tb
		ts := statsOf(fmt.Sprint(t.id), t.size, t.reply, tr, ta, tb, &lat, secs)
		ts.RDMAMBPerS = float64(t.rdmaB.Load()) / secs / 1e6
		rdmaB += t.rdmaB.Load()
		res.PerTask = append(res.PerTask, ts)
	}
	res.Total = statsOf("all", 0, 0, reqs, acks, bytes, &all, secs)
	res.Total.RDMAMBPerS = float64(rdmaB) / secs / 1e6
	res.Histogram = all.pow2()
	if res.Histogram == nil {
		res.Histogram = []pow2Bin{}
	}
	return res
}

// printTable writes the final table, a summary line and, if asked, the
// histogram.
func (res *result) printTable(w io.Writer, histogram bool) {
	mode := res.Mode
	if res.RDMA != "" {
		mode += fmt.Sprintf(" with RDMA %s of %d bytes", strings.ToUpper(res.RDMA), res.RDMASize)
	}
	fmt.Fprintf(w, "\n%s over %s, %s -> %s, %d tasks x depth %d, %.2f s\n",
		mode, res.Transport, res.Local, res.Server, res.Tasks, res.Depth, res.Seconds)
	head := "  task     size    reply   requests    answers     msgs/s      MB/s   avg us   p50 us   p90 us   p99 us   max us"
	if res.RDMA != "" {
		head += "  rdma MB/s"
	}
	fmt.Fprintln(w, head)
	rows := res.PerTask
	if len(rows) > 1 {
		rows = append(rows, res.Total)
	}
	for _, t := range rows {
		size, reply := fmt.Sprint(t.Size), fmt.Sprint(t.Reply)
		if t.Task == "all" {
			size, reply = "-", "-"
		}
		line := fmt.Sprintf("%6s %8s %8s %10d %10d %10.0f %9.2f %8.1f %8.1f %8.1f %8.1f %8.1f", t.Task, size, reply,
			t.Requests, t.Answers, t.MsgsPerS, t.MBPerS, t.AvgUS, t.P50US, t.P90US, t.P99US, t.MaxUS)
		if res.RDMA != "" {
			line += fmt.Sprintf(" %10.2f", t.RDMAMBPerS)
		}
		fmt.Fprintln(w, line)
	}
	if histogram {
		res.printHistogram(w)
	}
}

// printHistogram draws the round-trip histogram in power-of-two
// microsecond bins, with a bar scaled to the fullest bin.
func (res *result) printHistogram(w io.Writer) {
	var most uint64
	for _, b := range res.Histogram {
		most = max(most, b.Count)
	}
	fmt.Fprintln(w, "\nround trip (us)        count")
	for _, b := range res.Histogram {
		bar := 0
		if most > 0 {
			bar = int(40 * b.Count / most)
		}
		fmt.Fprintf(w, "%7d - %-7d %10d %s\n", b.LowUS, b.HighUS, b.Count, strings.Repeat("#", bar))
	}
}

func (res *result) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
