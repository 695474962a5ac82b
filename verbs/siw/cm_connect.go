package siw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The active side of the connection manager: TCP connect, MPA Request,
// MPA Reply, and in peer-to-peer mode the RTR frame (sent by tx as the
// stream's first FPDU).

// connectError is a failed Connect: the rdma_cm event class it stands for
// (a *verbs.RejectError, verbs.ErrUnreachable) next to what TCP or MPA
// reported, so that errors.Is and verbs.ConnEventOf see both.
type connectError struct {
	addr  string
	class error
	err   error
}

func (e *connectError) Error() string {
	return fmt.Sprintf("siw: connect %s: %v (%v)", e.addr, e.err, e.class)
}

func (e *connectError) Unwrap() []error { return []error{e.class, e.err} }

// Connect implements verbs.Device.
//
// The kernel's rdma_cm is the model for the errors: a refused TCP
// connection, a peer that closes during the handshake and an MPA reject
// are REJECTED (a *verbs.RejectError, with the peer's private data for a
// reject); no answer in time (TCP, or the 10 s MPA Reply timer) is
// UNREACHABLE; anything else is a CONNECT_ERROR.
func (d *Device) Connect(ctx context.Context, qp verbs.QP, addr string, p verbs.ConnParam) (verbs.Conn, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, verbs.ErrClosed
	}
	sqp, err := d.ownQP(qp)
	if err != nil {
		return nil, err
	}
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, fmt.Errorf("siw: %d bytes of private data: %w", len(p.PrivateData), verbs.ErrInvalidArgument)
	}
	if p.ResponderResources < 0 || p.InitiatorDepth < 0 || p.ResponderResources > maxIRDORD || p.InitiatorDepth > maxIRDORD {
		return nil, fmt.Errorf("siw: connect with IRD %d, ORD %d: %w", p.ResponderResources, p.InitiatorDepth, verbs.ErrInvalidArgument)
	}
	if host, _, err := splitAddr(addr); err != nil {
		return nil, err
	} else if host == "" {
		return nil, fmt.Errorf("siw: connect to %q: no host: %w", addr, verbs.ErrInvalidArgument)
	}
	dialer := net.Dialer{Control: setSockopts}
	if p.LocalAddr != "" {
		la, err := localTCPAddr(p.LocalAddr)
		if err != nil {
			return nil, err
		}
		dialer.LocalAddr = la
	}

	// Device.Close cancels setups in progress.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.closing, cancel)()

	nc, err := dialer.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return nil, d.connectFailed(ctx, addr, err)
	}
	tc := nc.(*net.TCPConn)
	tc.SetNoDelay(true)
	params, reply, err := d.handshake(ctx, tc, p)
	if err != nil {
		// The Reply may have arrived unread: without the FIN, a
		// responder that accepted would see a reset.
		closeOrderly(tc)
		if errors.Is(err, verbs.ErrRejected) {
			d.Counters.ConnsRejected.Add(1)
		}
		return nil, d.connectFailed(ctx, addr, err)
	}
	s := newStream(d, sqp, tc, params)
	c, err := d.startStream(s)
	if err != nil {
		return nil, err
	}
	c.pdata, c.ird, c.ord = reply.PrivateData, params.ird, params.ord
	d.opts.Logger.Debug().Uint32("qpn", sqp.QPN()).Str("peer", addr).Bool("crc", params.crc).
		Bool("p2p", params.rtr != rtrNone).Int("ird", params.ird).Int("ord", params.ord).Msg("siw: connected")
	return c, nil
}

// depth maps a requested IRD or ORD to the one offered: 0 means 1.
func depth(v int) int { return max(v, 1) }

