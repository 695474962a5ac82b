package siw

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// stream is the RDMAP stream of one connected QP: one TCP connection and
// the two goroutines that drive it, plus the state they share. It is the
// engine's soft.Link for the QP.
//
// Ownership. The tx goroutine (runTx) alone writes to the connection and
// owns the FrameWriter and every field under "tx only"; the owner of the
// receive side alone reads and owns the FrameReader and rxState: the rx
// goroutine (runRx), or a CQ waiter it handed them to between FPDUs
// (qp_rxinline.go).
// They meet in three places, each with its own lock: the queue of inbound
// RDMA Read Requests (rx appends, tx answers), the queue of outbound RDMA
// Reads (tx appends before sending the request, rx matches responses), and
// the teardown record (whoever ends the stream first). Neither goroutine
// calls a Link method; the engine calls Kick and Close from any goroutine,
// and both only signal.
//
// Lifecycle. The stream starts when the connection manager has finished
// the MPA handshake and attached it to the QP (soft.QP.Connect). It ends
// exactly once, through end, for one of six reasons:
//
//	rx or tx found a protocol or protection error  -> Terminate sent, QP.Fail(*TerminateError)
//	the peer sent a Terminate                     -> QP.Fail(remote *TerminateError)
//	the peer closed TCP (FIN)                     -> QP.Fail(ErrDisconnected)
//	TCP failed (reset, timeout)                   -> QP.Fail(*verbs.BrokenError)
//	Conn.Disconnect                               -> QP.Fail(nil)
//	the engine closed the link (Modify, Destroy)  -> no Fail: the engine moved the QP itself
//
// The rx goroutine finishes every stream: it completes the receive or Read
// it was placing (the engine cannot), fails the QP, closes Done, waits for
// the tx goroutine and closes the socket.
type stream struct {
	dev *Device
	qp  *soft.QP
	nc  *net.TCPConn
	log zerolog.Logger

	// Fixed by the handshake.
	initiator bool
	crc       bool
	rtr       rtrKind // initiator in P2P mode: the RTR to send first
	ird, ord  int
	maxULPDU  int

	kick      chan struct{} // capacity 1: the send queue or the read queue has work
	ready     chan struct{} // closed once tx may send (startup rule)
	txOpen    atomic.Bool   // the tx goroutine has passed the gate; the direct path may run
	txWait    txWaitState   // work left to a CQ waiter (qp_txwait.go)
	peerSpoke atomic.Bool   // an FPDU of the peer has arrived (ends an initiator's nudges)
	readyOnce sync.Once

	irq inboundReads  // RDMA Read Requests to answer: rx -> tx
	orq outboundReads // RDMA Reads awaiting their responses: tx -> rx

	tx txState // tx only
	rx rxState // the receive side's owner only (rxOwner)

	// Inline receive (qp_rxinline.go).
	rxOwner     atomic.Int32            // who owns the receive side: rxOwner*
	rxWanted    atomic.Bool             // a waiter found runRx owning it
	rxWantedBy  atomic.Pointer[soft.CQ] // the CQ that waiter waits on
	rxGiveBack  atomic.Bool             // a waiter handed the receive side to runRx
	rxWake      chan struct{}           // capacity 1: a waiter gave it back, look now
	rxNap       atomic.Int64            // runRx's current nap (a time.Duration)
	inlineUses  atomic.Uint64           // times a waiter took the receive side
	inlinePhase atomic.Int32            // inline* phases (awaitInline, Interrupt)
	inlineMu    sync.Mutex
	inlineCtx   context.Context // the last waiter's context; guarded by inlineMu
	inlineDone  <-chan struct{} // inlineCtx's Done; written under inlineMu, read by the waiter

	stop chan struct{} // closed by end
	// Set by end before it closes stop: the per-FPDU stopped checks
	// read it, where a non-blocking receive on stop costs a call.
	stopping atomic.Bool
	// fdBusy: a direct write is on the socket's descriptor (closeConn).
	fdBusy atomic.Bool
	txDone chan struct{} // closed when runTx returns
	done   chan struct{} // closed when the QP has been failed: Conn.Done

	endMu   sync.Mutex
	ended   bool             // guarded by endMu
	settled bool             // cause is final: the QP was failed with it; guarded by endMu
	cause   error            // what Conn.Err reports; guarded by endMu
	term    *iwarp.Terminate // the Terminate tx sends before closing; guarded by endMu
	aborted bool             // ended by Close (the engine); guarded by endMu
}

