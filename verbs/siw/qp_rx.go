package siw

import (
	"errors"
	"io"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The receive half of a stream. runRx is the only reader of the socket. A
// FrameReader yields each FPDU's validated header; the handler for its
// opcode checks what siw checks (queue number, MSN, MO, STag and TO of
// continuation segments, the outstanding Read a response belongs to,
// memory access), then reads the payload straight into its destination —
// the posted receive, the RDMA Write target, the Read sink — and finishes
// the FPDU (pad and CRC) before acting on a completed message. Any
// violation ends the stream with the Terminate siw would send.

// termBufLen bounds the copy kept of an inbound Terminate: the fixed
// header plus the largest header siw attaches (a Read Request).
const termBufLen = iwarp.TerminateHeaderLen + iwarp.ReadRequestHeaderLen

// rxState belongs to the owner of the receive side: the rx goroutine,
// or a CQ waiter it handed it to (qp_rxinline.go).
type rxState struct {
	sock     sockReader
	fr       *iwarp.FrameReader
	over     bool        // a waiter's processing ended the stream
	inlineCQ *soft.CQ    // the CQ of the waiter running the receive side, nil under runRx
	cooldown int         // FPDUs runRx receives before it hands over again
	nap      *time.Timer // runRx's nap while waiters own the receive side
	started  bool        // an FPDU has arrived (opens the responder's gate)
	sendMSN  iwarp.MSN   // MSN the next Send message must carry (QN 0)
	readMSN  iwarp.MSN   // MSN the next Read Request must carry (QN 1)

	// The untagged message (Send) being placed.
	recv       soft.RecvWQE
	recvOn     bool           // recv taken from the QP and not completed
	recvStatus verbs.WCStatus // its status if the stream dies now
	placer     soft.Placer
	sendOp     iwarp.Opcode
	inv        iwarp.STag

	// The tagged message (RDMA Write or Read Response) being placed.
	tagOn   bool
	tagOp   iwarp.Opcode
	tagSTag iwarp.STag
	tagTO   uint64 // TO the next segment must carry

	// The Read whose response is being placed (the oldest outstanding).
	read       outboundRead
	readPlaced uint32
	// A Read that failed and must complete with readStatus before the QP
	// is flushed.
	readFailed bool
	readFail   outboundRead
	readStatus verbs.WCStatus

	term [termBufLen]byte
	sink [4096]byte // drain reads into it
}

func (rx *rxState) init(s *stream) {
	rx.sock.init(s.nc)
	rx.fr = iwarp.NewFrameReader(&rx.sock, iwarp.ReaderOptions{CRC: s.crc, BufferSize: rxBufferSize})
	rx.sendMSN, rx.readMSN = 1, 1
}

// rxHandler processes one FPDU whose header h has been validated; it
// returns false when the stream has ended.
type rxHandler func(s *stream, h iwarp.Header) bool

// rxHandlers is indexed by opcode; CheckHeader has ruled out the others.
var rxHandlers = [...]rxHandler{
	iwarp.OpRDMAWrite:        (*stream).rxWrite,
	iwarp.OpRDMAReadRequest:  (*stream).rxReadRequest,
	iwarp.OpRDMAReadResponse: (*stream).rxReadResponse,
	iwarp.OpSend:             (*stream).rxSend,
	iwarp.OpSendInv:          (*stream).rxSend,
	iwarp.OpSendSE:           (*stream).rxSend,
	iwarp.OpSendSEInv:        (*stream).rxSend,
	iwarp.OpTerminate:        (*stream).rxTerminate,
}

// runRx is the stream's receive goroutine; it also finishes the stream.
// It owns the receive side except while it has handed it to CQ waiters
// (see qp_rxinline.go).
func (s *stream) runRx() {
	defer s.finish()
	for {
		if !s.rxStep() {
			return
		}
		if s.rx.cooldown > 0 {
			s.rx.cooldown--
		} else if s.rxWanted.Load() && s.rx.idle() && !s.rxHandOver() {
			return
		}
	}
}

// rxStep reads and processes one FPDU; it returns false when the stream
// has ended. The caller owns the receive side.
func (s *stream) rxStep() bool {
	rx := &s.rx
	h, err := rx.fr.Next()
	if err != nil {
		return s.rxFailed(h, err)
	}
	if h.PayloadLen() >= rxBulkPayload && rx.fr.BufferSize() < rxBulkBufferSize {
		rx.fr.Grow(rxBulkBufferSize)
	}
	if !rx.started {
		// Before the handler, which may complete a receive: whoever
		// sees that completion sees the peer as having spoken.
		s.peerSpoke.Store(true)
	}
	if !rxHandlers[h.Opcode()](s, h) {
		return false
	}
	if !rx.started {
		// The initiator's first FPDU (its RTR in peer-to-peer mode)
		// has been processed: the responder may send now.
		rx.started = true
		s.openGate()
		s.signalTx()
	}
	return true
}

// idle reports whether the receive side is between FPDUs with nothing
// read ahead, where it may change owners.
func (rx *rxState) idle() bool { return rx.fr.Buffered() == 0 }

// rxFailed ends the stream after the frame reader failed: a protocol
// error is terminated with its cause, anything else is the connection
// going away.
func (s *stream) rxFailed(h iwarp.Header, err error) bool {
	if cause, ok := iwarp.CauseOf(err); ok {
		if cause == iwarp.TermLLPCRC {
			s.dev.Counters.CRCErrors.Add(1)
		} else {
			s.dev.Counters.MalformedFrames.Add(1)
		}
		s.terminate(cause, h)
		return false
	}
	if !s.stopped() && !errors.Is(err, io.EOF) {
		s.log.Debug().Err(err).Msg("siw: receive failed")
	}
	s.end(linkErrorCause(err), nil, false)
	return false
}

// malformed terminates the stream for a protocol violation the frame
// reader cannot see (sequence numbers, offsets, continuation segments).
func (s *stream) malformed(cause iwarp.TermCause, h iwarp.Header) bool {
	s.dev.Counters.MalformedFrames.Add(1)
	s.terminate(cause, h)
	return false
}

// readPayload reads the FPDU's payload into dst (exactly len(dst) bytes).
// When dst is registered memory the caller holds it (soft.Hold) across
// the read, which may block on the socket: a deregistration of that
// memory then waits for the rest of this one FPDU. The hold never spans
// two FPDUs, so a peer that pauses between segments delays nothing; a
// peer that stalls inside one delays the Dereg until the bytes come or
// the stream ends — any teardown (disconnect, Terminate, QP destroy,
// device close) closes the socket, which fails the read and releases the
// hold. Holding only across bytes already buffered would instead cost
// the direct socket-to-memory read that large payloads take.
func (s *stream) readPayload(dst []byte) bool {
	for len(dst) > 0 {
		n, err := s.rx.fr.ReadPayload(dst)
		if err != nil {
			return s.rxFailed(nil, err)
		}
		dst = dst[n:]
	}
	return true
}

// finishFrame reads pad and CRC; the FPDU may be acted on only after it.
func (s *stream) finishFrame() bool {
	if err := s.rx.fr.Finish(); err != nil {
		return s.rxFailed(nil, err)
	}
	return true
}

// rxSend places a segment of a Send message into the receive it consumes.
func (s *stream) rxSend(h iwarp.Header) bool {
	rx := &s.rx
	u := iwarp.UntaggedHeader(h)
	_ = u[iwarp.UntaggedHeaderLen-1] // one bounds check for the fields read below
	op := h.Opcode()
	switch {
	case u.QN() != iwarp.QNSend:
		return s.malformed(iwarp.TermDDPUntaggedInvalidQN, h)
	case u.MSN() != rx.sendMSN:
		return s.malformed(iwarp.TermDDPUntaggedMSNRange, h)
	case rx.recvOn && op != rx.sendOp:
		return s.malformed(iwarp.TermRDMAPOpcode, h)
	case rx.recvOn && uint64(u.MO()) != rx.placer.Placed(), !rx.recvOn && u.MO() != 0:
		return s.malformed(iwarp.TermDDPUntaggedInvalidMO, h)
	}
	if !rx.recvOn {
		if !s.qp.TakeRecv(&rx.recv) {
			s.terminate(causeNoBuffer, h)
			return false
		}
		rx.recvOn, rx.recvStatus = true, verbs.WCWRFlushErr
		rx.placer.Reset(s.qp, &rx.recv)
		rx.sendOp, rx.inv = op, u.InvalidateSTag()
	}
	n := h.PayloadLen()
	if uint64(n) > rx.placer.Room() {
		rx.recvStatus = verbs.WCLocLenErr
		s.terminate(causeNoBuffer, h)
		return false
	}
	for left := n; left > 0; {
		dst, f := rx.placer.Next(left)
		if f != soft.FaultNone || len(dst) == 0 {
			// The receive's memory went away since it was posted.
			rx.recvStatus = verbs.WCLocProtErr
			s.terminate(causeLocal, nil)
			return false
		}
		ok := s.readPayload(dst)
		if !ok {
			rx.placer.Release()
			return false
		}
		rx.placer.Advance(len(dst))
		left -= len(dst)
	}
	// Between FPDUs the receive holds no memory: a peer that pauses mid
	// message must not hold up a deregistration.
	rx.placer.Release()
	if !s.finishFrame() {
		return false
	}
	s.dev.Counters.BytesReceived.Add(uint64(n))
	if !h.Last() {
		return true
	}
	var flags verbs.WCFlags
	var inv uint32
	if op == iwarp.OpSendSE || op == iwarp.OpSendSEInv {
		flags |= verbs.WCSolicited
	}
	if op == iwarp.OpSendInv || op == iwarp.OpSendSEInv {
		inv = uint32(rx.inv)
		if s.qp.InvalidateRemote(inv) != soft.FaultNone {
			s.dev.Counters.ProtectionErrors.Add(1)
			rx.recvStatus = verbs.WCRemInvReqErr
			s.terminate(causeCannotInvalidate, h)
			return false
		}
		flags |= verbs.WCWithInv
	}
	rx.recvOn = false
	rx.sendMSN++
	s.qp.CompleteRecvInline(&rx.recv, uint32(rx.placer.Placed()), flags, inv, rx.inlineCQ)
	return true
}

// rxWrite places a segment of an RDMA Write. Every segment is checked
// against the memory it targets; a zero-length segment targets none and
// is not checked (the peer-to-peer RTR is one, with STag 1).
func (s *stream) rxWrite(h iwarp.Header) bool {
	rx := &s.rx
	t := iwarp.TaggedHeader(h)
	if rx.tagOn {
		switch {
		case rx.tagOp != iwarp.OpRDMAWrite:
			return s.malformed(iwarp.TermRDMAPOpcode, h)
		case t.STag() != rx.tagSTag:
			return s.malformed(iwarp.TermDDPTaggedInvalidSTag, h)
		case t.TO() != rx.tagTO:
			return s.malformed(iwarp.TermDDPTaggedBaseBounds, h)
		}
	}
	n := h.PayloadLen()
	if n > 0 {
		mem, hold, f := s.qp.ResolveRemote(uint32(t.STag()), t.TO(), uint64(n), verbs.AccessRemoteWrite)
		if f != soft.FaultNone {
			s.terminate(taggedCause(f), h)
			return false
		}
		ok := s.readPayload(mem)
		hold.Release()
		if !ok {
			return false
		}
	}
	if !s.finishFrame() {
		return false
	}
	s.dev.Counters.BytesReceived.Add(uint64(n))
	rx.tagOn = !h.Last()
	rx.tagOp, rx.tagSTag, rx.tagTO = iwarp.OpRDMAWrite, t.STag(), t.TO()+uint64(n)
	return true
}

// rxReadRequest accepts an RDMA Read Request of the peer and hands it to
// tx. The source memory is checked now, so that a bad request terminates
// the stream at once, and again when the response is sent.
func (s *stream) rxReadRequest(h iwarp.Header) bool {
	rx := &s.rx
	u := iwarp.UntaggedHeader(h)
	switch {
	case u.QN() != iwarp.QNReadRequest:
		return s.malformed(iwarp.TermDDPUntaggedInvalidQN, h)
	case u.MSN() != rx.readMSN:
		return s.malformed(iwarp.TermDDPUntaggedMSNRange, h)
	case u.MO() != 0:
		return s.malformed(iwarp.TermDDPUntaggedInvalidMO, h)
	}
	if !s.finishFrame() {
		return false
	}
	rr := iwarp.ReadRequestHeader(h)
	r := inboundRead{sinkSTag: rr.SinkSTag(), sinkTO: rr.SinkTO(), size: rr.Size(), srcSTag: uint32(rr.SrcSTag()), srcTO: rr.SrcTO()}
	copy(r.hdr[:], h)
	// A zero-length Read as the first FPDU is the peer-to-peer Read RTR,
	// answered even by a QP that serves no Reads.
	rtr := !rx.started && r.size == 0
	if !rtr && s.irq.len() >= s.ird {
		s.terminate(causeIRDOverflow, h)
		return false
	}
	if r.size > 0 {
		_, hold, f := s.qp.ResolveRemote(r.srcSTag, r.srcTO, uint64(r.size), verbs.AccessRemoteRead)
		if f != soft.FaultNone {
			s.terminate(readCause(f), h)
			return false
		}
		hold.Release()
	}
	if !s.irq.push(&r) {
		s.terminate(causeIRDOverflow, h)
		return false
	}
	rx.readMSN++
	s.signalTx()
	return true
}

// rxReadResponse places a segment of the response to our oldest
// outstanding RDMA Read. Like siw, it insists that the response names
// exactly the sink of that Read, in order, and has exactly its size.
func (s *stream) rxReadResponse(h iwarp.Header) bool {
	rx := &s.rx
	t := iwarp.TaggedHeader(h)
	if rx.tagOn && rx.tagOp != iwarp.OpRDMAReadResponse {
		return s.malformed(iwarp.TermRDMAPOpcode, h)
	}
	if !rx.tagOn {
		if !s.orq.front(&rx.read) {
			return s.malformed(causeNoRead, h)
		}
		rx.readPlaced = 0
		rx.tagOn, rx.tagOp = true, iwarp.OpRDMAReadResponse
	}
	n := h.PayloadLen()
	end := uint64(rx.readPlaced) + uint64(n)
	switch {
	case t.STag() != rx.read.sinkSTag:
		s.failRead(verbs.WCBadRespErr)
		return s.malformed(iwarp.TermDDPTaggedInvalidSTag, h)
	case t.TO() != rx.read.sinkTO+uint64(rx.readPlaced), end > uint64(rx.read.size),
		h.Last() && end != uint64(rx.read.size):
		s.failRead(verbs.WCBadRespErr)
		return s.malformed(iwarp.TermDDPTaggedBaseBounds, h)
	}
	if n > 0 {
		// The sink is resolved, and held, for each segment: between
		// segments the Read holds no memory.
		mem, hold, f := s.qp.ResolveSGE(&rx.read.sink, true)
		if f != soft.FaultNone {
			s.failRead(verbs.WCLocProtErr)
			s.terminate(taggedCause(f), h)
			return false
		}
		ok := s.readPayload(mem[rx.readPlaced:end])
		hold.Release()
		if !ok {
			return false
		}
	}
	if !s.finishFrame() {
		return false
	}
	rx.readPlaced = uint32(end)
	s.dev.Counters.BytesReceived.Add(uint64(n))
	if !h.Last() {
		return true
	}
	rx.tagOn = false
	s.orq.pop()
	if !rx.read.rtr {
		s.qp.CompleteSend(rx.read.seq, verbs.WCSuccess, rx.read.size)
	}
	return true
}

// failRead marks the Read being placed as failed with st.
func (s *stream) failRead(st verbs.WCStatus) {
	rx := &s.rx
	if !rx.read.rtr {
		rx.readFailed, rx.readFail, rx.readStatus = true, rx.read, st
	}
}

// rxTerminate handles the peer's Terminate: the stream ends with the
// peer's cause. A Read the peer refused (the Terminate carries its
// request) completes with a remote access or operation error rather than
// a flush.
func (s *stream) rxTerminate(h iwarp.Header) bool {
	rx := &s.rx
	n := copy(rx.term[:], h)
	k := min(h.PayloadLen(), len(rx.term)-n)
	if !s.readPayload(rx.term[n:n+k]) || !s.finishFrame() {
		return false
	}
	b := rx.term[:n+k]
	iwarp.Header(b).SetULPDULength(len(b) - iwarp.ULPDULengthLen) // what was kept
	s.dev.Counters.TerminatesReceived.Add(1)
	t, err := iwarp.ParseTerminate(b)
	if err != nil {
		s.dev.Counters.MalformedFrames.Add(1)
		t.Cause = iwarp.TerminateHeader(b).Cause()
	}
	s.log.Debug().Stringer("cause", t.Cause).Msg("siw: peer terminated the stream")
	if off, ok := t.Offending(); ok && off.Opcode() == iwarp.OpRDMAReadRequest && len(off) >= iwarp.ReadRequestHeaderLen {
		rr := iwarp.ReadRequestHeader(off)
		var r outboundRead
		if s.orq.find(rr.SinkSTag(), rr.SinkTO(), &r) && !r.rtr {
			st := verbs.WCRemOpErr
			if t.Cause.Layer() == iwarp.TermLayerRDMAP && t.Cause.EType() == iwarp.TermETypeRDMAPRemoteProtection {
				st = verbs.WCRemAccessErr
			}
			rx.readFailed, rx.readFail, rx.readStatus = true, r, st
		}
	}
	s.end(termError(t.Cause, true), nil, false)
	return false
}

// abandon settles what rx owned when the stream ended: the receive it was
// placing (with its error status, or flushed) and a Read that failed. The
// engine flushes everything else when the QP fails.
func (rx *rxState) abandon(s *stream) {
	if rx.recvOn {
		rx.recvOn = false
		s.qp.CompleteRecv(&rx.recv, rx.recvStatus, 0, 0, 0)
	}
	if rx.readFailed {
		rx.readFailed = false
		s.qp.CompleteSend(rx.readFail.seq, rx.readStatus, 0)
	}
}

// drain reads and discards until the peer closes or the read deadline
// set by end passes.
func (rx *rxState) drain(s *stream) {
	for {
		if _, err := s.nc.Read(rx.sink[:]); err != nil {
			return
		}
	}
}

// The frame reader's buffer. Small FPDUs are parsed out of it many per
// read: rxBufferSize is enough for them. The payload of a large FPDU goes
// from the socket straight into its destination when the buffer is empty
// as it starts, and through the buffer when a read brought it in behind
// the FPDU before it. A peer that streams large FPDUs keeps the socket
// full, so most of its payload comes through the buffer whatever its
// size: a larger buffer then only means fewer reads, one per several
// FPDUs instead of one or two per FPDU. So the first FPDU with a payload
// of rxBulkPayload bytes or more grows the buffer to rxBulkBufferSize.
// Much more than that stops paying: the buffer and its copy out no longer
// stay in the cache.
const (
	rxBufferSize     = 16 << 10
	rxBulkPayload    = 8 << 10
	rxBulkBufferSize = 256 << 10
)
