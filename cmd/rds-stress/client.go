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

// params is a run's workload, which the active side sends the passive
// one in its hello.
type params struct {
	sizes    []int         // request sizes; task i uses sizes[i%len(sizes)]
	ack      int           // answer size of every request (-a; the minimum by default)
	oneway   bool          // -o: the passive side sends no requests of its own
	tasks    int           // sockets, each with its own window
	depth    int           // requests outstanding per task, each way
	duration time.Duration // 0: until interrupted
	timeout  time.Duration // limit on the hello and on silence while acks are due
	rdma     rdmaMode      // the server moves rdmaSize bytes by RDMA before each answer
	rdmaSize int
	verify   bool // -v: payloads carry a pattern the receiver checks
	cpu      bool // -c: report this process's CPU use
}

// hello is what the passive side needs of p.
func (p *params) hello() helloParams {
	return helloParams{ack: p.ack, depth: p.depth, oneway: p.oneway, verify: p.verify, sizes: p.sizes}
}

// rdmaMode is --rdma: which RDMA op the server runs on the client's
// memory before answering (named, as in RDS, from the server's side).
type rdmaMode int

const (
	rdmaNone  rdmaMode = iota
	rdmaBoth           // -M 0: READ and WRITE alternately
	rdmaRead           // -M 1: RDMA READ of the client's buffer
	rdmaWrite          // -M 2: RDMA WRITE into the client's buffer
)

func (m rdmaMode) String() string { return [...]string{"none", "read+write", "read", "write"}[m] }

// writes reports whether request seq asks for an RDMA WRITE (the rest
// ask for a READ): -M 0 alternates, starting with a READ.
func (m rdmaMode) writes(seq uint64) bool {
	return m == rdmaWrite || (m == rdmaBoth && seq%2 == 1)
}

// rdmaPattern is the byte the server RDMA-writes: the client clears its
// buffer before each request and finds the pattern there when the answer
// arrives, or the transfer did not happen first.
const rdmaPattern = 0xa5

// bufLen is SO_SNDBUF and SO_RCVBUF for task i: room for both windows
// (its own requests and answers, and the peer's) twice over, at least
// 1 MiB.
func (p *params) bufLen(i int) int {
	return max(1<<20, 4*p.depth*(p.sizes[i%len(p.sizes)]+p.ack))
}

// task is one client socket and its counters, which the reporter reads
// while the task runs.
type task struct {
	id      int
	size    int
	reply   int
	s       *rdsoverdat.Socket
	dst     netip.AddrPort
	reqs    atomic.Uint64 // requests sent
	acks    atomic.Uint64 // answers received
	rxReqs  atomic.Uint64 // the peer's requests received (and answered)
	txB     atomic.Uint64 // bytes sent: requests and answers
	rxB     atomic.Uint64 // bytes received: answers and the peer's requests
	rdmaIn  atomic.Uint64 // bytes the server RDMA-wrote into our memory (answered requests)
	rdmaOut atomic.Uint64 // bytes the server RDMA-read from our memory
	sendNS  atomic.Uint64 // time spent in send calls
	sends   atomic.Uint64 // send calls timed
	lat     hist          // request → answer round trips
	failed  error

	// --rdma: one registered buffer per window slot (request seq modulo
	// depth: answers come in order, so a slot is free again when the
	// request that used it is answered), and its cookie as the control
	// message the request carries.
	rdmaMem [][]byte
	rdmaCtl [][]rdsoverdat.ControlMessage
}