// rtrKind is the MPA v2 ready-to-receive frame of peer-to-peer mode.
type rtrKind uint8

const (
	rtrNone  rtrKind = iota
	rtrWrite         // zero-length RDMA Write, STag 1, TO 0
	rtrRead          // zero-length RDMA Read Request, source STag 1
)

// Teardown tunables.
const (
	// termLinger bounds how long a stream that sent a Terminate waits for
	// the peer to close the connection, so that the Terminate is read
	// before the connection goes (a close with unread inbound data resets
	// it and may discard what is still queued for sending).
	termLinger = 2 * time.Second
	// termWriteTimeout bounds the write of a Terminate to a peer that has
	// stopped reading.
	termWriteTimeout = time.Second
)

// streamParams are the results of the MPA handshake.
type streamParams struct {
	initiator bool
	crc       bool
	rtr       rtrKind
	ird, ord  int
}

func newStream(d *Device, qp *soft.QP, nc *net.TCPConn, p streamParams) *stream {
	s := &stream{
		dev:       d,
		qp:        qp,
		nc:        nc,
		log:       d.opts.Logger.With().Uint32("qpn", qp.QPN()).Str("peer", nc.RemoteAddr().String()).Logger(),
		initiator: p.initiator,
		crc:       p.crc,
		rtr:       p.rtr,
		ird:       p.ird,
		ord:       p.ord,
		maxULPDU:  d.opts.MaxULPDU,
		kick:      make(chan struct{}, 1),
		rxWake:    make(chan struct{}, 1),
		ready:     make(chan struct{}),
		stop:      make(chan struct{}),
		txDone:    make(chan struct{}),
		done:      make(chan struct{}),
	}
	s.irq.init(p.ird + 1) // one more for a peer's zero-length Read RTR
	s.orq.init(p.ord + 1) // one more for our own Read RTR
	s.tx.init(s)
	s.rx.init(s)
	s.rxOwner.Store(rxOwnerGoroutine)
	if p.initiator || d.opts.SendImmediately {
		s.openGate()
	}
	return s
}

// signalTx wakes the tx goroutine.
func (s *stream) signalTx() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Close implements soft.Link: the engine moved the QP out of the connected
// states (Modify to ERROR or RESET, Destroy, device close). The stream is
// torn down at once, without a Terminate; Close does not wait for it.
func (s *stream) Close() {
	if !s.end(nil, nil, true) {
		// Already ending, perhaps lingering for the peer to read a
		// Terminate: an abort does not wait for that either.
		s.closeConn(false)
	}
}

// openGate lets tx start sending: at once on the initiator, on the
// responder when the first FPDU of the initiator has arrived.
func (s *stream) openGate() {
	s.readyOnce.Do(func() { close(s.ready) })
}

// end records why the stream ends, if it is the first to, and starts the
// teardown: without a Terminate to send, the socket is closed now, which
// unblocks both goroutines; with one, tx sends it and half-closes, and the
// socket's deadlines bound how long either goroutine can still block.
// It reports whether this call ended the stream.
//
// A later call does not end it again, but a broken link still replaces
// an orderly end recorded before the QP was failed: a TCP reset's error
// goes to one reader or writer of the socket only, and the others read
// EOF or write EPIPE, which linkErrorCause takes for the peer's FIN. The
// one that got the reset may reach end after one of them has.
func (s *stream) end(cause error, term *iwarp.Terminate, aborted bool) bool {
	s.endMu.Lock()
	if s.ended {
		if !s.settled && s.cause == verbs.ErrDisconnected && errors.Is(cause, verbs.ErrBroken) {
			s.cause = cause
		}
		s.endMu.Unlock()
		return false
	}
	s.ended, s.cause, s.term, s.aborted = true, cause, term, aborted
	s.endMu.Unlock()
	s.stopping.Store(true)
	close(s.stop)
	if term == nil {
		s.closeConn(true)
	} else {
		now := time.Now()
		s.nc.SetWriteDeadline(now.Add(termWriteTimeout))
		s.inlineMu.Lock()
		s.nc.SetReadDeadline(now.Add(termLinger))
		s.inlineMu.Unlock()
		s.Interrupt()
	}
	return true
}

