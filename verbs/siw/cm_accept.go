package siw

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// replyWriteTimeout bounds writing an MPA Reply (accept or reject) to a
// peer that does not read.
const replyWriteTimeout = 5 * time.Second

// connRequest implements verbs.ConnRequest: a TCP connection whose valid
// MPA Request waits for Accept or Reject.
type connRequest struct {
	l   *listener
	c   *net.TCPConn
	req iwarp.MPAFrame
	// ird and ord are what this side should use to match the peer, as siw
	// derives them: IRD from the peer's ORD, ORD from the peer's IRD, both
	// capped at 128. A frame without the RFC 6581 block carries none, and
	// siw reports 0/0 then.
	ird, ord int
	answered atomic.Bool
}

func newConnRequest(l *listener, c *net.TCPConn, f *iwarp.MPAFrame) *connRequest {
	r := &connRequest{l: l, c: c, req: *f}
	if f.HasIRDORD() {
		r.ird = min(int(f.ORD), maxIRDORD)
		r.ord = min(int(f.IRD), maxIRDORD)
	}
	return r
}

func (r *connRequest) PrivateData() []byte     { return r.req.PrivateData }
func (r *connRequest) LocalAddr() net.Addr     { return r.c.LocalAddr() }
func (r *connRequest) RemoteAddr() net.Addr    { return r.c.RemoteAddr() }
func (r *connRequest) ResponderResources() int { return r.ird }
func (r *connRequest) InitiatorDepth() int     { return r.ord }

// negotiate returns the IRD and ORD the accepting QP gets, by siw's
// "relaxed" rules (iwarp-wire.md section 2.3): zero asks for the request's
// values; an ORD above what the peer serves is lowered to it; an IRD below
// what the peer may issue is raised to it. Without the RFC 6581 block
// nothing is negotiated on the wire; the QP then takes the application's
// values, zero meaning 1 so that both sides can issue RDMA Reads (a rev 1
// peer has no way to tell us its needs, and refusing its Reads would be
// worse than serving one).
func (r *connRequest) negotiate(p verbs.ConnParam) (ird, ord int, err error) {
	ird, ord = p.ResponderResources, p.InitiatorDepth
	if ird < 0 || ord < 0 || ird > maxIRDORD || ord > maxIRDORD {
		return 0, 0, fmt.Errorf("siw: accept with IRD %d, ORD %d: %w", ird, ord, verbs.ErrInvalidArgument)
	}
	if !r.req.HasIRDORD() {
		return max(ird, 1), max(ord, 1), nil
	}
	if ird == 0 {
		ird = r.ird
	}
	if ord == 0 {
		ord = r.ord
	}
	return max(ird, r.ird), min(ord, r.ord), nil
}

// reply builds the MPA Reply to the request: key changed, revision and
// the C and enhanced flags echoed (as siw builds it from the request).
func (r *connRequest) reply(reject bool, ird, ord int, pdata []byte) iwarp.MPAFrame {
	f := iwarp.MPAFrame{
		Reply: true, Reject: reject, CRC: r.req.CRC, Enhanced: r.req.Enhanced, Rev: r.req.Rev,
		IRD: uint16(ird), ORD: uint16(ord),
	}
	if r.req.Rev >= iwarp.MPARev1 {
		f.PrivateData = pdata
	}
	if !reject && r.req.HasIRDORD() && r.req.P2P {
		f.P2P = true
		f.RTR = pickRTR(r.req.RTR)
	}
	return f
}

// pickRTR chooses the one RTR type the responder uses, as siw does: Write
// if offered, else Read if offered, else Write.
func pickRTR(offered iwarp.RTR) iwarp.RTR {
	if offered&iwarp.RTRZeroWrite == 0 && offered&iwarp.RTRZeroRead != 0 {
		return iwarp.RTRZeroRead
	}
	return iwarp.RTRZeroWrite
}

// writeFrame sends an MPA frame on c.
func writeFrame(c *net.TCPConn, f *iwarp.MPAFrame) error {
	var buf [iwarp.MPAHeaderLen + iwarp.MaxPrivateData]byte
	c.SetWriteDeadline(time.Now().Add(replyWriteTimeout))
	_, err := c.Write(f.Append(buf[:0]))
	c.SetWriteDeadline(time.Time{})
	return err
}

// Accept implements verbs.ConnRequest. It sends the MPA Reply, moves qp
// to RTS and starts the stream. The responder sends no FPDU before the
// initiator's first one has arrived (its RTR in peer-to-peer mode), unless
// Options.SendImmediately; work posted meanwhile waits in the send queue.
func (r *connRequest) Accept(qp verbs.QP, p verbs.ConnParam) (verbs.Conn, error) {
	d := r.l.dev
	sqp, err := d.ownQP(qp)
	if err != nil {
		return nil, err
	}
	if len(p.PrivateData) > verbs.MaxPrivateData {
		return nil, fmt.Errorf("siw: %d bytes of private data: %w", len(p.PrivateData), verbs.ErrInvalidArgument)
	}
	ird, ord, err := r.negotiate(p)
	if err != nil {
		return nil, err
	}
	if !r.answered.CompareAndSwap(false, true) {
		return nil, fmt.Errorf("siw: connection request already answered: %w", verbs.ErrInvalidState)
	}
	f := r.reply(false, ird, ord, p.PrivateData)
	if err := writeFrame(r.c, &f); err != nil {
		r.c.Close()
		return nil, fmt.Errorf("siw: sending MPA Reply: %w: %w", verbs.ErrDisconnected, err)
	}
	s := newStream(d, sqp, r.c, streamParams{crc: f.CRC, ird: ird, ord: ord})
	c, err := d.startStream(s)
	if err != nil {
		return nil, err
	}
	c.pdata, c.ird, c.ord = r.req.PrivateData, ird, ord
	d.opts.Logger.Debug().Uint32("qpn", sqp.QPN()).Stringer("peer", r.c.RemoteAddr()).
		Uint8("rev", f.Rev).Bool("crc", f.CRC).Bool("p2p", f.P2P).Int("ird", ird).Int("ord", ord).
		Msg("siw: accepted connection")
	return c, nil
}

// Reject implements verbs.ConnRequest: a Reply with R set and the private
// data, then the TCP connection closes.
func (r *connRequest) Reject(privateData []byte) error {
	if len(privateData) > verbs.MaxPrivateData {
		return fmt.Errorf("siw: %d bytes of private data: %w", len(privateData), verbs.ErrInvalidArgument)
	}
	if !r.answered.CompareAndSwap(false, true) {
		return fmt.Errorf("siw: connection request already answered: %w", verbs.ErrInvalidState)
	}
	f := r.reply(true, r.ird, r.ord, privateData)
	err := writeFrame(r.c, &f)
	r.c.Close()
	if err != nil {
		return fmt.Errorf("siw: sending MPA reject: %w: %w", verbs.ErrDisconnected, err)
	}
	return nil
}

// startStream attaches s to its QP (moving it to RTS) and starts its
// goroutines; it returns the connection.
func (d *Device) startStream(s *stream) (*conn, error) {
	if err := s.qp.Connect(s, s.ird, s.ord); err != nil {
		s.nc.Close()
		return nil, err
	}
	if !d.addStream(s) {
		s.qp.Fail(nil)
		s.nc.Close()
		return nil, verbs.ErrClosed
	}
	d.Counters.ConnsEstablished.Add(1)
	return &conn{s: s}, nil
}
