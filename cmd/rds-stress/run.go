package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

// passive serves the runs of active instances on -r (or on every local
// IPv4 address, as the real tool accepts on all interfaces) and returns
// once they have ended, or on an interrupt.
func (o *options) passive(ctx context.Context, stdout io.Writer) error {
	var addrs []netip.Addr
	if o.local != "" {
		a, err := rdstool.ResolveAddr(ctx, "-r", o.local)
		if err != nil {
			return err
		}
		addrs = []netip.Addr{a}
	} else {
		var err error
		if addrs, err = localAddrs(); err != nil {
			return err
		}
	}
	st, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	var servers []*server
	var ctls []*rdsoverdat.Socket
	var bound []netip.AddrPort
	for _, a := range addrs {
		base := netip.AddrPortFrom(a, uint16(o.port))
		ctl, err := rdstool.Bind(st, base, 0, 0)
		if err != nil {
			if o.local != "" {
				return err
			}
			o.common.Logger.Warn().Err(err).Msg("not serving this address")
			continue
		}
		servers, ctls, bound = append(servers, newServer(st, base, 8<<20, o.common.Logger)), append(ctls, ctl), append(bound, base)
	}
	if len(servers) == 0 {
		return fmt.Errorf("no local address could be served on RDS port %d (see the warnings; give one with -r)", o.port)
	}
	info, err := o.common.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	fmt.Fprintf(stdout, "rds-stress: passive on %v over %s (task sockets from port %d); waiting for an active instance (-s)\n",
		bound, o.common.TransportName(), o.port+1)
	// The first server whose runs end ends the others: one active
	// instance, one passive run, as in the real tool.
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	if !o.summary {
		done := make(chan struct{})
		defer close(done)
		go passiveProgress(stdout, servers, o.interval, o.cpu, done)
	}
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, sv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = sv.run(sctx, ctls[i], o.timeout)
			stop()
		}()
	}
	wg.Wait()
	stop()
	var reqs, bytes uint64
	for _, sv := range servers {
		reqs, bytes = reqs+sv.reqs.Load(), bytes+sv.bytes.Load()
	}
	state := "done"
	if ctx.Err() != nil {
		state = "interrupted"
	}
	fmt.Fprintf(stdout, "rds-stress: passive %s: %d requests answered, %.2f MB moved\n", state, reqs, float64(bytes)/1e6)
	rdstool.Linger(ctx, st) // let the transport acknowledge the goodbye's answer
	return errors.Join(errs...)
}

// randomLoopback returns 127.X.Y.last for random X in 1-99 and Y in
// 1-254: an address no other tool is likely to use. It stays out of
// 127.0/16, where hosts run their own services, and out of
// 127.100-199/16, whose blocks the project's tests claim
// (internal/testutil.LoopbackAddr), so that a demo run beside them never
// takes one of their addresses.
func randomLoopback(last byte) netip.Addr {
	return netip.AddrFrom4([4]byte{127, byte(1 + rand.IntN(99)), byte(1 + rand.IntN(254)), last})
}

// localAddrs lists the host's IPv4 addresses.
func localAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing local addresses: %w", err)
	}
	var out []netip.Addr
	for _, ifa := range ifas {
		if p, ok := ifa.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(p.IP); ok && a.Unmap().Is4() {
				out = append(out, a.Unmap())
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the host has no IPv4 address: give one with -r")
	}
	return out, nil
}

