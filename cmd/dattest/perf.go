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
	timeout            time.Duration
}

// perfResult is what a performance test measured. Latency is from the
// post of an operation to its completion (for send: to the echo's
// arrival), so at depth 1 it is the round trip.
type perfResult struct {
	ops                    int
	elapsed                time.Duration
	latMin, latMax, latSum time.Duration
}

func (r perfResult) print(out io.Writer, c perfConfig) {
	s := r.elapsed.Seconds()
	fmt.Fprintf(out, "perf %s: %d B x %d, depth %d: %.3f s, %.0f ops/s, %.2f MB/s, latency avg %.2f us min %.2f us max %.2f us\n",
		c.op, c.size, r.ops, c.depth, s, float64(r.ops)/s, float64(r.ops)*float64(c.size)/s/1e6,
		us(r.latSum/time.Duration(max(r.ops, 1))), us(r.latMin), us(r.latMax))
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// runPerf runs one performance test against the server at addr:qual.
func runPerf(ctx context.Context, i *ia.IA, addr netip.Addr, qual dat.ConnQual, c perfConfig) (perfResult, error) {
	pz, err := i.CreatePZ()
	if err != nil {
		return perfResult{}, err
	}
	defer pz.Free()
	l, err := dial(ctx, i, pz, addr, qual, setup{Size: c.size, Depth: c.depth}, c.timeout)
	if err != nil {
		return perfResult{}, fmt.Errorf("connect to %v port %d: %w", addr, qual, err)
	}
	defer l.close(c.timeout)
	ctx, guard, stop := newStallGuard(ctx, c.timeout)
	defer stop()
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
	switch p.c.op {
	case perfWrite:
		return l.ep.PostRDMAWrite(l.outIOV(k), dat.DTOCookie(k), l.remoteSlot(k), dat.CompletionDefault)
	case perfRead:
		return l.ep.PostRDMARead(l.inIOV(k), dat.DTOCookie(k), l.remoteSlot(k), dat.CompletionDefault)
	}
	return l.ep.PostSend(l.outIOV(k), dat.DTOCookie(k), dat.CompletionDefault)
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

func (p *pipeline) run(ctx context.Context) (perfResult, error) {
	c, l := p.c, p.l
	start := time.Now()
	next := 0
	for ; next < min(c.depth, c.iters); next++ {
		if err := p.post(next); err != nil {
			return p.res, err
		}
	}
	for p.res.ops < c.iters {
		ev, _, err := l.evd.Wait(ctx, 1)
		if err != nil {
			return p.res, waitErr(ctx, err)
		}
		now := time.Now()
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
	p.res.elapsed = time.Since(start)
	return p.res, nil
}
