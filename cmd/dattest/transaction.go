package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
)

// txnConfig is a transaction test: threads goroutines, each with eps
// connected EPs, each EP running iters transactions of size bytes.
type txnConfig struct {
	threads, eps, iters, size int
	timeout                   time.Duration
}

// A transaction on one EP is, like dapltest's: RDMA Write a pattern into
// the server's region, RDMA Read it back and compare, then Send another
// pattern and compare the server's echo with it. Within a thread every
// step is posted on all the thread's EPs before any is waited for.
const dtosPerTxn = 3

// runTransaction runs the test against the server at addr:qual and prints
// one summary line; any failed DTO or data mismatch ends it with an error.
func runTransaction(ctx context.Context, i *ia.IA, addr netip.Addr, qual dat.ConnQual, c txnConfig, out io.Writer) error {
	pz, err := i.CreatePZ()
	if err != nil {
		return err
	}
	defer pz.Free()
	ctx, guard, stop := newStallGuard(ctx, c.timeout)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	start := time.Now()
	var wg sync.WaitGroup
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := txnThread(ctx, i, pz, addr, qual, c, t, guard); err != nil {
				cancel(fmt.Errorf("thread %d: %w", t, err))
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return waitErr(ctx, err)
	}
	el := time.Since(start)
	n := c.threads * c.eps * c.iters * dtosPerTxn
	fmt.Fprintf(out, "transaction: %d threads x %d EPs x %d iterations, %d B: %d DTOs verified in %.3f s (%.0f DTOs/s)\n",
		c.threads, c.eps, c.iters, c.size, n, el.Seconds(), float64(n)/el.Seconds())
	return nil
}

func txnThread(ctx context.Context, i *ia.IA, pz *ia.PZ, addr netip.Addr, qual dat.ConnQual, c txnConfig, t int, guard *stallGuard) error {
	links := make([]*link, 0, c.eps)
	defer func() {
		for _, l := range links {
			l.close(c.timeout)
		}
	}()
	for e := 0; e < c.eps; e++ {
		l, err := dial(ctx, i, pz, addr, qual, setup{Size: c.size, Depth: 1}, c.timeout)
		if err != nil {
			return fmt.Errorf("connect to %v port %d: %w", addr, qual, err)
		}
		links = append(links, l)
	}
	for it := 0; it < c.iters; it++ {
		for e, l := range links {
			fill(l.out(0), pattern(t, e, it, 0))
			if err := l.ep.PostRDMAWrite(l.outIOV(0), 1, l.remoteSlot(0), dat.CompletionDefault); err != nil {
				return fmt.Errorf("EP %d: %w", e, err)
			}
		}
		if err := reap(ctx, links, dat.DTORDMAWrite, guard); err != nil {
			return err
		}
		for e, l := range links {
			clear(l.in(0))
			if err := l.ep.PostRDMARead(l.inIOV(0), 2, l.remoteSlot(0), dat.CompletionDefault); err != nil {
				return fmt.Errorf("EP %d: %w", e, err)
			}
		}
		if err := reap(ctx, links, dat.DTORDMARead, guard); err != nil {
			return err
		}
		for e, l := range links {
			if err := check(l.in(0), pattern(t, e, it, 0)); err != nil {
				return fmt.Errorf("EP %d iteration %d: RDMA Read back: %w", e, it, err)
			}
			clear(l.in(0))
			fill(l.out(0), pattern(t, e, it, 1))
			if err := l.ep.PostRecv(l.inIOV(0), 3, dat.CompletionDefault); err != nil {
				return fmt.Errorf("EP %d: %w", e, err)
			}
			if err := l.ep.PostSend(l.outIOV(0), 4, dat.CompletionDefault); err != nil {
				return fmt.Errorf("EP %d: %w", e, err)
			}
		}
		// Each EP completes its Send and then (in either order) the echo.
		for range 2 {
			if err := reap(ctx, links, 0, guard); err != nil {
				return err
			}
		}
		for e, l := range links {
			if err := check(l.in(0), pattern(t, e, it, 1)); err != nil {
				return fmt.Errorf("EP %d iteration %d: echo: %w", e, it, err)
			}
		}
	}
	return nil
}

// reap waits for one successful DTO completion on every link, of op
// unless op is 0.
func reap(ctx context.Context, links []*link, op dat.DTOOp, guard *stallGuard) error {
	for e, l := range links {
		ev, _, err := l.evd.Wait(ctx, 1)
		switch {
		case err != nil:
			return fmt.Errorf("EP %d: %w", e, waitErr(ctx, err))
		case ev.Number != dat.DTOCompletionEvent:
			return fmt.Errorf("EP %d: unexpected %v", e, ev.Number)
		case ev.DTO.Status != dat.DTOSuccess:
			return fmt.Errorf("EP %d: %w", e, dtoErr(ev.DTO.Op.String(), ev.DTO))
		case op != 0 && ev.DTO.Op != op:
			return fmt.Errorf("EP %d: %v completed, want %v", e, ev.DTO.Op, op)
		}
		guard.tick()
	}
	return nil
}

// pattern is the first byte of the data of one step of one transaction.
func pattern(thread, ep, iter, step int) byte {
	return byte(thread*131 + ep*31 + iter*7 + step*101 + 1)
}

// fill writes a pattern that changes with every byte and with seed.
func fill(b []byte, seed byte) {
	for j := range b {
		b[j] = seed + byte(j) + byte(j>>8)
	}
}

func check(b []byte, seed byte) error {
	for j := range b {
		if want := seed + byte(j) + byte(j>>8); b[j] != want {
			return fmt.Errorf("data mismatch at byte %d: got %#02x, want %#02x", j, b[j], want)
		}
	}
	return nil
}