// terminate ends the stream because this side found an error: the peer
// gets a Terminate for cause with the offending header attached as siw
// attaches it, the QP fails with the matching TerminateError.
func (s *stream) terminate(cause iwarp.TermCause, offending iwarp.Header) {
	t := iwarp.NewTerminate(cause, offending)
	if s.end(termError(cause, false), &t, false) {
		s.log.Debug().Stringer("cause", cause).Msg("siw: terminating stream")
	}
}

// ending returns the teardown record once end has run.
func (s *stream) ending() (cause error, term *iwarp.Terminate, aborted bool) {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	return s.cause, s.term, s.aborted
}

// settle fixes the teardown record: end no longer changes the cause.
func (s *stream) settle() (cause error, term *iwarp.Terminate, aborted bool) {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.settled = true
	return s.cause, s.term, s.aborted
}

// stopped reports whether end has run (or is closing stop).
func (s *stream) stopped() bool { return s.stopping.Load() }

// finish runs on the rx goroutine after its loop: it settles what rx
// owned, waits until tx has stopped (having completed what it handed to
// TCP, and sent the Terminate if there is one), fails the QP, which
// flushes the rest, reports the end, and releases the socket.
func (s *stream) finish() {
	s.rx.abandon(s)
	<-s.txDone
	// A poster may be running the direct transmit path; let it finish
	// completing what it wrote. Later ones see the stream stopped.
	s.tx.mu.Lock()
	s.tx.mu.Unlock()
	// Every user of the socket has now reported what it saw (end).
	cause, term, aborted := s.settle()
	if !aborted {
		s.qp.Fail(cause)
	}
	close(s.done)
	if term != nil {
		// Let the peer read the Terminate: wait, bounded, for it to
		// close its side.
		s.nc.SetReadDeadline(time.Now().Add(termLinger))
		s.rx.drain(s)
	}
	s.closeConn(false)
	s.dev.removeStream(s)
	s.log.Debug().AnErr("cause", cause).Msg("siw: stream closed")
}

// termError converts a Terminate cause to the verbs error that carries it.
func termError(c iwarp.TermCause, remote bool) *verbs.TerminateError {
	return &verbs.TerminateError{Layer: verbs.TermLayer(c.Layer()), EType: uint8(c.EType()), Code: c.Code(), Remote: remote}
}

// closeOrderly closes a connection with a FIN first. A close with unread
// inbound data resets the connection; a peer that sees that reset after
// our FIN reads EPIPE instead of ECONNRESET, which linkErrorCause counts
// as the orderly end it is.
func closeOrderly(tc *net.TCPConn) {
	tc.CloseWrite()
	tc.Close()
}

// linkErrorCause classifies an error reading or writing the socket, as
// the cause the stream ends with:
//
//	net.ErrClosed          we closed it: the stream was already ending
//	                       and keeps its cause (nil here)
//	io.EOF, ErrUnexpectedEOF  the peer's FIN, an orderly close (even
//	                       inside an FPDU: the peer chose to close, TCP
//	                       did not fail) -> ErrDisconnected
//	EPIPE                  a reset that came after the peer's FIN: the
//	                       peer closed in order, with our data unread
//	                       (Linux reports a RST in CLOSE_WAIT as EPIPE;
//	                       closeOrderly) -> ErrDisconnected
//	anything else          the transport failed: a reset without a FIN
//	                       (ECONNRESET; ECONNABORTED when ours was
//	                       killed), a retransmission or keepalive
//	                       timeout (ETIMEDOUT), an unreachable peer
//	                       -> *verbs.BrokenError
//
// The kernel hands a reset's error to one of the stream's readers and
// writers only; the others then read EOF or write EPIPE and may end the
// stream first, as if the peer had closed in order. end lets the broken
// cause replace that one until finish fails the QP.
//
// A Terminate is not seen here: the frame reader parses it and
// rxTerminate ends the stream with the peer's cause.
func linkErrorCause(err error) error {
	switch {
	case errors.Is(err, net.ErrClosed):
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.EPIPE):
		return verbs.ErrDisconnected
	}
	return &verbs.BrokenError{Err: err}
}
