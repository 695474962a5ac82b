package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
)

// txnConfig is a transaction test: threads goroutines, each with eps
// connected EPs, each EP running iters transactions of ops.
type txnConfig struct {
	threads, eps, iters int
	ops                 []op
	poll                bool
	timeout             time.Duration
	json                bool      // print the summary as JSON
	progress            io.Writer // a line per second while it runs (nil: none)
}

// txnJSON is -json's shape for -T T.
type txnJSON struct {
	Test        string   `json:"test"`
	Threads     int      `json:"threads"`
	EPs         int      `json:"eps_per_thread"`
	Iterations  int      `json:"iterations"`
	Ops         []string `json:"ops"`
	DTOs        int64    `json:"dtos_verified"`
	Seconds     float64  `json:"seconds"`
	DTOsPerS    float64  `json:"dtos_per_s"`
	Interrupted bool     `json:"interrupted"`
}

// layout places each op in a link's slot: op i uses bytes off[i] to
// off[i]+ops[i].bytes() of the out half (what is sent or written), of
// the in half (what is received or read) and of the server's region.
// An RDMA Read reads what the last RDMA Write before it in the list
// wrote, so that it can check every byte; with none before it, it reads
// its own part of the region and checks only that it completed.
type layout struct {
	off   []int
	src   []int // RR: index of the RW it reads back, or -1
	total int
}

func newLayout(ops []op) layout {
	l := layout{src: make([]int, len(ops))}
	lastRW := -1
	for i, o := range ops {
		l.off = append(l.off, l.total)
		l.total += o.bytes()
		l.src[i] = -1
		switch o.kind {
		case "RW":
			lastRW = i
		case "RR":
			l.src[i] = lastRW
		}
	}
	return l
}

