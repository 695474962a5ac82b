package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
)

// perfOp is what a performance test measures.
type perfOp string

const (
	perfWrite perfOp = "write" // RDMA Write
	perfRead  perfOp = "read"  // RDMA Read
	perfSend  perfOp = "send"  // Send, echoed back by the server
)

// perfConfig is a performance test on one EP: iters operations of size
// bytes with depth of them in flight.
type perfConfig struct {
	op                 perfOp
	iters, size, depth int
	segs               int  // IOV entries per operation (dapltest's num_segs)
	poll               bool // -m p: poll the EVD instead of blocking
	timeout            time.Duration
	progress           io.Writer // a line per second on long runs (nil: none)
}

// perfResult is what a performance test measured. Latency is from the
// post of an operation to its completion (for send: to the echo's
// arrival), so at depth 1 it is the round trip.
type perfResult struct {
	ops                    int
	elapsed                time.Duration
	latMin, latMax, latSum time.Duration
	interrupted            bool
}

func (r perfResult) print(out io.Writer, c perfConfig) {
	s := r.elapsed.Seconds()
	line := fmt.Sprintf("perf %s: %d B x %d, depth %d: %.3f s, %.0f ops/s, %.2f MB/s, latency avg %.2f us min %.2f us max %.2f us",
		c.op, c.size, r.ops, c.depth, s, float64(r.ops)/s, float64(r.ops)*float64(c.size)/s/1e6,
		us(r.latSum/time.Duration(max(r.ops, 1))), us(r.latMin), us(r.latMax))
	if r.interrupted {
		line += fmt.Sprintf(", interrupted after %d of %d", r.ops, c.iters)
	}
	fmt.Fprintln(out, line)
}

// perfJSON is -json's shape for -T P.
type perfJSON struct {
	Test        string  `json:"test"`
	Op          string  `json:"op"`
	Size        int     `json:"size"`
	Segments    int     `json:"segments"`
	Depth       int     `json:"depth"`
	Iterations  int     `json:"iterations"`
	Ops         int     `json:"ops"`
	Seconds     float64 `json:"seconds"`
	OpsPerS     float64 `json:"ops_per_s"`
	MBPerS      float64 `json:"mb_per_s"`
	AvgUS       float64 `json:"lat_avg_us"`
	MinUS       float64 `json:"lat_min_us"`
	MaxUS       float64 `json:"lat_max_us"`
	Interrupted bool    `json:"interrupted"`
}

