package siw

import (
	"errors"
	"sync"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The transmit half of a stream. runTx is the only writer of the socket.
// It wakes on a kick (work was posted, a Read Request arrived, an ORD slot
// or a fence cleared), moves work from the send queue and the inbound Read
// queue into FPDUs, and writes them in batches: a FrameWriter collects the
// headers and small payloads of many FPDUs in one buffer and references
// large payloads in place, so a batch is one writev however many messages
// it holds. Sends and RDMA Writes complete once their last FPDU has been
// handed to TCP, as in siw; an RDMA Read completes in rx when its response
// has been placed.

// Tunables of the transmit loop.
const (
	// sqBurst and readRespBurst share the link between the send queue and
	// inbound Reads: up to sqBurst FPDUs of the send queue, then up to
	// readRespBurst FPDUs of Read Responses, and round again (siw uses 100
	// and 4 per run; responses here are whole FPDUs of up to 64 KiB).
	sqBurst       = 128
	readRespBurst = 8
	// flushBytes is how much a batch may grow before it is written even
	// though more work is waiting: large enough to amortise the syscall,
	// small enough that completions are not held back long.
	flushBytes = 512 << 10
	// maxBatchCompletions bounds the send completions one batch collects.
	maxBatchCompletions = 512
	// gatherMax is the largest FPDU payload gathered from several SGEs
	// into one FPDU; the frame writer copies payloads this small anyway.
	// Larger payloads are segmented at SGE boundaries instead of copied.
	gatherMax = iwarp.DefaultCopyThreshold
	// rtrSTag is the STag of the zero-length RTR Write and the source of
	// the zero-length RTR Read (siw avoids STag 0, which some hardware
	// treats specially); the startup nudges use it too.
	rtrSTag = 1
)

// nudgeAfter are the delays, from the start of an initiator's stream, of
// its startup nudges (see Options.NoStartupNudge). The Linux siw window
// they cover lasted up to about 10 ms under the lab's emulation.
var nudgeAfter = [...]time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond, 200 * time.Millisecond}

// txState is the transmit side's state. Whoever holds mu owns it: the tx
// goroutine while it pumps, or a poster running the direct path (see
// qp_txdirect.go).
type txState struct {
	mu       sync.Mutex
	fw       *iwarp.FrameWriter // writes to the socket, blocking (tx goroutine)
	fwDirect *iwarp.FrameWriter // writes without blocking (direct path)
	w        *iwarp.FrameWriter // the one in use
	backlog  []byte             // bytes the direct path could not write; the tx goroutine writes them first
	direct   directWriter

	sendMSN iwarp.MSN // MSN of the last Send message sent (QN 0)
	readMSN iwarp.MSN // MSN of the last Read Request sent (QN 1)

	// The send work request being segmented.
	cur    soft.SendWQE
	curOn  bool
	slices [][]byte   // its memory, one slice per SGE (or the inline copy)
	holds  soft.Holds // of slices, while a segment is framed
	si     int        // current slice
	soff   int        // offset in the current slice
	off    uint64     // bytes of cur queued so far
	msn    iwarp.MSN
	op     iwarp.Opcode
	// The most payload an FPDU of a Send and of an RDMA Write carries:
	// fixed by the stream's maxULPDU, computed once, not per FPDU.
	maxSend, maxWrite int

	// The inbound Read being answered.
	rr     inboundRead
	rrOn   bool
	rrSent uint32

	done   []uint64 // send queue sequence numbers to complete after the flush
	bytes  uint64   // payload bytes in the batch
	hdr    [iwarp.MaxHeaderLen]byte
	gather [gatherMax]byte
	term   []byte
}

func (tx *txState) init(s *stream) {
	tx.fw = iwarp.NewFrameWriter(s.nc, iwarp.WriterOptions{CRC: s.crc, CopyThreshold: gatherMax})
	tx.direct.init(s)
	tx.fwDirect = iwarp.NewFrameWriter(&tx.direct, iwarp.WriterOptions{CRC: s.crc, BufferSize: directBufferSize, CopyThreshold: directBufferSize})
	tx.w = tx.fw
	tx.maxSend = iwarp.MaxPayload(iwarp.UntaggedHeaderLen, s.maxULPDU)
	tx.maxWrite = iwarp.MaxPayload(iwarp.TaggedHeaderLen, s.maxULPDU)
	tx.slices = make([][]byte, 0, verbs.MaxSGE+1)
	tx.done = make([]uint64, 0, maxBatchCompletions)
}