// runTransaction runs the test against the server at addr:qual and prints
// one summary line; any failed DTO or data mismatch ends it with an error.
// Interrupted, it prints what was verified so far and fails.
func runTransaction(ctx context.Context, i *ia.IA, addr netip.Addr, qual dat.ConnQual, c txnConfig, out io.Writer) error {
	pz, err := i.CreatePZ()
	if err != nil {
		return err
	}
	defer pz.Free()
	parent := ctx
	ctx, guard, stop := newStallGuard(ctx, c.timeout)
	defer stop()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	start := time.Now()
	var done atomic.Int64 // DTOs verified
	if c.progress != nil {
		stopProgress := make(chan struct{})
		progressDone := make(chan struct{})
		go func() {
			defer close(progressDone)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case now := <-tick.C:
					fmt.Fprintf(c.progress, "transaction: %6.1f s  %d DTOs verified\n", now.Sub(start).Seconds(), done.Load())
				}
			}
		}()
		defer func() {
			close(stopProgress)
			<-progressDone
		}()
	}
	var wg sync.WaitGroup
	for t := 0; t < c.threads; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := txnThread(ctx, i, pz, addr, qual, c, t, guard, &done); err != nil {
				cancel(fmt.Errorf("thread %d: %w", t, err))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	n := done.Load()
	if c.json && (parent.Err() != nil || context.Cause(ctx) == nil) {
		j := txnJSON{Test: "T", Threads: c.threads, EPs: c.eps, Iterations: c.iters, DTOs: n, Seconds: el.Seconds(),
			DTOsPerS: float64(n) / el.Seconds(), Interrupted: parent.Err() != nil}
		for _, o := range c.ops {
			j.Ops = append(j.Ops, o.String())
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(j); err != nil {
			return err
		}
		if parent.Err() != nil {
			return errInterrupted
		}
		return nil
	}
	summary := fmt.Sprintf("transaction: %d threads x %d EPs x %d iterations of %d ops: %d DTOs verified in %.3f s (%.0f DTOs/s)",
		c.threads, c.eps, c.iters, len(c.ops), n, el.Seconds(), float64(n)/el.Seconds())
	if parent.Err() != nil {
		fmt.Fprintln(out, summary+", interrupted")
		return errInterrupted
	}
	if err := context.Cause(ctx); err != nil {
		return waitErr(ctx, err)
	}
	fmt.Fprintln(out, summary)
	return nil
}

// linkState counts a link's Sends and Receives across the steps of a
// transaction: their completions may arrive while another step waits.
type linkState struct {
	sends, sendsDone int
	recvsDone, used  int   // echoes arrived, echoes checked
	echoes           []int // client SR op index of each echo due, in order
}

func txnThread(ctx context.Context, i *ia.IA, pz *ia.PZ, addr netip.Addr, qual dat.ConnQual, c txnConfig, t int,
	guard *stallGuard, done *atomic.Int64) error {
	lay := newLayout(c.ops)
	// Each client Send has a Receive for its echo outstanding until the
	// echo's step: the link's depth is their number.
	segs, sends := 1, 0
	for _, o := range c.ops {
		segs = max(segs, o.segs)
		if o.kind == "SR" && !o.server {
			sends++
		}
	}
	links := make([]*link, 0, c.eps)
	defer func() {
		for _, l := range links {
			l.close(c.timeout)
		}
	}()
	for e := 0; e < c.eps; e++ {
		l, err := dial(ctx, i, pz, addr, qual, setup{Size: lay.total, Depth: max(1, sends)}, segs, c.timeout)
		if err != nil {
			return fmt.Errorf("connect to %v port %d: %w", addr, qual, err)
		}
		l.poll = c.poll
		links = append(links, l)
	}
	states := make([]linkState, len(links))
	for it := 0; it < c.iters; it++ {
		if ctx.Err() != nil { // mem never blocks where the context is seen
			return context.Cause(ctx)
		}
		for k, o := range c.ops {
			for e, l := range links {
				if err := postStep(l, &states[e], o, k, lay, pattern(t, e, it, k)); err != nil {
					return fmt.Errorf("EP %d %s: %w", e, o, err)
				}
			}
			for e, l := range links {
				if err := finishStep(ctx, l, &states[e], o, k, lay, c.ops, func(k int) byte { return pattern(t, e, it, k) }, guard); err != nil {
					return fmt.Errorf("EP %d iteration %d %s: %w", e, it, o, err)
				}
				done.Add(1)
			}
		}
		// Every Send completes before its buffer is written again.
		for e, l := range links {
			st := &states[e]
			for st.sendsDone < st.sends {
				if _, err := reapOne(ctx, l, st, guard); err != nil {
					return fmt.Errorf("EP %d: %w", e, err)
				}
			}
		}
	}
	return nil
}

// postStep posts op k of a transaction on l.
func postStep(l *link, st *linkState, o op, k int, lay layout, seed byte) error {
	n, off := o.bytes(), lay.off[k]
	inOff := l.depth*l.size + off
	switch {
	case o.kind == "RW":
		fill(l.buf.Bytes()[off:off+n], seed)
		return l.ep.PostRDMAWrite(l.segIOV(off, n, o.segs), dat.DTOCookie(k), l.remoteAt(off, n), dat.CompletionDefault)
	case o.kind == "RR":
		clear(l.buf.Bytes()[inOff : inOff+n])
		roff := off
		if s := lay.src[k]; s >= 0 {
			roff = lay.off[s]
		}
		return l.ep.PostRDMARead(l.segIOV(inOff, n, o.segs), dat.DTOCookie(k), l.remoteAt(roff, n), dat.CompletionDefault)
	case o.server: // the echo of a client SR: nothing to post
		return nil
	}
	clear(l.buf.Bytes()[inOff : inOff+n])
	fill(l.buf.Bytes()[off:off+n], seed)
	if err := l.ep.PostRecv(l.segIOV(inOff, n, o.segs), dat.DTOCookie(k), dat.CompletionDefault); err != nil {
		return err
	}
	if err := l.ep.PostSend(l.segIOV(off, n, o.segs), dat.DTOCookie(k), dat.CompletionDefault); err != nil {
		return err
	}
	st.sends++
	st.echoes = append(st.echoes, k)
	return nil
}

// finishStep waits for op k's completion on l and checks its data.
func finishStep(ctx context.Context, l *link, st *linkState, o op, k int, lay layout, ops []op, seed func(int) byte,
	guard *stallGuard) error {
	inOff := l.depth*l.size + lay.off[k]
	switch {
	case o.kind == "RW" || o.kind == "RR":
		want := dat.DTORDMAWrite
		if o.kind == "RR" {
			want = dat.DTORDMARead
		}
		for {
			d, err := reapOne(ctx, l, st, guard)
			if err != nil {
				return err
			}
			if d.Op == want && int(d.Cookie) == k {
				break
			}
		}
		if s := lay.src[k]; o.kind == "RR" && s >= 0 {
			n := min(o.bytes(), ops[s].bytes())
			if err := check(l.buf.Bytes()[inOff:inOff+n], seed(s)); err != nil {
				return fmt.Errorf("RDMA Read back of %q: %w", ops[s], err)
			}
		}
		return nil
	case o.server:
		for st.recvsDone <= st.used {
			if _, err := reapOne(ctx, l, st, guard); err != nil {
				return err
			}
		}
		c := st.echoes[0]
		st.echoes = st.echoes[1:]
		st.used++
		cOff := l.depth*l.size + lay.off[c]
		if err := check(l.buf.Bytes()[cOff:cOff+ops[c].bytes()], seed(c)); err != nil {
			return fmt.Errorf("echo of %q: %w", ops[c], err)
		}
		return nil
	}
	if o.reap { // -f: the Send's completion is reaped now
		for st.sendsDone < st.sends {
			if _, err := reapOne(ctx, l, st, guard); err != nil {
				return err
			}
		}
	}
	return nil
}

// reapOne waits for one successful DTO completion on l, counting Sends
// and Receives in st.
func reapOne(ctx context.Context, l *link, st *linkState, guard *stallGuard) (dat.DTOCompletion, error) {
	ev, err := l.wait(ctx)
	switch {
	case err != nil:
		return dat.DTOCompletion{}, waitErr(ctx, err)
	case ev.Number != dat.DTOCompletionEvent:
		return dat.DTOCompletion{}, fmt.Errorf("unexpected %v", ev.Number)
	case ev.DTO.Status != dat.DTOSuccess:
		return ev.DTO, dtoErr(ev.DTO.Op.String(), ev.DTO)
	}
	switch ev.DTO.Op {
	case dat.DTOSend:
		st.sendsDone++
	case dat.DTOReceive:
		st.recvsDone++
	}
	guard.tick()
	return ev.DTO, nil
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
