package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/rs/zerolog"
)

// server is the passive side: a control socket on the base port answers
// hellos by binding task sockets on base+1, base+2, ... (kept for later
// hellos), and each task socket answers every request with an ack of the
// length the request asks for, echoing its header. A run begins with a
// hello and ends with the active side's goodbye; run returns when every
// run that began has ended, as the real tool's passive instance ends
// with its active one.
type server struct {
	st     *rdsoverdat.Stack
	base   netip.AddrPort
	bufLen int // SO_SNDBUF and SO_RCVBUF of every socket
	log    zerolog.Logger

	mu    sync.Mutex
	tasks []*rdsoverdat.Socket
	wg    sync.WaitGroup // task socket goroutines

	reqs     atomic.Uint64 // requests answered
	bytes    atomic.Uint64 // bytes sent and received
	ownReqs  atomic.Uint64 // requests of its own sent (two-way runs)
	ownAcks  atomic.Uint64 // answers to them received
	rttNS    atomic.Uint64 // their round trips, summed
	sendNS   atomic.Uint64 // time spent sending answers
	rdmaIn   atomic.Uint64 // bytes RDMA READs brought into this node
	rdmaOut  atomic.Uint64 // bytes RDMA WRITEs took out of this node
	lastSeen atomic.Int64  // UnixNano of the last request

	cur atomic.Pointer[runState] // the run the last hello began
	t0  time.Time                // origin of its requests' stamps
}

// runState is one run as its hello described it; the task sockets read
// it to send requests of their own, and the goodbye stops them.
type runState struct {
	p        helloParams
	stopping atomic.Bool
}

// maxTasks bounds a hello's task count: one RDS port each above the base.
const maxTasks = 1024

func newServer(st *rdsoverdat.Stack, base netip.AddrPort, bufLen int, log zerolog.Logger) *server {
	return &server{st: st, base: base, bufLen: bufLen, log: log, t0: time.Now()}
}

// errSilent ends a run whose active side stopped sending for longer than
// the idle limit without a goodbye (it died, or the network did).
var errSilent = errors.New("the active instance went silent")

// run serves until ctx ends or every run that said hello has said
// goodbye; a run whose tasks stay silent for idle ends it with errSilent.
// ctl is the bound control socket. Closing the stack (the caller's job,
// after run returns) ends the task sockets.
func (sv *server) run(ctx context.Context, ctl *rdsoverdat.Socket, idle time.Duration) error {
	defer sv.wg.Wait()
	defer sv.closeTasks()
	stop := context.AfterFunc(ctx, func() { ctl.Close() })
	defer stop()
	runs := map[uint64]netip.AddrPort{}
	buf := make([]byte, maxMsg)
	for {
		if len(runs) > 0 {
			ctl.SetReadDeadline(time.Unix(0, sv.lastSeen.Load()).Add(idle))
		} else {
			ctl.SetReadDeadline(time.Time{})
		}
		m := rdsoverdat.Msg{Data: buf}
		n, err := ctl.RecvMsg(&m, 0)
		if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
			return nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if time.Since(time.Unix(0, sv.lastSeen.Load())) >= idle {
				for _, from := range runs {
					return fmt.Errorf("%w: nothing from %v for %v, and no goodbye", errSilent, from, idle)
				}
			}
			continue
		}
		if err != nil {
			return err
		}
		if len(m.Control) > 0 {
			continue
		}
		h, err := parseHdr(buf[:n])
		if err != nil || (h.Op() != opHello && h.Op() != opBye) {
			sv.log.Debug().Err(err).Stringer("from", m.Addr).Msg("ignored control message")
			continue
		}
		reply := make([]byte, hdrLen)
		copy(reply, h)
		if h.Op() == opBye {
			if _, err := ctl.SendTo(reply, m.Addr, 0); err != nil {
				sv.log.Debug().Err(err).Stringer("to", m.Addr).Msg("goodbye answer")
			}
			if _, ok := runs[h.Seq()]; ok {
				delete(runs, h.Seq())
				if rs := sv.cur.Load(); rs != nil && len(runs) == 0 {
					rs.stopping.Store(true)
				}
				sv.log.Info().Stringer("client", m.Addr).Msg("goodbye")
				if len(runs) == 0 {
					return nil
				}
			}
			continue
		}
		want := int(h.Task())
		status := uint32(0)
		hp, err := parseHello(buf[hdrLen:n])
		if err == nil {
			err = sv.ensureTasks(want)
		}
		if err != nil {
			sv.log.Warn().Err(err).Int("tasks", want).Msg("hello refused")
			status = 1
		} else {
			runs[h.Seq()] = m.Addr
			sv.cur.Store(&runState{p: hp})
			sv.lastSeen.Store(time.Now().UnixNano())
		}
		rh := stressHdr(reply)
		rh.SetOp(opHelloReply)
		rh.SetStatus(status)
		if _, err := ctl.SendTo(reply, m.Addr, 0); err != nil {
			sv.log.Warn().Err(err).Stringer("to", m.Addr).Msg("hello reply")
		}
		sv.log.Info().Stringer("client", m.Addr).Int("tasks", want).Msg("hello")
	}
}

// taskCount is the number of task sockets bound.
func (sv *server) taskCount() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return len(sv.tasks)
}

