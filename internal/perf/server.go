package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"sync"

	"github.com/godapl/godapl/verbs"
)

// Server answers test connections on a verbs device until Close.
type Server struct {
	dev    verbs.Device
	l      verbs.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

// Serve listens on addr ("ip:port") and serves each connection in its own
// goroutine.
func Serve(ctx context.Context, dev verbs.Device, addr string) (*Server, error) {
	l, err := dev.Listen(addr, 16)
	if err != nil {
		return nil, err
	}
	s := &Server{dev: dev, l: l}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr is the listening address.
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Close stops the server and waits for its connections to end.
func (s *Server) Close() error {
	s.cancel()
	s.l.Close()
	s.wg.Wait()
	return nil
}

// Errors returns the errors connections ended with.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		req, err := s.l.Accept(s.ctx)
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.serve(req); err != nil && s.ctx.Err() == nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
			}
		}()
	}
}

// creditLen is the size of a credit message: the number of receives the
// server re-posted since its last credit message.
const creditLen = 4

func (s *Server) serve(cr verbs.ConnRequest) error {
	r, err := parseRequest(cr.PrivateData())
	if err != nil {
		cr.Reject([]byte(err.Error()))
		return err
	}
	size, depth := int(r.size), int(r.depth)
	var bufSize, rq int
	switch r.test {
	case TestWrite:
		bufSize, rq = size, 1
	case TestSendRate:
		bufSize, rq = depth*size+creditLen, depth
	case TestPingPong:
		bufSize, rq = 2*size, 1
		depth = 1
	}
	e, err := newEndpoint(s.dev, bufSize, 64, rq)
	if err != nil {
		cr.Reject(nil)
		return err
	}
	defer e.close()
	if r.test != TestWrite {
		for i := 0; i < depth; i++ {
			if err = e.queueRecv(uint64(i), i*size, size); err != nil {
				break
			}
		}
		if err == nil {
			err = e.postRecvs()
		}
		if err != nil {
			cr.Reject(nil)
			return err
		}
	}
	var pd [replyLen]byte
	rep := reply{addr: e.mr.Addr(), rkey: e.mr.RKey(), size: uint32(len(e.buf))}
	if e.conn, err = cr.Accept(e.qp, verbs.ConnParam{PrivateData: rep.append(pd[:0])}); err != nil {
		return err
	}
	ctx, cancel := ctxUntilDone(s.ctx, e.conn)
	defer cancel()
	switch r.test {
	case TestWrite:
		<-ctx.Done() // the client's writes and reads need no help from us
		return nil
	case TestSendRate:
		return e.sinkSends(ctx, size, depth)
	default:
		return e.echo(ctx, size)
	}
}

// sinkSends re-posts the receives of each poll in one call and returns
// credits to the client in batches: when a quarter of the receives were consumed, or when
// the receive CQ runs dry, so that the client's last credits come back.
func (e *endpoint) sinkSends(ctx context.Context, size, depth int) error {
	creditOff := depth * size
	pending, sent := 0, 0
	sgl := [1]verbs.SGE{e.sge(creditOff, creditLen)}
	wr := [1]verbs.SendWR{{Opcode: verbs.OpSend, SGL: sgl[:], Flags: verbs.SendInline}}
	var scratch [16]verbs.WC
	for {
		n, err := e.poll(ctx, e.rcq)
		if err != nil {
			return ignoreEnd(err)
		}
		for i := 0; i < n; i++ {
			wc := &e.wcs[i]
			if wc.Status != verbs.WCSuccess {
				return ignoreEnd(&WCError{WC: *wc})
			}
			if err := e.queueRecv(wc.ID, int(wc.ID)*size, size); err != nil {
				return ignoreEnd(err)
			}
			pending++
		}
		if err := e.postRecvs(); err != nil {
			return ignoreEnd(err)
		}
		if pending >= depth/4 || e.rcq.Len() == 0 {
			binary.BigEndian.PutUint32(e.buf[creditOff:], uint32(pending))
			sent++
			wr[0].Flags = verbs.SendInline
			if sent%16 == 0 {
				wr[0].Flags |= verbs.SendSignaled
			}
			if _, err := e.qp.PostSend(wr[:]); err != nil {
				return ignoreEnd(err)
			}
			pending = 0
			e.scq.Poll(scratch[:])
		}
	}
}

// echo answers every message with one of the same size.
func (e *endpoint) echo(ctx context.Context, size int) error {
	sgl := [1]verbs.SGE{e.sge(size, size)}
	wr := [1]verbs.SendWR{{Opcode: verbs.OpSend, SGL: sgl[:], Flags: verbs.SendSignaled}}
	var scratch [16]verbs.WC
	for {
		n, err := e.poll(ctx, e.rcq)
		if err != nil {
			return ignoreEnd(err)
		}
		if err := e.checkWCs(n); err != nil {
			return ignoreEnd(err)
		}
		for i := 0; i < n; i++ {
			if err := e.postRecvSlot(0, size); err != nil {
				return ignoreEnd(err)
			}
			if _, err := e.qp.PostSend(wr[:]); err != nil {
				return ignoreEnd(err)
			}
		}
		e.scq.Poll(scratch[:])
	}
}

// ignoreEnd drops the errors a connection normally ends with: the client
// disconnecting flushes our receives.
func ignoreEnd(err error) error {
	var wce *WCError
	if errors.Is(err, context.Canceled) || errors.Is(err, verbs.ErrClosed) ||
		(errors.As(err, &wce) && wce.WC.Status == verbs.WCWRFlushErr) {
		return nil
	}
	return err
}
