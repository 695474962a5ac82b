package dat

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/internal/ring"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The dat transmit side (rds_ib_xmit, ib_send.c). Transmission runs in
// whichever goroutine kicks the path, as the kernel's rds_send_xmit does:
// the first to find the path idle (inXmit) sends until its queue is
// empty or it runs out of credits or send slots; everybody else only
// leaves a wake-up (want). A stalled sender is restarted by the event
// goroutine when credits arrive or send slots complete.
//
// Each fragment is copied into a send slot of the EP's LMR: the 48-byte
// header, with this fragment's h_credit and checksum, then up to 4096
// payload bytes (more if both nodes offered it, dat_frag.go), posted as
// one Send. A round's fragments go to the EP together (flushTx): one
// list post per datTxBatch of them, which over rdmacore is one
// ibv_post_send, one doorbell, where each fragment was one (over rxe a
// system call in which the kernel transmits). Send completions are suppressed
// except on every 16th slot (every SendDepth/2th if that is fewer) and on
// a message's last fragment when the path's queue is empty; completions
// arrive in order, so one completion frees every slot before it too.
//
// ACK_REQUIRED goes on a message the core marked (SO_SNDBUF half full, a
// retransmission), on every 8th message or after 16 MiB (rds_send_xmit's
// max_unacked_packets and max_unacked_bytes), and on the last message
// before the queue runs dry, so that an idle connection's retransmit
// queue always empties and SO_SNDBUF accounting returns to zero.

const (
	datMaxUnackedPackets = 8
	datMaxUnackedBytes   = 16 << 20
	// datAckCookie marks the ack-only frame's send completion.
	datAckCookie = dat.DTOCookie(1 << 63)
	// datTxBatch is the most fragments a round holds before it posts
	// them: up to one signalled completion's worth (datSignalEvery) and
	// more, so that a sender refilling its ring after a completion rings
	// once.
	datTxBatch = 32
)

// datEPExtraDTOs are an EP's request DTOs beyond its send slots: the
// ack-only frame, the RDMA check answer frame, the RDMA work requests.
const datEPExtraDTOs = 2 + datRDMADepth

// datEP is one DAT EP of a path: a connection incarnation with its own
// credits, send slots and reassembly state.
//
// The fields every message touches come first, in the first three cache
// lines, and the receive's reassembly state right after them: spread
// over the struct, between the send ring's lists and the RDMA state, a
// message's send and its receive each touched two or three lines more,
// cold after the round trip's system calls.
type datEP struct {
	dn *datNode
	dp *datPath
	ep *ep.EP
	tx *lmr.LMR // SendDepth slots, the ack-only frame's header, the RDMA check answer frame

	dead atomic.Bool
	// genKnown: syncPeerGen has applied the peer's my_gen (event goroutine).
	genKnown bool
	// kernelPeer: the peer is rds_rdma (dat_kernel.go); set before the
	// EP is published as up.
	kernelPeer bool
	active     bool
	queued     bool // on dn.wakes

	credits datCredits

	// Transmit state of this EP's send ring, used under the path's
	// inXmit; txDone is set by the event goroutine.
	stalled  atomic.Bool // waiting for credits or send slots
	txPosted uint64      // fragments posted
	// txBase is the fragment number that took slot 0: the ring starts
	// over at slot 0 whenever it is empty (slotOff).
	txBase uint64
	txN    int
	// signalEvery: a signalled completion every this many fragments, so
	// that a full ring always has one coming.
	signalEvery uint64
	txDone      atomic.Uint64 // fragments completed

	// frag is the connection's fragment size for sending (0: 4096), set
	// before the EP is published as up (dat_frag.go).
	frag int

	// Ack state: ackRequested by the receive side, cleared by a
	// piggybacked ack; the rest is the event goroutine's.
	ackRequested atomic.Bool
	ackInFlight  bool
	ackBlocked   bool   // an ack found no send credit
	ackEvery     uint32 // posted credits that ask for an advertisement
	lastAck      wire.Seq
	// acking: a sequenced message arrived on e, so the path's ackNext
	// counts in the space of e's peer (hAck). Set by the event goroutine.
	acking atomic.Bool

	grant int // SRQ buffers granted to the peer
	// gen is the path's generation for e (NextTx), set before e is
	// published as up.
	gen   uint64
	state datEPState // guarded by dp.mu

	// Reassembly, the event goroutine's.
	rx  datReasm
	rxm xport.Msg

	// txList holds the round's fragments not posted yet, txN of them
	// (flushTx); txIOV is their segments, txList[i]'s IOV txIOV[i:i+1]
	// from newEP on, so that a fragment sets only its fields' values.
	txList [datTxBatch]dat.SendPost
	txIOV  [datTxBatch]dat.LMRTriplet

	iov    [1]dat.LMRTriplet
	ackIOV [1]dat.LMRTriplet
	peer   [datPrivateLen]byte // the peer's private data
	rdma   datRDMA             // RDMA work requests (dat_rdma.go)
}

