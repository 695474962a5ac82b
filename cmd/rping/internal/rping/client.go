package rping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/godapl/godapl/verbs"
)

// ConnectError is a failed connection setup, reported in the words of
// rping: the rdma_cm event it stands for and its status, an errno.
type ConnectError struct {
	Addr   string
	Event  verbs.ConnEventType
	Status int // negative errno, as rdma_cm reports it
	Err    error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("cma event RDMA_CM_EVENT_%s, error %d (connect to %s: %v)", e.Event, e.Status, e.Addr, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

func newConnectError(addr string, err error) *ConnectError {
	ce := &ConnectError{Addr: addr, Event: verbs.ConnEventOf(err), Err: err}
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		ce.Status = -int(errno)
	case ce.Event == verbs.ConnEventRejected:
		ce.Status = -int(syscall.ECONNREFUSED) // what siw reports for a reset or an MPA reject
	case ce.Event == verbs.ConnEventUnreachable:
		ce.Status = -int(syscall.ETIMEDOUT)
	default:
		ce.Status = -int(syscall.EIO)
	}
	return ce
}

// Client runs rping's client: it connects dev to the rping server at addr
// ("host:port"), pings cfg.Count times (forever with 0) and disconnects.
// It returns nil when every ping completed (and, with Validate, came back
// intact); a *ConnectError when no connection came up within
// ConnectTimeout; the context's cause when ctx ended first.
func Client(ctx context.Context, dev verbs.Device, addr string, cfg Config) error {
	cfg = cfg.withDefaults()
	if err := cfg.check(); err != nil {
		return err
	}
	o := newOutput(&cfg)
	e, err := newEndpoint(dev, &cfg, o, "client")
	if err != nil {
		return err
	}
	defer e.close()
	start := make([]byte, cfg.Size) // rping's start_buf, the source the server reads
	startMR, err := e.reg(start, rdmaAccess)
	if err != nil {
		return fmt.Errorf("start_buf reg_mr failed: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	conn, err := dev.Connect(cctx, e.qp, addr, verbs.ConnParam{
		ResponderResources: 1, InitiatorDepth: 1, LocalAddr: cfg.LocalAddr,
	})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return newConnectError(addr, err)
	}
	e.attach(ctx, conn)
	o.debugf("rdma_connect successful\n")
	err = e.runClient(start, startMR)
	if errors.Is(err, ErrDisconnected) && cfg.Count == 0 {
		return nil // a client pinging forever ends when the server goes away
	}
	return err
}

// runClient is rping_test_client.
func (e *endpoint) runClient(start []byte, startMR verbs.MR) error {
	c := FirstStart
	for ping := 0; e.cfg.Count == 0 || ping < e.cfg.Count; ping++ {
		FillPing(start, ping, c)
		c = NextStart(c)

		// The source: the server RDMA Reads it and says go ahead.
		e.advertise(startMR)
		if err := e.post(e.sendWR[:]); err != nil {
			return err
		}
		if err := e.expect(evRecv, "RDMA_WRITE_ADV", ping); err != nil {
			return err
		}
		// The sink: the server RDMA Writes what it read and says go ahead.
		e.advertise(e.rdmaMR)
		if err := e.post(e.sendWR[:]); err != nil {
			return err
		}
		if err := e.expect(evRecv, "RDMA_WRITE_COMPLETE", ping); err != nil {
			return err
		}
		if e.cfg.Validate && !bytes.Equal(start, e.rdmaBuf) {
			return errors.New("data mismatch!")
		}
		if e.cfg.Verbose {
			e.o.out.line("ping data: ", cString(e.rdmaBuf))
		}
	}
	return nil
}

// advertise fills the send buffer with Info naming mr (rping_format_send).
func (e *endpoint) advertise(mr verbs.MR) {
	e.sendBuf.SetBuf(mr.Addr())
	e.sendBuf.SetRKey(mr.RKey())
	e.sendBuf.SetSize(uint32(e.cfg.Size))
	e.o.debugf("RDMA addr %x rkey %x len %d\n", e.sendBuf.Buf(), e.sendBuf.RKey(), e.sendBuf.Size())
}

// expect waits for the next event and fails unless it is want; state is
// the rping state the wait stands for, for the error message.
func (e *endpoint) expect(want event, state string, ping int) error {
	ev, err := e.next(state)
	if err != nil {
		if errors.Is(err, ErrDisconnected) {
			return fmt.Errorf("ping %d: wait for %s: peer disconnected: %w", ping, state, err)
		}
		return fmt.Errorf("ping %d: wait for %s: %w", ping, state, err)
	}
	if ev != want {
		return fmt.Errorf("ping %d: wait for %s: got %s", ping, state, ev)
	}
	return nil
}