// client runs one workload against the passive instance at server.
func (o *options) client(ctx context.Context, p params, local netip.Addr, server netip.AddrPort, stdout, stderr io.Writer) error {
	st, err := o.common.NewStack(rdsoverdat.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	info, err := o.common.ServeInfo(st)
	if err != nil {
		return err
	}
	defer info.Close()
	return o.workload(ctx, st, p, local, server, stdout, stderr, o.histogram)
}

// workload says hello, runs the tasks with progress lines, says goodbye
// and prints the result.
func (o *options) workload(ctx context.Context, st *rdsoverdat.Stack, p params, local netip.Addr, server netip.AddrPort,
	stdout, stderr io.Writer, histogram bool) error {
	c := &client{st: st, local: local, server: server, p: p}
	if o.showPrm && !o.json {
		o.showParams(stdout, p, local, server)
	}
	if err := c.hello(ctx); err != nil {
		if ctx.Err() != nil {
			return rdstool.Interruptedf("before %v answered the hello: nothing measured", server)
		}
		return err
	}
	if err := c.start(); err != nil {
		c.bye()
		return err
	}
	defer c.close()
	progress := stdout
	if o.json {
		progress = stderr
	}
	c.t0 = time.Now()
	var end time.Time
	if p.duration > 0 {
		end = c.t0.Add(p.duration)
	}
	r := &reporter{c: c, out: progress, every: o.interval, quiet: o.summary}
	r.start()
	runErr := c.run(ctx, end)
	r.finish()
	c.bye()
	res := c.result(o.common.TransportName(), time.Since(c.t0).Seconds(), r)
	res.Interrupted = ctx.Err() != nil
	if runErr != nil {
		res.Error = runErr.Error()
	}
	if o.json {
		if err := res.writeJSON(stdout); err != nil {
			return err
		}
	} else {
		res.printTable(stdout, histogram)
	}
	return runErr
}

// showParams prints the run's parameters (--show-params).
func (o *options) showParams(w io.Writer, p params, local netip.Addr, server netip.AddrPort) {
	ack := "the request's size"
	if p.ack > 0 {
		ack = fmt.Sprint(p.ack)
	} else if p.oneway {
		ack = fmt.Sprint(hdrLen)
	}
	fmt.Fprintf(w, "Options:\n  tasks %d, depth %d, req bytes %v, ack bytes %s, one-way %v\n"+
		"  rdma %s, rdma bytes %d, verify %v, run time %v\n  local %v, remote %v, transport %s\n",
		p.tasks, p.depth, p.sizes, ack, p.oneway, p.rdma, p.rdmaSize, p.verify, p.duration, local, server, o.common.TransportName())
}

// runDemo runs a passive node and an active node in this process, each
// its own Stack as if on two hosts, on a pair of loopback addresses
// picked at random (127.X.Y.1 and 127.X.Y.2) so that two demos, or a
// demo and a running node, do not collide; a pair found taken is
// skipped.
func (o *options) runDemo(ctx context.Context, p params, stdout, stderr io.Writer) error {
	if !o.isSet("q", "req-bytes") {
		p.sizes = demoSizes
	}
	if !o.isSet("t", "tasks") {
		p.tasks = demoTasks
	}
	if !o.isSet("d", "depth") {
		p.depth = demoDepth
	}
	if !o.isSet("T", "time") {
		p.duration = demoDuration
	}
	var (
		sst, cst *rdsoverdat.Stack
		ctl      *rdsoverdat.Socket
		base     netip.AddrPort
		local    netip.Addr
		err      error
	)
	for try := 0; ; try++ {
		local = randomLoopback(1)
		base = netip.AddrPortFrom(local.Next(), uint16(o.port))
		if sst, err = o.common.NewStack(rdsoverdat.Config{}); err != nil {
			return err
		}
		if ctl, err = rdstool.Bind(sst, base, 0, 0); err == nil {
			break
		}
		sst.Close()
		if !errors.Is(err, syscall.EADDRINUSE) || try == 8 {
			return err
		}
	}
	defer sst.Close()
	if cst, err = o.common.NewStack(rdsoverdat.Config{}); err != nil {
		return err
	}
	defer cst.Close()
	info, err := o.common.ServeInfo(cst, sst)
	if err != nil {
		return err
	}
	defer info.Close()

	// The passive node stops when the active one says goodbye, even after
	// an interrupt, so that the answers in flight still come back.
	sctx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	srvDone := make(chan error, 1)
	go func() { srvDone <- newServer(sst, base, 8<<20, o.common.Logger).run(sctx, ctl, o.timeout) }()
	if !o.json {
		fmt.Fprintf(stdout, "rds-stress: active node %v -> passive node %v in this process, over %s\n",
			local, base, o.common.TransportName())
	}
	err = o.workload(ctx, cst, p, local, base, stdout, stderr, true)
	stopServer()
	if serr := <-srvDone; err == nil {
		err = serr
	}
	return err
}

// passiveSnap sums the passive servers' counters at one instant.
type passiveSnap struct {
	at                                   time.Time
	tasks                                int
	reqs, bytes, sendNS, rdmaIn, rdmaOut uint64
	ownReqs, ownAcks, rttNS              uint64
	cpu                                  time.Duration
}

func snapPassive(servers []*server) passiveSnap {
	s := passiveSnap{at: time.Now(), cpu: cpuTime()}
	for _, sv := range servers {
		s.tasks += sv.taskCount()
		s.reqs += sv.reqs.Load()
		s.bytes += sv.bytes.Load()
		s.sendNS += sv.sendNS.Load()
		s.rdmaIn += sv.rdmaIn.Load()
		s.rdmaOut += sv.rdmaOut.Load()
		s.ownReqs += sv.ownReqs.Load()
		s.ownAcks += sv.ownAcks.Load()
		s.rttNS += sv.rttNS.Load()
	}
	return s
}

// passiveProgress prints, every interval while a run is on, the passive
// side's line in the real tool's columns: the requests it sends (tx/s,
// none in a one-way run) and receives (rx/s), the bytes both ways, the
// RDMA its answers moved, the time its sends took and the round trip of
// its own requests. It stops when done closes.
func passiveProgress(w io.Writer, servers []*server, every time.Duration, cpu bool, done <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev, header := snapPassive(servers), false
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		cur := snapPassive(servers)
		if cur.tasks == 0 {
			prev = cur
			continue
		}
		if !header {
			fmt.Fprintln(w, progressHeader)
			header = true
		}
		dt := cur.at.Sub(prev.at).Seconds()
		iv := interval{Tasks: cur.tasks, TxPerS: float64(cur.ownReqs-prev.ownReqs) / dt, RxPerS: float64(cur.reqs-prev.reqs) / dt,
			KBPerS: float64(cur.bytes-prev.bytes) / dt / 1024, MbiKBs: float64(cur.rdmaIn-prev.rdmaIn) / dt / 1024,
			MboKBs: float64(cur.rdmaOut-prev.rdmaOut) / dt / 1024, CPUPct: -1}
		if n := cur.reqs - prev.reqs + cur.ownReqs - prev.ownReqs; n > 0 {
			iv.TxUSPC = float64(cur.sendNS-prev.sendNS) / float64(n) / 1e3
		}
		if n := cur.ownAcks - prev.ownAcks; n > 0 {
			iv.RttUS = float64(cur.rttNS-prev.rttNS) / float64(n) / 1e3
		}
		if cpu {
			iv.CPUPct = cpuPercent(cur.cpu-prev.cpu, cur.at.Sub(prev.at))
		}
		fmt.Fprintln(w, iv.line())
		prev = cur
	}
}