func (r perfResult) json(c perfConfig) perfJSON {
	s := max(r.elapsed.Seconds(), 1e-9)
	return perfJSON{Test: "P", Op: string(c.op), Size: c.size, Segments: max(c.segs, 1), Depth: c.depth, Iterations: c.iters,
		Ops: r.ops, Seconds: r.elapsed.Seconds(), OpsPerS: float64(r.ops) / s, MBPerS: float64(r.ops) * float64(c.size) / s / 1e6,
		AvgUS: us(r.latSum / time.Duration(max(r.ops, 1))), MinUS: us(r.latMin), MaxUS: us(r.latMax), Interrupted: r.interrupted}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// runPerf runs one performance test against the server at addr:qual.
func runPerf(ctx context.Context, i *ia.IA, addr netip.Addr, qual dat.ConnQual, c perfConfig) (res perfResult, err error) {
	pz, err := i.CreatePZ()
	if err != nil {
		return perfResult{}, err
	}
	defer pz.Free()
	l, err := dial(ctx, i, pz, addr, qual, setup{Size: c.size, Depth: c.depth}, c.segs, c.timeout)
	if err != nil {
		return perfResult{}, fmt.Errorf("connect to %v port %d: %w", addr, qual, err)
	}
	l.poll = c.poll
	defer l.close(c.timeout)
	parent := ctx
	ctx, guard, stop := newStallGuard(ctx, c.timeout)
	defer stop()
	defer func() {
		if parent.Err() != nil {
			// What was measured before the interrupt is the result.
			res.interrupted, err = true, nil
		}
	}()
	p := &pipeline{l: l, c: c, guard: guard, posted: make([]time.Time, c.depth)}
	if c.op == perfSend {
		for k := 0; k < c.depth; k++ {
			if err := l.ep.PostRecv(l.inIOV(k), dat.DTOCookie(k), dat.CompletionDefault); err != nil {
				return perfResult{}, err
			}
		}
	}
	return p.run(ctx)
}

// pipeline keeps depth operations in flight; slot k of the link carries
// the operations with cookie k.
type pipeline struct {
	l      *link
	c      perfConfig
	guard  *stallGuard
	posted []time.Time // post time of the operation in each slot
	res    perfResult
}

func (p *pipeline) post(k int) error {
	l := p.l
	p.posted[k] = time.Now()
	out, in := l.segIOV(k*l.size, l.size, p.c.segs), l.segIOV((l.depth+k)*l.size, l.size, p.c.segs)
	switch p.c.op {
	case perfWrite:
		return l.ep.PostRDMAWrite(out, dat.DTOCookie(k), l.remoteSlot(k), dat.CompletionDefault)
	case perfRead:
		return l.ep.PostRDMARead(in, dat.DTOCookie(k), l.remoteSlot(k), dat.CompletionDefault)
	}
	return l.ep.PostSend(out, dat.DTOCookie(k), dat.CompletionDefault)
}

// done accounts for the operation in slot k.
func (p *pipeline) done(k int, now time.Time) {
	lat := now.Sub(p.posted[k])
	r := &p.res
	if r.ops == 0 || lat < r.latMin {
		r.latMin = lat
	}
	r.latMax = max(r.latMax, lat)
	r.latSum += lat
	r.ops++
	p.guard.tick()
}

func (p *pipeline) run(ctx context.Context) (res perfResult, err error) {
	c, l := p.c, p.l
	start := time.Now()
	defer func() {
		p.res.elapsed = time.Since(start)
		res = p.res
	}()
	tick, lastOps := start.Add(time.Second), 0
	next := 0
	for ; next < min(c.depth, c.iters); next++ {
		if err := p.post(next); err != nil {
			return p.res, err
		}
	}
	for p.res.ops < c.iters {
		// A provider whose completions are always ready (mem) never
		// blocks in wait, where the context is seen: look now and then.
		if p.res.ops%64 == 0 && ctx.Err() != nil {
			return p.res, waitErr(ctx, context.Cause(ctx))
		}
		ev, err := l.wait(ctx)
		if err != nil {
			return p.res, waitErr(ctx, err)
		}
		now := time.Now()
		if c.progress != nil && now.After(tick) {
			n := p.res.ops - lastOps
			fmt.Fprintf(c.progress, "perf %s: %6.1f s  %d of %d ops  %.0f ops/s  %.2f MB/s\n", c.op, now.Sub(start).Seconds(),
				p.res.ops, c.iters, float64(n), float64(n)*float64(c.size)/1e6)
			tick, lastOps = tick.Add(time.Second), p.res.ops
		}
		if ev.Number != dat.DTOCompletionEvent {
			return p.res, fmt.Errorf("unexpected %v", ev.Number)
		}
		d := ev.DTO
		if d.Status != dat.DTOSuccess {
			return p.res, dtoErr(d.Op.String(), d)
		}
		k := int(d.Cookie)
		if c.op == perfSend {
			if d.Op == dat.DTOSend {
				continue // the echo completes the operation
			}
			if int(d.Length) != c.size {
				return p.res, fmt.Errorf("echo of %d bytes, sent %d", d.Length, c.size)
			}
			if err := l.ep.PostRecv(l.inIOV(k), dat.DTOCookie(k), dat.CompletionDefault); err != nil {
				return p.res, err
			}
		}
		p.done(k, now)
		if next < c.iters {
			if err := p.post(k); err != nil {
				return p.res, err
			}
			next++
		}
	}
	return p.res, nil
}
