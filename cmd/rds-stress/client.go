package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

// params is a client's workload.
type params struct {
	sizes    []int         // request sizes; task i uses sizes[i%len(sizes)]
	ack      int           // answer size; 0: the request's size (request/response)
	oneway   bool          // answers are bare headers: the payload flows one way
	tasks    int           // sockets, each with its own window
	depth    int           // requests outstanding per task
	duration time.Duration // 0: until interrupted
	timeout  time.Duration // limit on the hello and on silence while acks are due
}

// replySize is the answer length task i asks for.
func (p *params) replySize(i int) int {
	switch {
	case p.oneway:
		return hdrLen
	case p.ack > 0:
		return p.ack
	}
	return p.sizes[i%len(p.sizes)]
}

// bufLen is SO_SNDBUF and SO_RCVBUF for task i: room for its whole
// window twice over (rds-stress's rule), at least 1 MiB.
func (p *params) bufLen(i int) int {
	return max(1<<20, 2*p.depth*(p.sizes[i%len(p.sizes)]+p.replySize(i)))
}

// task is one client socket and its counters, which the reporter reads
// while the task runs.
type task struct {
	id     int
	size   int
	reply  int
	s      *rdsoverdat.Socket
	dst    netip.AddrPort
	reqs   atomic.Uint64 // requests sent
	acks   atomic.Uint64 // answers received
	txB    atomic.Uint64 // request bytes sent
	rxB    atomic.Uint64 // answer bytes received
	lat    hist          // request → answer round trips
	failed error
}

// client runs a workload against a server.
type client struct {
	st     *rdsoverdat.Stack
	local  netip.Addr
	server netip.AddrPort
	p      params
	t0     time.Time
	tasks  []*task
}

// hello asks the server for p.tasks task sockets and waits for its
// answer: the first proof that the server is reachable.
func (c *client) hello(ctx context.Context) error {
	s, err := rdstool.Bind(c.st, netip.AddrPortFrom(c.local, 0), 0, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	nonce := rand.Uint64()
	b := make([]byte, hdrLen)
	stressHdr(b).encode(opHello, uint16(c.p.tasks), nonce, 0, hdrLen)
	s.SetDeadline(time.Now().Add(c.p.timeout))
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	if _, err := s.SendTo(b, c.server, 0); err != nil {
		return err
	}
	in := make([]byte, 256)
	for {
		m := rdsoverdat.Msg{Data: in}
		n, err := s.RecvMsg(&m, 0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("no answer from an rds-stress server at %v within %v (is it running, and reachable over the same transport?)",
				c.server, c.p.timeout)
		}
		if err != nil {
			return err
		}
		h, err := parseHdr(in[:n])
		if err != nil || h.Op() != opHelloReply || h.Seq() != nonce {
			continue
		}
		if h.Status() != 0 {
			return fmt.Errorf("the server at %v could not open %d task sockets (see its log)", c.server, c.p.tasks)
		}
		return nil
	}
}

// start binds the task sockets.
func (c *client) start() error {
	for i := range c.p.tasks {
		t := &task{id: i, size: c.p.sizes[i%len(c.p.sizes)], reply: c.p.replySize(i),
			dst: netip.AddrPortFrom(c.server.Addr(), c.server.Port()+1+uint16(i))}
		s, err := rdstool.Bind(c.st, netip.AddrPortFrom(c.local, 0), c.p.bufLen(i), c.p.bufLen(i))
		if err != nil {
			c.close()
			return err
		}
		// A send that cannot get room for this long means the peer is gone.
		s.SetOption(rdsoverdat.SendTimeout(c.p.timeout))
		t.s = s
		c.tasks = append(c.tasks, t)
	}
	return nil
}

func (c *client) close() {
	for _, t := range c.tasks {
		t.s.Close()
	}
}

// run runs every task until the duration ends or ctx does, then waits for
// the answers still due.
func (c *client) run(ctx context.Context, end time.Time) error {
	var stopping atomic.Bool
	stop := context.AfterFunc(ctx, func() { stopping.Store(true) })
	defer stop()
	var wg sync.WaitGroup
	for _, t := range c.tasks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.failed = c.runTask(t, end, &stopping)
			if t.failed != nil {
				stopping.Store(true)
			}
		}()
	}
	wg.Wait()
	var errs []error
	for _, t := range c.tasks {
		if t.failed != nil {
			errs = append(errs, fmt.Errorf("task %d: %w", t.id, t.failed))
		}
	}
	return errors.Join(errs...)
}

// runTask keeps p.depth requests outstanding on t until it is time to
// stop, then collects the answers still due.
func (c *client) runTask(t *task, end time.Time, stopping *atomic.Bool) error {
	out := make([]byte, t.size)
	in := make([]byte, t.reply+hdrLen)
	var seq uint64
	outstanding := 0
	send := func() error {
		h := stressHdr(out)
		h.encode(opRequest, uint16(t.id), seq, int64(time.Since(c.t0)), uint32(t.reply))
		if _, err := t.s.SendTo(out, t.dst, 0); err != nil {
			return err
		}
		seq++
		outstanding++
		t.reqs.Add(1)
		t.txB.Add(uint64(len(out)))
		return nil
	}
	done := func() bool { return stopping.Load() || (!end.IsZero() && time.Now().After(end)) }
	for range c.p.depth {
		if err := send(); err != nil {
			return err
		}
	}
	for outstanding > 0 {
		t.s.SetReadDeadline(time.Now().Add(c.p.timeout))
		m := rdsoverdat.Msg{Data: in}
		n, err := t.s.RecvMsg(&m, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("no answer from %v for %v (%d requests outstanding)", t.dst, c.p.timeout, outstanding)
		}
		if err != nil {
			return err
		}
		h, err := parseHdr(in[:n])
		if err != nil || h.Op() != opAck || int(h.Task()) != t.id {
			continue
		}
		t.lat.record(time.Since(c.t0) - time.Duration(h.Stamp()))
		t.acks.Add(1)
		t.rxB.Add(uint64(n))
		outstanding--
		if !done() {
			if err := send(); err != nil {
				return err
			}
		}
	}
	return nil
}