// datTx is a path's transmit state, owned by whoever holds inXmit.
type datTx struct {
	inXmit    atomic.Bool
	want      atomic.Bool
	txm       xport.Msg // message being fragmented
	txEP      *datEP    // the EP txm's fragments went to
	txOff     int       // payload bytes of txm already posted
	txDrained bool      // the queue was empty when txm was taken
	// txQueued is how many messages the path's queue held behind txm
	// when nextTx took it from there, -1 when it came from ahead.
	txQueued   int
	sinceAck   int // messages since the last ACK_REQUIRED
	sinceBytes int

	// ahead holds the messages taken after txm, datRDMALookahead at
	// most (dat_rdma_check.go).
	ahead ring.FIFO[xport.Msg]
}

// kick transmits what the path has queued on its current EP, unless
// another goroutine is at it (it will see want). One guard per path, not
// per EP: a sender still holding an EP that just died and the new EP's
// sender never run at once, so a message the dead EP could not send goes
// back to the queue (TxAbort) before anything after it leaves.
func (dp *datPath) kick() {
	dn := dp.dn
	dp.want.Store(true)
	for dp.want.Load() {
		if !dp.inXmit.CompareAndSwap(false, true) {
			return
		}
		dp.want.Store(false)
		dn.xmits.Add(1)
		if e := dp.up.Load(); e != nil && !e.dead.Load() && !dn.closing.Load() {
			e.stalled.Store(false) // set again if this round stalls
			dp.xmit(e)
			dp.flushTx(e)
		}
		dn.xmits.Add(-1)
		dp.inXmit.Store(false)
	}
}

// xmit sends messages on e until the queue is empty or a stall, leaving
// the last fragments to the caller's flushTx. inXmit is held.
func (dp *datPath) xmit(e *datEP) {
	p := dp.p
	depth := uint64(dp.dn.cfg.SendDepth)
	if dp.txm != nil && dp.txEP != e {
		dp.abortTx() // its EP died mid-message: start it over on e
	}
	// dry: the last message this round took left the queue empty. The
	// round then ends without asking the path again, under its lock, for
	// nothing: whatever is queued after that take kicks the path, which
	// sets want after kick cleared it for this round, and the kick loop
	// runs another.
	dry := false
	for {
		m, taken := dp.txm, false
		if m == nil {
			if dry && dp.ahead.Len() == 0 {
				return
			}
			// Once e's Down has run, NextTx gives nothing for e: the path
			// may be up on the next EP while this round still holds e,
			// whose Up kicked and so left want for the kick loop.
			if m = dp.nextTx(e); m == nil {
				return
			}
			dry = dp.txQueued == 0
			dp.txm, dp.txEP, dp.txOff, taken = m, e, 0, true
		}
		// Header and payload, asked for once a message, not per fragment.
		h, payload := m.Header(), m.Payload()
		total := len(payload)
		if taken {
			dp.prepareHeader(m, h, total)
		}
		// The op, asked for once: a message without one (nearly all)
		// skips the op's steps.
		op := m.RDMA()
		if op != nil {
			if !dp.flushTx(e) {
				return // an op's requests go after the fragments before it
			}
			switch e.xmitRDMA(m) {
			case datXmitStop:
				return
			case datXmitSkip:
				p.TxDone(m)
				dp.txm = nil
				continue
			case datXmitDrop:
				p.TxAbort(m) // the op failed: its message is dropped now, not left for an ack
				dp.txm = nil
				continue
			}
		}
		for {
			if e.txPosted-e.txDone.Load() >= depth {
				e.stall(false)
				if e.txPosted-e.txDone.Load() >= depth {
					return
				}
				e.stalled.Store(false)
			}
			got, adv := e.credits.grab(1)
			if got == 0 {
				e.stall(true)
				if got, adv = e.credits.grab(1); got == 0 {
					return
				}
				e.stalled.Store(false)
			}
			off := e.slotOff(depth)
			n := datFragment(e.tx.Bytes()[off:off+datSlot], h, payload, dp.txOff, e.frag, uint8(adv))
			last := dp.txOff+n == total
			flags := dat.CompletionSuppress
			if e.txPosted%e.signalEvery == e.signalEvery-1 {
				flags = dat.CompletionDefault
			}
			if op != nil && dp.txOff == 0 && datFenced(op) { // datFenced is not inlined
				flags |= dat.CompletionBarrierFence // after the op's READs (dat_rdma.go)
			}
			if last {
				flags |= dat.CompletionSolicitedWait
			}
			i := e.txN
			e.txIOV[i] = e.tx.Triplet(off, wire.HeaderLen+n)
			e.txList[i].Cookie, e.txList[i].Flags = dat.DTOCookie(e.txPosted), flags
			e.txN++
			e.txPosted++
			dp.txOff += n
			if e.txN == datTxBatch && !dp.flushTx(e) {
				return
			}
			if last {
				break
			}
		}
		p.TxDone(m)
		dp.txm = nil
	}
}