// runTx is the stream's transmit goroutine.
func (s *stream) runTx() {
	defer close(s.txDone)
	defer s.stopTxWait()
	defer s.txFinish()
	tx := &s.tx
	for gated := true; gated; {
		select {
		case <-s.ready:
			gated = false
		case <-s.kick:
			s.takeGated()
		case <-s.stop:
			return
		}
	}
	tx.mu.Lock()
	var err error
	if s.rtr != rtrNone {
		if err = s.queueRTR(); err != nil {
			tx.mu.Unlock() // the loop below, which unlocks it, will not run
		}
	}
	s.txOpen.Store(true)
	var nudge *time.Timer
	var nudgeC <-chan time.Time
	nudges := 0
	if s.initiator && !s.dev.opts.NoStartupNudge {
		nudge = time.NewTimer(nudgeAfter[0])
		defer nudge.Stop()
		nudgeC = nudge.C
	}
	for err == nil {
		err = s.pump()
		tx.mu.Unlock()
		if err != nil {
			break
		}
		select {
		case <-s.kick:
		case <-nudgeC:
			if s.rtr != rtrNone && s.peerSpoke.Load() {
				// A peer-to-peer responder sends nothing before it has
				// read the RTR, and siw reads everything queued behind
				// it then: nothing is left stranded. A nudge now would
				// only be a stray frame, and one that reaches a siw peer
				// after it stopped reading to close makes its close a
				// reset, which this side would report as broken.
				nudgeC = nil
				break
			}
			// What the direct path left (possibly half an FPDU) goes first.
			tx.mu.Lock()
			if err = s.flushDirect(); err == nil {
				if err = s.frameZeroWrite(); err == nil {
					err = s.flush()
				}
			}
			tx.mu.Unlock()
			if err != nil {
				break
			}
			if nudges++; nudges < len(nudgeAfter) {
				nudge.Reset(nudgeAfter[nudges] - nudgeAfter[nudges-1])
			} else {
				nudgeC = nil
			}
		case <-s.stop:
			return
		}
		if err != nil {
			break
		}
		tx.mu.Lock()
	}
	if err != nil && !s.stopped() {
		s.log.Debug().Err(err).Msg("siw: transmit failed")
	}
	s.end(linkErrorCause(err), nil, false)
}

// takeGated runs while the startup rule holds the responder's FPDUs back:
// it lets the engine complete the binds and local invalidations at the
// head of the send queue, which involve no FPDU, and holds the first
// request that does, unframed, until the gate opens.
func (s *stream) takeGated() {
	tx := &s.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if !tx.curOn && s.qp.NextSend(&tx.cur) {
		s.startSend()
	}
}

