package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"syscall"
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
	quiet bool // -z: keep the lines for JSON, print none
	lines []interval
	cpu0  time.Duration // CPU time at the start

	stop chan struct{}
	done sync.WaitGroup
}

// interval is one progress line: the real tool's columns (tsks, tx/s,
// rx/s, tx+rx K/s, mbi K/s, mbo K/s, tx us/c, rtt us, cpu %), then
// percentiles.
type interval struct {
	Sec     float64 `json:"t_s"`
	Tasks   int     `json:"tsks"`
	TxPerS  float64 `json:"tx_per_s"`
	RxPerS  float64 `json:"rx_per_s"`
	KBPerS  float64 `json:"tx_rx_kb_per_s"`
	MbiKBs  float64 `json:"mbi_kb_per_s"` // bytes RDMA brought into our memory
	MboKBs  float64 `json:"mbo_kb_per_s"` // bytes RDMA took out of our memory
	TxUSPC  float64 `json:"tx_us_per_call"`
	RttUS   float64 `json:"rtt_us"`
	CPUPct  float64 `json:"cpu_pct"` // -1 without -c
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
	rxReqs     uint64
	txB, rxB   uint64
	rdmaIn     uint64
	rdmaOut    uint64
	sendNS     uint64
	sends      uint64
	cpu        time.Duration // this process's CPU time
	lat        counts
}

func (c *client) snapshot() *snap {
	s := &snap{at: time.Now(), cpu: cpuTime()}
	var tc counts
	for _, t := range c.tasks {
		s.reqs += t.reqs.Load()
		s.acks += t.acks.Load()
		s.rxReqs += t.rxReqs.Load()
		s.txB += t.txB.Load()
		s.rxB += t.rxB.Load()
		s.rdmaIn += t.rdmaIn.Load()
		s.rdmaOut += t.rdmaOut.Load()
		s.sendNS += t.sendNS.Load()
		s.sends += t.sends.Load()
		t.lat.snapshot(&tc)
		s.lat.add(&tc)
	}
	return s
}

// progressHeader is the real tool's header, then this tool's extras.
const progressHeader = "tsks   tx/s   rx/s  tx+rx K/s    mbi K/s    mbo K/s tx us/c   rtt us cpu %   p50 us   p99 us"

func (r *reporter) start() {
	r.cpu0 = cpuTime()
	r.stop = make(chan struct{})
	r.done.Add(1)
	go r.run()
}

func (r *reporter) run() {
	defer r.done.Done()
	tick := time.NewTicker(r.every)
	defer tick.Stop()
	if !r.quiet {
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
		iv := r.c.between(prev, cur)
		r.lines = append(r.lines, iv)
		if !r.quiet {
			fmt.Fprintln(r.out, iv.line())
		}
		prev = cur
	}
}

// between returns the figures of the interval from prev to cur.
func (c *client) between(prev, cur *snap) interval {
	dt := cur.at.Sub(prev.at).Seconds()
	lat := cur.lat
	lat.sub(&prev.lat)
	iv := interval{
		Sec:     cur.at.Sub(c.t0).Seconds(),
		Tasks:   len(c.tasks),
		TxPerS:  float64(cur.reqs-prev.reqs) / dt,
		RxPerS:  float64(cur.rxReqs-prev.rxReqs) / dt,
		KBPerS:  float64(cur.txB-prev.txB+cur.rxB-prev.rxB) / dt / 1024,
		MbiKBs:  float64(cur.rdmaIn-prev.rdmaIn) / dt / 1024,
		MboKBs:  float64(cur.rdmaOut-prev.rdmaOut) / dt / 1024,
		RttUS:   avgUS(&lat),
		CPUPct:  -1,
		MBPerS:  float64(cur.txB-prev.txB+cur.rxB-prev.rxB) / dt / 1e6,
		P50US:   us(lat.quantile(0.5)),
		P99US:   us(lat.quantile(0.99)),
		P999US:  us(lat.quantile(0.999)),
		Answers: lat.total(),
	}
	if n := cur.sends - prev.sends; n > 0 {
		iv.TxUSPC = float64(cur.sendNS-prev.sendNS) / float64(n) / 1e3
	}
	if c.p.cpu {
		iv.CPUPct = cpuPercent(cur.cpu-prev.cpu, cur.at.Sub(prev.at))
	}
	if c.p.rdma != rdmaNone {
		iv.RDMAMBPerS = float64(cur.rdmaIn-prev.rdmaIn+cur.rdmaOut-prev.rdmaOut) / dt / 1e6
	}
	return iv
}

// line formats iv in the real tool's columns and widths.
func (iv interval) line() string {
	return fmt.Sprintf("%4d %6.0f %6.0f %10.2f %10.2f %10.2f %7.2f %8.2f %5.2f %8.1f %8.1f", iv.Tasks, iv.TxPerS, iv.RxPerS,
		iv.KBPerS, iv.MbiKBs, iv.MboKBs, iv.TxUSPC, iv.RttUS, iv.CPUPct, iv.P50US, iv.P99US)
}

// avgUS is the mean of a histogram's samples, in microseconds.
func avgUS(lat *counts) float64 {
	var sum float64
	for i, v := range lat {
		if v > 0 {
			sum += float64(v) * float64(bucketLow(i))
		}
	}
	if n := lat.total(); n > 0 {
		return sum / float64(n) / 1e3
	}
	return 0
}