// ensureTasks binds task sockets up to n.
func (sv *server) ensureTasks(n int) error {
	if n < 1 || n > maxTasks {
		return rdstool.Usagef("%d tasks: want 1-%d", n, maxTasks)
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	for i := len(sv.tasks); i < n; i++ {
		a := netip.AddrPortFrom(sv.base.Addr(), sv.base.Port()+1+uint16(i))
		s, err := rdstool.Bind(sv.st, a, sv.bufLen, sv.bufLen)
		if err != nil {
			return err
		}
		sv.tasks = append(sv.tasks, s)
		sv.wg.Add(1)
		go sv.serveTask(s)
	}
	return nil
}

func (sv *server) closeTasks() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	for _, s := range sv.tasks {
		s.Close()
	}
}

// serveTask answers each request on s until s is closed. A request that
// carries a cookie (RDMADest) and asks for RDMA gets its answer with an
// RDMAArgs: the transport runs the RDMA READ or WRITE on the client's
// memory before it sends the answer.
func (sv *server) serveTask(s *rdsoverdat.Socket) {
	defer sv.wg.Done()
	s.SetOption(rdsoverdat.RecvErr(true)) // failed RDMA ops come back as notifications
	in := make([]byte, maxMsg)
	out := make([]byte, maxMsg)
	// RDMA buffers, made on first use: src holds the pattern WRITEs send
	// and is never written; sink takes what READs fetch (concurrent
	// READs may mix there, and nobody reads it).
	var src, sink []byte
	ctl := make([]rdsoverdat.ControlMessage, 0, 4)
	own := &ownRequests{sv: sv, s: s}
	for {
		m := rdsoverdat.Msg{Data: in, Control: ctl[:0]}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return // closed
		}
		var cookie rdsoverdat.Cookie
		hasCookie, notice := false, false
		for _, c := range m.Control {
			switch v := c.(type) {
			case rdsoverdat.RDMADest:
				cookie, hasCookie = rdsoverdat.Cookie(v), true
			case rdsoverdat.RDMANotify:
				sv.log.Warn().Stringer("status", v.Status).Msg("RDMA op failed")
				notice = true
			default:
				notice = true // congestion updates
			}
		}
		if notice {
			continue
		}
		h, err := parseHdr(in[:n])
		if err != nil {
			continue
		}
		if h.Op() == opAck {
			if err := own.acked(h, in[:n], m.Addr); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				sv.log.Warn().Err(err).Stringer("from", m.Addr).Msg("answer to our request")
			}
			continue
		}
		if h.Op() != opRequest {
			continue
		}
		sv.lastSeen.Store(time.Now().UnixNano())
		copy(out, h)
		oh := stressHdr(out)
		oh.SetOp(opAck)
		if h.flag(verifyBit) {
			if off := checkPattern(in[hdrLen:n], h.Seq()); off >= 0 {
				sv.log.Warn().Uint64("seq", h.Seq()).Int("offset", off).Stringer("from", m.Addr).Msg("damaged payload (-v)")
				oh.setFlag(corruptBit)
			}
			fillPattern(out[hdrLen:h.Reply()], h.Seq())
		}
		sv.reqs.Add(1)
		sv.bytes.Add(uint64(n) + uint64(h.Reply()))
		reply := rdsoverdat.Msg{Data: out[:h.Reply()], Addr: m.Addr}
		if size, write := h.RDMA(); size > 0 && size <= rdsoverdat.DefaultRDMAMaxBytes && hasCookie {
			args := rdsoverdat.RDMAArgs{Cookie: cookie, RemoteBytes: uint64(size)}
			if write {
				if src == nil {
					src = sharedMem(s, rdsoverdat.DefaultRDMAMaxBytes)
					copy(src, bytes.Repeat([]byte{rdmaPattern}, len(src)))
				}
				args.Flags, args.Local = rdsoverdat.RDMAReadWrite, [][]byte{src[:size]}
			} else {
				if sink == nil {
					sink = sharedMem(s, rdsoverdat.DefaultRDMAMaxBytes)
				}
				args.Local = [][]byte{sink[:size]}
			}
			reply.Control = []rdsoverdat.ControlMessage{args}
		}
		t1 := time.Now()
		_, err = s.SendMsg(&reply, 0)
		sv.sendNS.Add(uint64(time.Since(t1)))
		if size, write := h.RDMA(); err == nil && len(reply.Control) > 0 {
			if write {
				sv.rdmaOut.Add(uint64(size))
			} else {
				sv.rdmaIn.Add(uint64(size))
			}
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			sv.log.Debug().Err(err).Stringer("to", m.Addr).Msg("ack")
		}
		// A two-way run: the first request of the run names the peer task,
		// to which this one keeps its own window of requests.
		if err := own.start(h.Task(), m.Addr); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			sv.log.Debug().Err(err).Stringer("to", m.Addr).Msg("request")
		}
	}
}

// sharedMem returns RDMA memory for s's ops (Socket.SharedMem: memory
// the daemon can reach with --rdsd), or ordinary memory if that fails,
// whose ops then fail with ErrNotShared and are reported as such.
func sharedMem(s *rdsoverdat.Socket, n int) []byte {
	if b, err := s.SharedMem(n); err == nil {
		return b
	}
	return make([]byte, n)
}