// pump sends everything there is to send now: it alternates between the
// send queue and the inbound Read queue until both are idle, flushing
// whenever the batch is large, and once at the end.
func (s *stream) pump() error {
	tx := &s.tx
	s.txWait.left.Store(false) // sent below, whoever left it
	if err := s.flushDirect(); err != nil {
		return err
	}
	for !s.stopped() {
		n, err := s.txSendQueue(sqBurst)
		if err != nil {
			return err
		}
		m, err := s.txReadResponses(readRespBurst)
		if err != nil {
			return err
		}
		if n+m == 0 {
			break
		}
		if tx.w.Buffered() >= flushBytes || len(tx.done) >= maxBatchCompletions-sqBurst {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return s.flush()
}

// flush writes the batch and completes the sends it finished.
func (s *stream) flush() error {
	tx := &s.tx
	if tx.w.Buffered() == 0 && len(tx.done) == 0 {
		return nil
	}
	raceReleaseIO()
	if err := tx.w.Flush(); err != nil {
		return err
	}
	s.dev.Counters.BytesSent.Add(tx.bytes)
	tx.bytes = 0
	s.qp.CompleteSends(tx.done)
	tx.done = tx.done[:0]
	return nil
}

// txSendQueue queues up to budget FPDUs of send work requests and returns
// how many it queued.
func (s *stream) txSendQueue(budget int) (int, error) {
	tx := &s.tx
	n := 0
	for n < budget {
		if !tx.curOn {
			if !s.qp.NextSend(&tx.cur) {
				break
			}
			if !s.startSend() {
				return n, nil // the stream is terminating
			}
		}
		if err := s.txNext(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// txNext queues the next FPDU of tx.cur: its Read Request, or its next
// segment.
func (s *stream) txNext() error {
	if s.tx.cur.Opcode == verbs.OpRDMARead {
		return s.txReadRequest()
	}
	return s.txSegment()
}

// startSend prepares tx.cur for segmentation. A local buffer that is no
// longer valid (deregistered since the post) fails the request and the
// stream, as siw does. A Read's sink is checked here; the memory of a
// Send or Write is resolved, and held, for each segment (txSegment), so
// that between segments tx holds none.
func (s *stream) startSend() bool {
	tx := &s.tx
	w := &tx.cur
	if w.Opcode == verbs.OpRDMARead {
		_, h, f := s.qp.ResolveSGE(&w.SGL[0], true)
		h.Release()
		if f != soft.FaultNone {
			s.failLocal()
			return false
		}
	}
	tx.curOn, tx.si, tx.soff, tx.off = true, 0, 0, 0
	switch w.Opcode {
	case verbs.OpRDMAWrite:
		tx.op = iwarp.OpRDMAWrite
	case verbs.OpSend, verbs.OpSendWithInv:
		tx.sendMSN++
		tx.msn = tx.sendMSN
		tx.op = sendOpcode(w)
	}
	return true
}

// sendOpcode picks the RDMAP Send variant of a send work request.
func sendOpcode(w *soft.SendWQE) iwarp.Opcode {
	se := w.Flags&verbs.SendSolicited != 0
	switch {
	case w.Opcode == verbs.OpSendWithInv && se:
		return iwarp.OpSendSEInv
	case w.Opcode == verbs.OpSendWithInv:
		return iwarp.OpSendInv
	case se:
		return iwarp.OpSendSE
	}
	return iwarp.OpSend
}

// nextPayload returns the payload of the next FPDU of tx.cur, at most max
// bytes, as a prefix to copy and a payload: the rest of the current SGE;
// or, when the rest of the message is small and spans several SGEs, all
// of it gathered into the prefix; or, when the current SGE's rest is
// small and a larger SGE follows, that rest gathered into the prefix and
// as much of the next SGE as fits behind it, so that a small header SGE
// and its data SGE make one FPDU without the data being copied.
func (tx *txState) nextPayload(max int) (prefix, payload []byte) {
	// A message of one slice that fits one FPDU, nearly every small
	// message: all of it, without the walk below.
	if tx.si == 0 && tx.soff == 0 && len(tx.slices) == 1 && len(tx.slices[0]) <= max {
		payload = tx.slices[0]
		tx.soff = len(payload)
		return nil, payload
	}
	for tx.si < len(tx.slices) && tx.soff == len(tx.slices[tx.si]) {
		tx.si, tx.soff = tx.si+1, 0
	}
	if tx.si == len(tx.slices) {
		return nil, nil
	}
	rest := tx.cur.Len - tx.off
	cur := tx.slices[tx.si][tx.soff:]
	if uint64(len(cur)) < rest && rest <= uint64(min(max, gatherMax)) {
		n := 0
		for ; tx.si < len(tx.slices); tx.si, tx.soff = tx.si+1, 0 {
			n += copy(tx.gather[n:], tx.slices[tx.si][tx.soff:])
		}
		return tx.gather[:n], nil
	}
	if uint64(len(cur)) < rest && len(cur) <= gatherMax && len(cur) < max && tx.si+1 < len(tx.slices) {
		n := copy(tx.gather[:], cur)
		tx.si, tx.soff = tx.si+1, 0
		next := tx.slices[tx.si]
		if len(next) > max-n {
			next = next[:max-n]
		}
		tx.soff = len(next)
		return tx.gather[:n], next
	}
	if len(cur) > max {
		cur = cur[:max]
	}
	tx.soff += len(cur)
	return nil, cur
}

// errLocalFault stops the transmit loops after failLocal has ended the
// stream.
var errLocalFault = errors.New("siw: local memory fault")

// failLocal fails tx.cur and the stream for a local memory fault.
func (s *stream) failLocal() {
	s.qp.CompleteSend(s.tx.cur.Seq, verbs.WCLocProtErr, 0)
	s.terminate(causeLocal, nil)
}

// txSegment queues the next FPDU of the Send or RDMA Write tx.cur. The
// message's memory is resolved again and held while the segment is
// gathered and framed (the frame writer computes the CRC and copies small
// payloads then); a buffer deregistered since the last segment fails the
// request. A large payload the blocking writer keeps by reference until
// its flush is read by the kernel (writev), which faults cleanly (EFAULT)
// rather than crash if the application frees it in between.
func (s *stream) txSegment() error {
	tx := &s.tx
	w := &tx.cur
	var f soft.Fault
	tx.slices, f = s.qp.SendSlices(w, tx.slices[:0], &tx.holds)
	if f != soft.FaultNone {
		tx.curOn = false
		s.failLocal()
		return errLocalFault
	}
	var hdr iwarp.Header
	var prefix, payload []byte
	if tx.op == iwarp.OpRDMAWrite {
		prefix, payload = tx.nextPayload(tx.maxWrite)
		last := tx.off+uint64(len(prefix)+len(payload)) == w.Len
		hdr = tx.hdr[:iwarp.TaggedHeaderLen]
		iwarp.TaggedHeader(hdr).Encode(&iwarp.TaggedFields{
			Opcode: iwarp.OpRDMAWrite, Last: last, STag: iwarp.STag(w.RKey), TO: w.RemoteAddr + tx.off,
		})
	} else {
		prefix, payload = tx.nextPayload(tx.maxSend)
		last := tx.off+uint64(len(prefix)+len(payload)) == w.Len
		var inv iwarp.STag
		if w.Opcode == verbs.OpSendWithInv {
			inv = iwarp.STag(w.InvRKey)
		}
		hdr = tx.hdr[:iwarp.UntaggedHeaderLen]
		iwarp.UntaggedHeader(hdr).Encode(&iwarp.UntaggedFields{
			Opcode: tx.op, Last: last, InvalidateSTag: inv, QN: iwarp.QNSend, MSN: tx.msn, MO: uint32(tx.off),
		})
	}
	raceReleaseIO()
	// The holds end once the segment is framed, on every path from here:
	// released in line, not deferred, which cost a defer record a
	// segment.
	err := tx.w.FrameParts(hdr, prefix, payload)
	tx.holds.Release()
	if err != nil {
		return err
	}
	tx.off += uint64(len(prefix) + len(payload))
	tx.bytes += uint64(len(prefix) + len(payload))
	if tx.off == w.Len {
		tx.curOn = false
		tx.done = append(tx.done, w.Seq)
	}
	return nil
}

// txReadRequest queues the RDMA Read Request of tx.cur. The Read is
// entered in the outbound Read queue first, so that rx knows it before
// its response can arrive; it completes in rx.
func (s *stream) txReadRequest() error {
	tx := &s.tx
	w := &tx.cur
	tx.curOn = false
	sink := w.SGL[0]
	r := outboundRead{seq: w.Seq, sink: sink, sinkSTag: iwarp.STag(sink.LKey), sinkTO: sink.Addr, size: sink.Length}
	if !s.orq.push(&r) {
		// The engine hands out at most ORD Reads; a full queue is a
		// bookkeeping bug, and the stream cannot go on.
		s.qp.CompleteSend(w.Seq, verbs.WCLocQPOpErr, 0)
		s.terminate(causeLocal, nil)
		return nil
	}
	tx.readMSN++
	hdr := tx.hdr[:iwarp.ReadRequestHeaderLen]
	iwarp.ReadRequestHeader(hdr).Encode(&iwarp.ReadRequestFields{
		MSN: tx.readMSN, SinkSTag: r.sinkSTag, SinkTO: r.sinkTO, Size: r.size,
		SrcSTag: iwarp.STag(w.RKey), SrcTO: w.RemoteAddr,
	})
	return tx.frame(hdr, nil)
}

// queueRTR queues the peer-to-peer RTR frame the initiator sends first
// (RFC 6581): a zero-length RDMA Write, or a zero-length RDMA Read
// Request whose (empty) response rx absorbs.
func (s *stream) queueRTR() error {
	tx := &s.tx
	if s.rtr == rtrRead {
		s.orq.push(&outboundRead{rtr: true})
		tx.readMSN++
		hdr := tx.hdr[:iwarp.ReadRequestHeaderLen]
		iwarp.ReadRequestHeader(hdr).Encode(&iwarp.ReadRequestFields{MSN: tx.readMSN, SrcSTag: rtrSTag})
		return tx.frame(hdr, nil)
	}
	return s.frameZeroWrite()
}

// frameZeroWrite frames a zero-length RDMA Write to rtrSTag: the Write
// RTR, and the startup nudge. The caller holds tx.mu.
func (s *stream) frameZeroWrite() error {
	tx := &s.tx
	hdr := tx.hdr[:iwarp.TaggedHeaderLen]
	iwarp.TaggedHeader(hdr).Encode(&iwarp.TaggedFields{Opcode: iwarp.OpRDMAWrite, Last: true, STag: rtrSTag})
	return tx.frame(hdr, nil)
}

// txReadResponses queues up to budget FPDUs of Read Responses.
func (s *stream) txReadResponses(budget int) (int, error) {
	tx := &s.tx
	n := 0
	for n < budget {
		if !tx.rrOn {
			if !s.irq.front(&tx.rr) {
				break
			}
			tx.rrSent = 0
			tx.rrOn = true
		}
		// Checked when the request arrived; checked again, and held while
		// it is framed, for every segment, because the memory may have
		// been deregistered since.
		var chunk []byte
		var hold soft.Hold
		if tx.rr.size > 0 {
			mem, h, f := s.qp.ResolveRemote(tx.rr.srcSTag, tx.rr.srcTO, uint64(tx.rr.size), verbs.AccessRemoteRead)
			if f != soft.FaultNone {
				tx.rrOn = false
				s.terminate(readCause(f), tx.rr.hdr[:])
				return n, nil
			}
			chunk, hold = mem[tx.rrSent:], h
		}
		if max := iwarp.MaxPayload(iwarp.TaggedHeaderLen, s.maxULPDU); len(chunk) > max {
			chunk = chunk[:max]
		}
		last := tx.rrSent+uint32(len(chunk)) == tx.rr.size
		hdr := tx.hdr[:iwarp.TaggedHeaderLen]
		iwarp.TaggedHeader(hdr).Encode(&iwarp.TaggedFields{
			Opcode: iwarp.OpRDMAReadResponse, Last: last, STag: tx.rr.sinkSTag, TO: tx.rr.sinkTO + uint64(tx.rrSent),
		})
		err := tx.frame(hdr, chunk)
		hold.Release()
		if err != nil {
			return n, err
		}
		tx.rrSent += uint32(len(chunk))
		tx.bytes += uint64(len(chunk))
		n++
		if last {
			tx.rrOn = false
			s.irq.pop()
		}
	}
	return n, nil
}

// txFinish runs when runTx returns. If the stream ends with a Terminate,
// it is sent now, behind any complete FPDUs still batched, and the
// sending side of the connection is shut so that the peer reads the
// Terminate, then the end of the stream.
func (s *stream) txFinish() {
	_, term, _ := s.ending()
	if term == nil {
		return
	}
	tx := &s.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := s.flushDirect(); err != nil {
		return
	}
	tx.term = term.Append(tx.term[:0])
	err := tx.frame(iwarp.Header(tx.term[:iwarp.TerminateHeaderLen]), tx.term[iwarp.TerminateHeaderLen:])
	if err == nil {
		err = tx.fw.Flush()
	}
	if err != nil {
		s.log.Debug().Err(err).Msg("siw: could not send Terminate")
		return
	}
	s.dev.Counters.TerminatesSent.Add(1)
	s.nc.CloseWrite()
}

// frame queues one FPDU. The frame writer may write earlier FPDUs of the
// batch to make room, so the race annotation comes first.
func (tx *txState) frame(hdr iwarp.Header, payload []byte) error {
	raceReleaseIO()
	return tx.w.Frame(hdr, payload)
}