// flushTx posts the fragments the round holds on e, as one list (inXmit
// held), and reports whether they went. One that cannot go means the
// connection is going down (its event follows) or is unusable: it is
// dropped, and the message being sent goes back to the queue; the
// messages already handed back (TxDone) before it stay unacknowledged,
// as if posted and flushed, and are sent again on the next connection.
// Their credits are not given back: they were the dying EP's.
func (dp *datPath) flushTx(e *datEP) bool {
	k := e.txN
	if k == 0 {
		return true
	}
	e.txN = 0
	var err error
	if k == 1 {
		err = e.ep.PostSend(e.txList[0].IOV, e.txList[0].Cookie, e.txList[0].Flags)
	} else {
		_, err = e.ep.PostSendList(e.txList[:k])
	}
	if err == nil {
		return true
	}
	if dp.txEP == e {
		dp.abortTx()
	}
	if !e.dead.Load() {
		e.ep.Disconnect(dat.CloseAbrupt)
	}
	return false
}

// slotOff returns the offset of the send slot for the next fragment
// (inXmit held). A ring that is empty, every fragment posted having
// completed, starts over at slot 0: request-response traffic then writes
// one slot that stays in the cache, where walking the whole ring touched
// memory last used SendDepth messages earlier for every message (in a
// CPU profile of 64 B round trips most of the fragment copy's time was
// the wait for that line). The ring's fill (txPosted-txDone) and the
// completion cadence count fragments, not slots, and are unaffected.
func (e *datEP) slotOff(depth uint64) int {
	if e.txPosted == e.txDone.Load() {
		e.txBase = e.txPosted
	}
	return int((e.txPosted-e.txBase)%depth) * datSlot
}

// datFragment writes into slot the fragment of payload that starts at
// off: header h with h_credit adv (and its checksum redone then), then up
// to frag payload bytes (0: 4096). It returns the payload bytes written.
func datFragment(slot []byte, h wire.Header, payload []byte, off, frag int, adv uint8) int {
	n := min(fragOr4K(frag), len(payload)-off)
	copyHeader(slot, h)
	if adv > 0 {
		fh := wire.Header(slot[:wire.HeaderLen])
		fh.SetCredit(adv)
		fh.SetChecksum()
	}
	copy(slot[wire.HeaderLen:], payload[off:off+n])
	return n
}

// copyHeader copies header h to the front of slot in six word moves:
// copy, whose length the compiler does not know, calls memmove, and
// around that call datFragment saves and reloads its registers.
func copyHeader(slot []byte, h wire.Header) {
	_, _ = slot[wire.HeaderLen-1], h[wire.HeaderLen-1]
	le := binary.LittleEndian
	le.PutUint64(slot[0:], le.Uint64(h[0:]))
	le.PutUint64(slot[8:], le.Uint64(h[8:]))
	le.PutUint64(slot[16:], le.Uint64(h[16:]))
	le.PutUint64(slot[24:], le.Uint64(h[24:]))
	le.PutUint64(slot[32:], le.Uint64(h[32:]))
	le.PutUint64(slot[40:], le.Uint64(h[40:]))
}

// copyHeader's six words are the whole header: both fail to compile
// if wire.HeaderLen is not 48.
var (
	_ [wire.HeaderLen - 48]struct{}
	_ [48 - wire.HeaderLen]struct{}
)