// client runs a workload against a server.
type client struct {
	st     *rdsoverdat.Stack
	local  netip.Addr
	server netip.AddrPort
	p      params
	t0     time.Time
	tasks  []*task
	nonce  uint64 // names the run in hello and goodbye
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
	c.nonce = nonce
	b := make([]byte, hdrLen)
	stressHdr(b).encode(opHello, uint16(c.p.tasks), nonce, 0, hdrLen)
	b = c.p.hello().append(b)
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
			return fmt.Errorf("no answer from a passive rds-stress at %v within %v (is it running, and reachable over the same transport?)",
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

// bye tells the passive instance that the run is over, so that it stops
// too, and waits (at most --timeout) for its answer: the answer proves
// the goodbye arrived before this node closes. A passive side that never
// hears it stops on its own once the tasks have been silent for its
// --timeout.
func (c *client) bye() {
	s, err := rdstool.Bind(c.st, netip.AddrPortFrom(c.local, 0), 0, 0)
	if err != nil {
		return
	}
	defer s.Close()
	b := make([]byte, hdrLen)
	stressHdr(b).encode(opBye, uint16(c.p.tasks), c.nonce, 0, hdrLen)
	s.SetDeadline(time.Now().Add(c.p.timeout))
	if _, err := s.SendTo(b, c.server, 0); err != nil {
		return
	}
	in := make([]byte, 256)
	for {
		m := rdsoverdat.Msg{Data: in}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return
		}
		if h, err := parseHdr(in[:n]); err == nil && h.Op() == opBye && h.Seq() == c.nonce {
			return
		}
	}
}

// start binds the task sockets.
func (c *client) start() error {
	for i := range c.p.tasks {
		t := &task{id: i, size: c.p.sizes[i%len(c.p.sizes)], reply: c.p.ack,
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
		if c.p.rdma != rdmaNone {
			if err := c.mapRDMA(t); err != nil {
				c.close()
				return err
			}
		}
	}
	return nil
}

// mapRDMA registers a buffer per window slot of t for the server's RDMA.
func (c *client) mapRDMA(t *task) error {
	var flags rdsoverdat.RDMAFlags
	if c.p.rdma != rdmaRead {
		flags = rdsoverdat.RDMAReadWrite // the server may write it
	}
	// SharedMem: with --rdsd the daemon runs the transport and must see
	// the memory; elsewhere it is ordinary memory.
	mem, err := t.s.SharedMem(c.p.depth * c.p.rdmaSize)
	if err != nil {
		return fmt.Errorf("RDMA memory: %w", err)
	}
	for i := range c.p.depth {
		b := mem[i*c.p.rdmaSize : (i+1)*c.p.rdmaSize]
		ck, err := t.s.GetMR(b, flags)
		if err != nil {
			return fmt.Errorf("registering RDMA memory: %w", err)
		}
		t.rdmaMem = append(t.rdmaMem, b)
		t.rdmaCtl = append(t.rdmaCtl, []rdsoverdat.ControlMessage{rdsoverdat.RDMADest(ck)})
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
	in := make([]byte, max(t.reply, t.size)+hdrLen)
	ans := make([]byte, t.reply)
	var seq uint64
	outstanding := 0
	send := func() error {
		h := stressHdr(out)
		h.encode(opRequest, uint16(t.id), seq, int64(time.Since(c.t0)), uint32(t.reply))
		if c.p.verify {
			h.setFlag(verifyBit)
			fillPattern(out[hdrLen:], seq)
		}
		var err error
		t1 := time.Now()
		if c.p.rdma == rdmaNone {
			_, err = t.s.SendTo(out, t.dst, 0)
		} else {
			slot := seq % uint64(c.p.depth)
			write := c.p.rdma.writes(seq)
			h.SetRDMA(c.p.rdmaSize, write)
			if write {
				clear(t.rdmaMem[slot])
			} else if c.p.verify {
				fillPattern(t.rdmaMem[slot], seq)
			}
			_, err = t.s.SendMsg(&rdsoverdat.Msg{Data: out, Addr: t.dst, Control: t.rdmaCtl[slot]}, 0)
		}
		t.sendNS.Add(uint64(time.Since(t1)))
		t.sends.Add(1)
		if err != nil {
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
		if len(m.Control) > 0 {
			continue // congestion updates
		}
		h, err := parseHdr(in[:n])
		if err != nil || int(h.Task()) != t.id {
			continue
		}
		if h.Op() == opRequest {
			// The passive side's own request: answer it, as it answers ours.
			if err := c.answer(t, h, in[:n], ans, m.Addr); err != nil {
				return err
			}
			continue
		}
		if h.Op() != opAck {
			continue
		}
		t.lat.record(time.Since(c.t0) - time.Duration(h.Stamp()))
		if h.flag(corruptBit) {
			return fmt.Errorf("the passive side found request %d's payload damaged (-v)", h.Seq())
		}
		if c.p.verify && n > hdrLen {
			if off := checkPattern(in[hdrLen:n], h.Seq()); off >= 0 {
				return fmt.Errorf("the answer to request %d is damaged at payload offset %d (-v)", h.Seq(), off)
			}
		}
		if c.p.rdma != rdmaNone {
			if err := c.checkRDMA(t, h.Seq()); err != nil {
				return err
			}
			if c.p.rdma.writes(h.Seq()) {
				t.rdmaIn.Add(uint64(c.p.rdmaSize))
			} else {
				t.rdmaOut.Add(uint64(c.p.rdmaSize))
			}
		}
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

// answer answers the peer's request req (its header h) from to with an
// ack of the length it asks for, checking and filling the -v pattern.
func (c *client) answer(t *task, h stressHdr, req, ans []byte, to netip.AddrPort) error {
	if int(h.Reply()) > len(ans) {
		ans = make([]byte, h.Reply())
	}
	a := ans[:h.Reply()]
	copy(a, h)
	ah := stressHdr(a)
	ah.SetOp(opAck)
	if h.flag(verifyBit) {
		if off := checkPattern(req[hdrLen:], h.Seq()); off >= 0 {
			return fmt.Errorf("the passive side's request %d is damaged at payload offset %d (-v)", h.Seq(), off)
		}
		fillPattern(a[hdrLen:], h.Seq())
	}
	t1 := time.Now()
	_, err := t.s.SendTo(a, to, 0)
	t.sendNS.Add(uint64(time.Since(t1)))
	t.sends.Add(1)
	if err != nil {
		return err
	}
	t.rxReqs.Add(1)
	t.rxB.Add(uint64(len(req)))
	t.txB.Add(uint64(len(a)))
	return nil
}

// checkRDMA checks, for an RDMA WRITE, that the server's data is in the
// slot of request seq when its answer arrives (RDS promises the transfer
// completes first): the first, middle and last bytes suffice to catch an
// answer that overtook its RDMA; -v checks every byte.
func (c *client) checkRDMA(t *task, seq uint64) error {
	if !c.p.rdma.writes(seq) {
		return nil
	}
	b := t.rdmaMem[seq%uint64(c.p.depth)]
	if b[0] != rdmaPattern || b[len(b)/2] != rdmaPattern || b[len(b)-1] != rdmaPattern {
		return fmt.Errorf("the answer to request %d arrived before its RDMA WRITE's data", seq)
	}
	if c.p.verify {
		for i, v := range b {
			if v != rdmaPattern {
				return fmt.Errorf("request %d's RDMA WRITE data is damaged at offset %d (-v)", seq, i)
			}
		}
	}
	return nil
}
