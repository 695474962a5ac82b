package main

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/rs/zerolog"
)

// server is the passive side: a control socket on the base port answers
// hellos by binding task sockets on base+1, base+2, ... (kept for later
// clients), and each task socket answers every request with an ack of the
// length the request asks for, echoing its header. The server keeps no
// per-client state, so any number of clients may run against it, one
// after another or at once.
type server struct {
	st     *rdsoverdat.Stack
	base   netip.AddrPort
	bufLen int // SO_SNDBUF and SO_RCVBUF of every socket
	log    zerolog.Logger

	mu    sync.Mutex
	tasks []*rdsoverdat.Socket
	wg    sync.WaitGroup // task socket goroutines
}

// maxTasks bounds a hello's task count: one RDS port each above the base.
const maxTasks = 1024

func newServer(st *rdsoverdat.Stack, base netip.AddrPort, bufLen int, log zerolog.Logger) *server {
	return &server{st: st, base: base, bufLen: bufLen, log: log}
}

// run serves until ctx ends; ctl is the bound control socket. Closing
// the stack (the caller's job, after run returns) ends the task sockets.
func (sv *server) run(ctx context.Context, ctl *rdsoverdat.Socket) error {
	defer sv.wg.Wait()
	defer sv.closeTasks()
	stop := context.AfterFunc(ctx, func() { ctl.Close() })
	defer stop()
	buf := make([]byte, maxMsg)
	for {
		m := rdsoverdat.Msg{Data: buf}
		n, err := ctl.RecvMsg(&m, 0)
		if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(m.Control) > 0 {
			continue
		}
		h, err := parseHdr(buf[:n])
		if err != nil || h.Op() != opHello {
			sv.log.Debug().Err(err).Stringer("from", m.Addr).Msg("ignored control message")
			continue
		}
		want := int(h.Task())
		status := uint32(0)
		if err := sv.ensureTasks(want); err != nil {
			sv.log.Warn().Err(err).Int("tasks", want).Msg("hello refused")
			status = 1
		}
		reply := make([]byte, hdrLen)
		copy(reply, h)
		rh := stressHdr(reply)
		rh.SetOp(opHelloReply)
		rh.SetStatus(status)
		if _, err := ctl.SendTo(reply, m.Addr, 0); err != nil {
			sv.log.Warn().Err(err).Stringer("to", m.Addr).Msg("hello reply")
		}
		sv.log.Info().Stringer("client", m.Addr).Int("tasks", want).Msg("hello")
	}
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

// serveTask answers each request on s until s is closed.
func (sv *server) serveTask(s *rdsoverdat.Socket) {
	defer sv.wg.Done()
	in := make([]byte, maxMsg)
	out := make([]byte, maxMsg)
	for {
		m := rdsoverdat.Msg{Data: in}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return // closed
		}
		if len(m.Control) > 0 {
			continue
		}
		h, err := parseHdr(in[:n])
		if err != nil || h.Op() != opRequest {
			continue
		}
		copy(out, h)
		stressHdr(out).SetOp(opAck)
		if _, err := s.SendTo(out[:h.Reply()], m.Addr, 0); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			sv.log.Debug().Err(err).Stringer("to", m.Addr).Msg("ack")
		}
	}
}