// wakeForCredits has the event loop retry what waits for send credits
// (a stalled sender, a blocked ack or check answer) once credits came or
// flow control went off. Event goroutine only.
func (e *datEP) wakeForCredits() {
	if e.stalled.Load() || e.ackBlocked || e.rdma.ansBlocked {
		e.dn.wake(e)
	}
}

// stall records that the sender waits; credit says for credits (counted
// as a credit stall) rather than send slots (counted as a full ring).
// The caller tries once more after setting the flag, so that a wake-up
// racing with it is not lost.
func (e *datEP) stall(credit bool) {
	if e.stalled.Swap(true) {
		return
	}
	if credit {
		e.dp.p.Count(xport.CountCreditStall)
	} else {
		e.dp.p.Count(xport.CountTxRingFull)
	}
}

// prepareHeader finalizes m's header h once for all its fragments of a
// payload of l bytes: flags, the piggybacked ack, h_credit 0 and the
// checksum.
func (dp *datPath) prepareHeader(m xport.Msg, h wire.Header, l int) {
	f := m.WireFlags()
	q := dp.txQueued
	if q < 0 {
		q, _ = dp.p.Pending()
	}
	dp.txDrained = q == 0 && dp.ahead.Len() == 0
	// A map's WireFlags are exactly FlagCongBitmap (xport.Msg), so
	// they answer IsCongMap; the path's own tests go before asking m
	// for AckRequired: a drained queue asks for the ack anyway.
	if f != wire.FlagCongBitmap {
		dp.sinceAck++
		dp.sinceBytes += l
		if dp.txDrained || dp.sinceAck >= datMaxUnackedPackets || dp.sinceBytes >= datMaxUnackedBytes || m.AckRequired() {
			f |= wire.FlagAckRequired
			dp.sinceAck, dp.sinceBytes = 0, 0
		}
	}
	h.SetFlags(f)
	h.SetCredit(0)
	dp.txEP.ackRequested.Store(false) // rds_ib_piggyb_ack
	h.SetAck(dp.txEP.hAck())
	h.SetChecksum()
}

// sendAck posts an ack-only frame if one is wanted and none is in flight
// (rds_ib_attempt_ack): sequence, ports and length 0, h_ack the last
// sequence received, h_credit the posted credits. Event goroutine only.
func (e *datEP) sendAck() {
	if e.ackInFlight || e.dead.Load() || (!e.ackRequested.Load() && e.credits.posted() < e.ackEvery) {
		return
	}
	got, adv := e.credits.grab(1)
	if e.ackBlocked = got == 0; e.ackBlocked {
		return // retried when credits arrive
	}
	e.ackRequested.Store(false)
	s := e.dn.cfg.SendDepth
	h := wire.Header(e.tx.Bytes()[s*datSlot : s*datSlot+wire.HeaderLen])
	h.Encode(&wire.Fields{Ack: e.hAck(), Credit: uint8(adv)})
	h.SetChecksum()
	if err := e.ep.PostSend(e.ackIOV[:], datAckCookie, dat.CompletionSolicitedWait); err != nil {
		e.credits.unGrab(got, adv)
		return
	}
	e.ackInFlight = true
	e.dp.p.Count(xport.CountAckSent)
}

// hAck is the h_ack e sends: the last sequence received on the path once
// one has arrived on e, 0 (which frees nothing) before. A connection joins
// two incarnations, so what arrived on it counts in its peer's sequence
// space; what arrived on an earlier connection may count in a previous
// incarnation's, which a restarted peer would take for its own numbers and
// free messages it sent on this connection, lost if it then fails before
// they arrive. The private data's ack_seq carries the earlier connections'
// ack, tagged with its generation (ack_gen).
func (e *datEP) hAck() wire.Seq {
	if !e.acking.Load() {
		return 0
	}
	return wire.Seq(e.dp.ackNext.Load())
}

// onSendDone handles a send completion (event goroutine).
func (e *datEP) onSendDone(c *dat.DTOCompletion) {
	if c.Cookie&datRDMACookie != 0 {
		e.onRDMADone(c)
		return
	}
	if c.Cookie == datAckCookie {
		e.ackInFlight = false
		if c.Status == dat.DTOSuccess {
			e.dn.wake(e)
		}
		return
	}
	if c.Status != dat.DTOSuccess {
		return // flushed: the connection is going down
	}
	if done := uint64(c.Cookie) + 1; done > e.txDone.Load() {
		e.txDone.Store(done)
		if e.stalled.Load() {
			e.dn.wake(e)
		}
	}
}