// cpuTime is this process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPercent is CPU time used over wall time, as a share of every CPU.
func cpuPercent(used, wall time.Duration) float64 {
	if wall <= 0 {
		return 0
	}
	return 100 * float64(used) / float64(wall) / float64(runtime.NumCPU())
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
	Mode      string      `json:"mode"` // "two-way" or "one-way"
	RDMA      string      `json:"rdma,omitempty"`
	RDMASize  int         `json:"rdma_size,omitempty"`
	Tasks     int         `json:"tasks"`
	Depth     int         `json:"depth"`
	Seconds   float64     `json:"seconds"`
	PerTask   []taskStats `json:"per_task"`
	Total     taskStats   `json:"total"`
	Histogram []pow2Bin   `json:"histogram_us"`
	Intervals []interval  `json:"intervals"`
	// Average is the real tool's "(average)" line over the whole run.
	Average     interval `json:"average"`
	Interrupted bool     `json:"interrupted"`
	Error       string   `json:"error,omitempty"`
}

// taskStats is one row of the final table.
type taskStats struct {
	Task     string `json:"task"`
	Size     int    `json:"size"`
	Reply    int    `json:"reply"`
	Requests uint64 `json:"requests"`
	Answers  uint64 `json:"answers"`
	// PeerRequests are the passive side's requests received and answered.
	PeerRequests uint64  `json:"peer_requests"`
	MsgsPerS     float64 `json:"msgs_per_s"` // messages sent and received per second
	MBPerS       float64 `json:"mb_per_s"`   // bytes sent and received per second
	AvgUS        float64 `json:"avg_us"`
	P50US        float64 `json:"p50_us"`
	P90US        float64 `json:"p90_us"`
	P99US        float64 `json:"p99_us"`
	P999US       float64 `json:"p999_us"`
	MaxUS        float64 `json:"max_us"`
	// RDMAMBPerS counts the bytes moved by RDMA for answered requests.
	RDMAMBPerS float64 `json:"rdma_mb_per_s,omitempty"`
}

func statsOf(name string, size, reply int, reqs, acks, peer, bytes uint64, lat *counts, secs float64) taskStats {
	ts := taskStats{Task: name, Size: size, Reply: reply, Requests: reqs, Answers: acks, PeerRequests: peer,
		MsgsPerS: float64(reqs+acks+2*peer) / secs, MBPerS: float64(bytes) / secs / 1e6,
		P50US: us(lat.quantile(0.5)), P90US: us(lat.quantile(0.9)), P99US: us(lat.quantile(0.99)),
		P999US: us(lat.quantile(0.999)), MaxUS: us(lat.quantile(1))}
	ts.AvgUS = avgUS(lat)
	return ts
}

// result collects the final figures over the run's secs seconds.
func (c *client) result(transport string, secs float64, r *reporter) *result {
	res := &result{Transport: transport, Local: c.local.String(), Server: c.server.String(),
		Mode: "two-way", Tasks: len(c.tasks), Depth: c.p.depth, Seconds: secs, Intervals: r.lines}
	if c.p.oneway {
		res.Mode = "one-way"
	}
	if c.p.rdma != rdmaNone {
		res.RDMA, res.RDMASize = c.p.rdma.String(), c.p.rdmaSize
	}
	var all counts
	var reqs, acks, peer, bytes, rdmaB uint64
	end := c.snapshot()
	res.Average = c.between(&snap{at: c.t0, cpu: r.cpu0}, end)
	res.Average.Sec = secs
	for _, t := range c.tasks {
		var lat counts
		t.lat.snapshot(&lat)
		all.add(&lat)
		tr, ta, tp, tb := t.reqs.Load(), t.acks.Load(), t.rxReqs.Load(), t.txB.Load()+t.rxB.Load()
		reqs, acks, peer, bytes = reqs+tr, acks+ta, peer+tp, bytes+tb
		ts := statsOf(fmt.Sprint(t.id), t.size, t.reply, tr, ta, tp, tb, &lat, secs)
		moved := t.rdmaIn.Load() + t.rdmaOut.Load()
		ts.RDMAMBPerS = float64(moved) / secs / 1e6
		rdmaB += moved
		res.PerTask = append(res.PerTask, ts)
	}
	res.Total = statsOf("all", 0, 0, reqs, acks, peer, bytes, &all, secs)
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
		mode += fmt.Sprintf(" with RDMA %s of %d bytes", strings.ToUpper(strings.ReplaceAll(res.RDMA, "+", " and ")), res.RDMASize)
	}
	fmt.Fprintln(w, "---------------------------------------------")
	fmt.Fprintln(w, res.Average.line()+"  (average)")
	state := ""
	if res.Interrupted {
		state = ", interrupted"
	}
	fmt.Fprintf(w, "\n%s over %s, %s -> %s, %d tasks x depth %d, %.2f s%s\n",
		mode, res.Transport, res.Local, res.Server, res.Tasks, res.Depth, res.Seconds, state)
	head := "  task     size      ack   requests    answers  peer reqs     msgs/s      MB/s   avg us   p50 us   p90 us   p99 us   max us"
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
		line := fmt.Sprintf("%6s %8s %8s %10d %10d %10d %10.0f %9.2f %8.1f %8.1f %8.1f %8.1f %8.1f", t.Task, size, reply,
			t.Requests, t.Answers, t.PeerRequests, t.MsgsPerS, t.MBPerS, t.AvgUS, t.P50US, t.P90US, t.P99US, t.MaxUS)
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