// handshake sends the MPA Request on tc and reads and checks the Reply,
// all before the earlier of ctx's deadline and the MPA Reply timer.
func (d *Device) handshake(ctx context.Context, tc *net.TCPConn, p verbs.ConnParam) (streamParams, iwarp.MPAFrame, error) {
	deadline := time.Now().Add(d.opts.MPAReplyTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	tc.SetDeadline(deadline)
	defer context.AfterFunc(ctx, func() { tc.SetDeadline(time.Unix(1, 0)) })()

	req := iwarp.MPAFrame{
		Rev: iwarp.MPARev2, Enhanced: true, CRC: d.opts.CRC,
		IRD: uint16(depth(p.ResponderResources)), ORD: uint16(depth(p.InitiatorDepth)),
		PrivateData: p.PrivateData,
	}
	if !d.opts.NoPeerToPeer {
		req.P2P = true
		req.RTR = iwarp.RTRZeroWrite | iwarp.RTRZeroRead
	}
	var buf [iwarp.MPAHeaderLen + iwarp.MaxPrivateData]byte
	if _, err := tc.Write(req.Append(buf[:0])); err != nil {
		return streamParams{}, iwarp.MPAFrame{}, err
	}
	rep, err := iwarp.ReadMPA(tc)
	if err == nil {
		var params streamParams
		if params, err = checkReply(&req, &rep); err == nil {
			tc.SetDeadline(time.Time{})
			return params, rep, nil
		}
	}
	if errors.Is(err, iwarp.ErrMPAKey) {
		sendInvalidMPA(tc)
	}
	return streamParams{}, rep, err
}

// sendInvalidMPA answers a Reply with the wrong key as a siw initiator
// does before it gives up: with a Terminate (LLP, MPA, "invalid MPA
// Request/Reply") with nothing attached. siw has not switched CRC on at
// that point, so the CRC field is zero whatever was requested. It is best
// effort, bounded by the handshake's deadline.
func sendInvalidMPA(tc *net.TCPConn) {
	t := iwarp.NewTerminate(iwarp.TermLLPInvalidMPA, nil)
	ulpdu := t.Append(nil)
	fw := iwarp.NewFrameWriter(tc, iwarp.WriterOptions{BufferSize: 256})
	if fw.Frame(iwarp.Header(ulpdu[:iwarp.TerminateHeaderLen]), ulpdu[iwarp.TerminateHeaderLen:]) == nil {
		fw.Flush()
	}
}

// checkReply validates the MPA Reply to req the way a siw initiator does
// and derives the stream's parameters from it.
func checkReply(req, rep *iwarp.MPAFrame) (streamParams, error) {
	switch {
	case !rep.Reply:
		return streamParams{}, fmt.Errorf("MPA Request where the Reply was due: %w", iwarp.ErrMPAKey)
	case rep.Reject:
		return streamParams{}, &verbs.RejectError{PrivateData: append([]byte(nil), rep.PrivateData...)}
	case rep.Markers:
		return streamParams{}, fmt.Errorf("%w: the peer wants MPA markers", verbs.ErrRejected)
	case !rep.HasIRDORD():
		return streamParams{}, fmt.Errorf("%w: MPA rev %d reply to a rev 2 enhanced request", verbs.ErrRejected, rep.Rev)
	case rep.ORD > maxIRDORD:
		return streamParams{}, fmt.Errorf("%w: the peer's ORD %d exceeds our IRD limit %d", verbs.ErrRejected, rep.ORD, maxIRDORD)
	}
	p := streamParams{
		initiator: true,
		crc:       req.CRC || rep.CRC,
		ird:       int(rep.ORD), // we serve the Reads the peer may issue
		ord:       min(int(rep.IRD), maxIRDORD),
	}
	if req.P2P && rep.P2P {
		switch rep.RTR & (iwarp.RTRZeroWrite | iwarp.RTRZeroRead | iwarp.RTRZeroSend) {
		case iwarp.RTRZeroWrite:
			p.rtr = rtrWrite
		case iwarp.RTRZeroRead:
			p.rtr = rtrRead
		default:
			return streamParams{}, fmt.Errorf("%w: no matching RTR in the peer's reply", verbs.ErrRejected)
		}
	}
	return p, nil
}

// connectFailed classifies a failed connection setup.
func (d *Device) connectFailed(ctx context.Context, addr string, err error) error {
	if d.closing.Err() != nil {
		return verbs.ErrClosed
	}
	var rej *verbs.RejectError
	if errors.As(err, &rej) || errors.Is(err, verbs.ErrRejected) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &connectError{addr: addr, class: verbs.ErrUnreachable, err: cerr}
		}
		return cerr
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// Nobody listens, or the listener dropped the connection (backlog
		// full, request refused): rdma_cm reports REJECTED.
		return &connectError{addr: addr, class: &verbs.RejectError{}, err: err}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return &connectError{addr: addr, class: verbs.ErrUnreachable, err: err}
	}
	return fmt.Errorf("siw: connect %s: %w", addr, err)
}

// localTCPAddr parses ConnParam.LocalAddr: "ip" or "ip:port".
func localTCPAddr(s string) (*net.TCPAddr, error) {
	if ip := net.ParseIP(s); ip != nil {
		return &net.TCPAddr{IP: ip}, nil
	}
	a, err := net.ResolveTCPAddr("tcp4", s)
	if err != nil {
		return nil, fmt.Errorf("siw: local address %q: %w", s, verbs.ErrInvalidArgument)
	}
	return a, nil
}
