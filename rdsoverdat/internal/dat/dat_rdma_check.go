package dat

import (
	"math"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// In-band checks of RDMA ops (wire/rdmacheck.go). iWARP has no way to
// refuse an RDMA op but to terminate the connection: a READ or WRITE on
// a freed or used-once R_Key, outside the mapping or against its rights
// makes the owner's RNIC send a Terminate, and the sender learns of it
// as a broken connection (its WRITE completed locally long before). So
// the node running an op (the server, "runner") first asks the node whose
// memory it names (the client, "owner") with a request record on the
// same connection; the owner checks the op against its table of mappings
// (dat_rdma_mr.go) and answers. A refused op completes with
// RDS_RDMA_REMOTE_ERROR, its message is not sent, and the connection
// carries on. An admitted op pins its mapping, so that a FreeMR racing
// with it waits instead of breaking the connection:
//
//   - on a use-once mapping, the op alone, until it is over;
//   - on any other mapping, the answer grants the runner a lease on the
//     whole mapping, and later ops inside it are posted without asking,
//     until FreeMR revokes the lease: the runner drops it under leaseMu,
//     which it holds while it posts under a lease, and answers with a
//     revoked record fenced behind its READs, so that record comes after
//     every op of the lease has reached the memory. A stream of ops on
//     a registered buffer costs one round trip, not one per op.
//
// Ordering does the bookkeeping. Requests, answers and the ends of ops
// each travel in order on one reliable connection, so the owner keeps the
// use-once ops it admitted in a FIFO (grants) and the runner the ops it
// asked about (asked): an answer is for the oldest request unanswered,
// and the end of a use-once op (the arrival of its message, which carries
// RDS_EXTHDR_RDMA, or a release record for an op that sends none) is the
// end of the oldest admitted one. Ids are checked against the FIFOs all
// the same; a mismatch is a protocol error that resets the connection.
// Everything is per EP: when a connection ends, its pins and leases go
// and its unanswered ops are dropped with their messages (the core never
// resends an op).
//
// The runner sends requests in its ring of send slots like fragments
// (xmit's goroutine), for the op it is about to send and, while that one
// waits, for the ops of up to datRDMALookahead messages after it; the
// owner answers from its event goroutine in one frame of up to
// wire.MaxRDMAChecks records, one frame in flight per EP, in the slot
// after the ack frame's header. Revokes and revoked records travel in
// the same kind of frame.

// States of datCheck.
const (
	checkNone    uint32 = iota
	checkAsked          // request sent, no answer yet
	checkGranted        // the owner admitted the op
	checkRefused        // the owner refused it: remote access error
	checkPosted         // admitted, and its work requests are posted
)

// datCheck is an op's check, part of the rdmaOp. ep and id are set by
// the runner's transmit side before the request is posted and read under
// the EP's rdma.mu by the event goroutine; state is the answer.
type datCheck struct {
	ep     *datEP
	id     uint32
	leased bool // granted by a lease: no hold to release, posted under leaseMu
	state  atomic.Uint32
}

// datLease is a lease the peer granted: ops inside [addr, addr+n), and
// writes only if write, need no check.
type datLease struct {
	addr, n uint64
	write   bool
}

// useLease grants op by a lease the peer gave e, if one covers it
// (inXmit held).
func (e *datEP) useLease(op xport.RDMAOp) {
	if e.covered(op) {
		op.Check().EP, op.Check().Leased = e, true
		op.Check().State.Store(checkGranted)
	}
}

// covered reports whether a lease of e covers op.
func (e *datEP) covered(op xport.RDMAOp) bool {
	r := &e.rdma
	r.leaseMu.Lock()
	l, ok := r.leases[op.RKey()]
	r.leaseMu.Unlock()
	a, n := op.RemoteAddr(), uint64(op.Len())
	return ok && (l.write || !op.Write()) && a >= l.addr && a-l.addr <= l.n && n <= l.n-(a-l.addr)
}

// holdLease makes sure the lease op was granted by is still there, and
// keeps it there until dropLease: a revoke waits, so its revoked record
// is posted after the work request posted meanwhile. False: the lease
// was revoked. Ops not granted by a lease always pass.
func (e *datEP) holdLease(op xport.RDMAOp) bool {
	if !op.Check().Leased {
		return true
	}
	r := &e.rdma
	r.leaseMu.Lock()
	if _, ok := r.leases[op.RKey()]; !ok {
		r.leaseMu.Unlock()
		return false
	}
	return true
}

func (e *datEP) dropLease(op xport.RDMAOp) {
	if op.Check().Leased {
		e.rdma.leaseMu.Unlock()
	}
}

// datRevoke asks the event goroutine to revoke the lease on rkey that e
// holds (software event from Free).
type datRevoke struct {
	e    *datEP
	rkey uint32
}

// queueRevoke sends a revoke record for rkey (event goroutine); a dead EP
// gives its leases back when it is retired.
func (e *datEP) queueRevoke(rkey uint32) {
	if e.dead.Load() {
		return
	}
	e.rdma.answers = append(e.rdma.answers, wire.CheckFields{Kind: wire.CheckRevoke, RKey: rkey})
	e.dn.wake(e)
}

// datGrant is an op the owner admitted: its id and pinned mapping.
type datGrant struct {
	id uint32
	mr *datMR
}

// datCheckCookie marks the completion of the answer frame; it is routed
// with the RDMA work requests' (datRDMACookie) and above their numbers.
const datCheckCookie = datRDMACookie | 1<<61

// datRDMALookahead is how many messages past the one being sent the
// sender takes from the path while an op waits for its answer, to ask
// about their ops at once: checks of a stream of ops overlap instead of
// costing a round trip each.
const datRDMALookahead = 16

// nextTx returns the next message to send on e: the oldest taken ahead,
// else the path's next. What was taken ahead was taken for e too: a
// round on another EP starts by giving it back (xmit, abortTx).
func (dp *datPath) nextTx(e *datEP) xport.Msg {
	if m, ok := dp.ahead.Pop(); ok {
		dp.txQueued = -1
		return m
	}
	m, q := dp.p.NextTxQueued(e.gen)
	dp.txQueued = q
	return m
}

// abortTx gives txm and the messages taken after it back to the path
// (TxAbort), the last first, so that they return in order. Their EP is
// going down; it forgets the checks it asked for them, whose ops may be
// recycled with their messages now.
func (dp *datPath) abortTx() {
	if e := dp.txEP; e != nil {
		r := &e.rdma
		r.mu.Lock()
		clear(r.asked)
		r.asked = r.asked[:0]
		r.mu.Unlock()
	}
	for m, ok := dp.ahead.PopBack(); ok; m, ok = dp.ahead.PopBack() {
		dp.p.TxAbort(m)
	}
	if dp.txm != nil {
		dp.p.TxAbort(dp.txm)
		dp.txm = nil
	}
}

// datAskable reports whether op is to be asked about on e: not yet, and
// short enough to name (an op above 4 GiB fails when it is sent).
func datAskable(op xport.RDMAOp, e *datEP) bool {
	return op != nil && op.Check().EP != e && op.Len() <= math.MaxUint32
}

// askRDMA sends, in one check frame, the requests for head's op and for
// the ops of the messages after it, taking up to datRDMALookahead of
// them from the path (inXmit held). Ops already asked on e are skipped.
// It returns false if head's op was to be asked and could not be: e has
// no send slot or credit now (it is stalled, woken when it has) or is
// going down.
func (e *datEP) askRDMA(head xport.RDMAOp) bool {
	r, dp := &e.rdma, e.dp
	ops := r.askBuf[:0]
	if head.Check().EP != e {
		ops = append(ops, head)
	}
	for i := range dp.ahead.Len() {
		if op := (*dp.ahead.At(i)).RDMA(); datAskable(op, e) && !e.covered(op) {
			ops = append(ops, op)
		}
	}
	for dp.ahead.Len() < dp.ahead.Cap() {
		m := dp.p.NextTx(e.gen)
		if m == nil {
			break
		}
		dp.ahead.Push(m)
		if datAskable(m.RDMA(), e) && !e.covered(m.RDMA()) {
			ops = append(ops, m.RDMA())
		}
	}
	if len(ops) == 0 {
		return true
	}
	off, got, adv, ok := e.ringSlot()
	if !ok {
		return head.Check().EP == e
	}
	slot := e.tx.Bytes()[off : off+wire.HeaderLen+len(ops)*wire.RDMACheckLen]
	h := wire.Header(slot[:wire.HeaderLen])
	wire.EncodeRDMACheckHeader(h, len(ops), e.hAck(), uint8(adv))
	h.SetChecksum()
	r.mu.Lock()
	for i, op := range ops {
		r.checkID++
		op.Check().EP, op.Check().ID = e, r.checkID
		op.Check().State.Store(checkAsked)
		wire.RDMACheck(slot[wire.HeaderLen+i*wire.RDMACheckLen:]).Encode(&wire.CheckFields{Kind: wire.CheckRequest,
			Write: op.Write(), ID: r.checkID, RKey: op.RKey(), Length: uint32(op.Len()), Address: op.RemoteAddr()})
		r.asked = append(r.asked, op)
	}
	r.mu.Unlock()
	if !e.postRing(off, len(slot), got, adv, dat.CompletionDefault) {
		r.mu.Lock()
		r.asked = r.asked[:len(r.asked)-len(ops)]
		r.mu.Unlock()
		for _, op := range ops {
			op.Check().EP = nil
		}
		clear(ops)
		return false
	}
	clear(ops)
	return true
}

// releaseRDMA posts the release record of op, which sends no message
// (inXmit held). fence: after the op's READs completed, so that the
// owner unpins its mapping only once they were served.
func (e *datEP) releaseRDMA(op xport.RDMAOp, fence bool) bool {
	off, got, adv, ok := e.ringSlot()
	if !ok {
		return false
	}
	slot := e.tx.Bytes()[off : off+wire.HeaderLen+wire.RDMACheckLen]
	h := wire.Header(slot[:wire.HeaderLen])
	wire.EncodeRDMACheckHeader(h, 1, e.hAck(), uint8(adv))
	h.SetChecksum()
	wire.RDMACheck(slot[wire.HeaderLen:]).Encode(&wire.CheckFields{Kind: wire.CheckRelease, ID: op.Check().ID})
	flags := dat.CompletionDefault
	if fence {
		flags = dat.CompletionBarrierFence
	}
	return e.postRing(off, len(slot), got, adv, flags)
}

// ringSlot takes the next send slot and a credit, as a fragment does
// (inXmit held); ok false: stalled (woken when completions or credits
// arrive).
func (e *datEP) ringSlot() (off int, got, adv uint32, ok bool) {
	depth := uint64(e.dn.cfg.SendDepth)
	if e.txPosted-e.txDone.Load() >= depth {
		e.stall(false)
		if e.txPosted-e.txDone.Load() >= depth {
			return 0, 0, 0, false
		}
		e.stalled.Store(false)
	}
	got, adv = e.credits.grab(1)
	if got == 0 {
		e.stall(true)
		if got, adv = e.credits.grab(1); got == 0 {
			return 0, 0, 0, false
		}
		e.stalled.Store(false)
	}
	return e.slotOff(depth), got, adv, true
}

// postRing posts n bytes of the slot at off as one Send, with the ring's
// completion cadence (inXmit held). A failure means the connection is
// going down.
func (e *datEP) postRing(off, n int, got, adv uint32, flags dat.CompletionFlags) bool {
	if e.txPosted%e.signalEvery != e.signalEvery-1 {
		flags |= dat.CompletionSuppress
	}
	e.iov[0] = e.tx.Triplet(off, n)
	if err := e.ep.PostSend(e.iov[:], dat.DTOCookie(e.txPosted), flags); err != nil {
		e.credits.unGrab(got, adv)
		if !e.dead.Load() {
			e.ep.Disconnect(dat.CloseAbrupt)
		}
		return false
	}
	e.txPosted++
	return true
}

// onChecks handles a received check frame (event goroutine); false is a
// protocol error.
func (e *datEP) onChecks(h wire.Header, b []byte) bool {
	n, err := wire.ParseRDMAChecks(h, b)
	if err != nil {
		return false
	}
	r := &e.rdma
	for i := range n {
		c := wire.RDMACheck(b[i*wire.RDMACheckLen : (i+1)*wire.RDMACheckLen])
		switch c.Kind() {
		case wire.CheckRequest:
			if len(r.answers) >= datMaxAnswers || r.grants.Len() >= datMaxGrants {
				return false // more than the peer may have asked about or in flight
			}
			r.answers = append(r.answers, e.admit(c))
			e.dn.wake(e)
		case wire.CheckRevoke:
			r.leaseMu.Lock() // after any work request posted under the lease
			delete(r.leases, c.RKey())
			r.leaseMu.Unlock()
			r.answers = append(r.answers, wire.CheckFields{Kind: wire.CheckRevoked, RKey: c.RKey()})
			r.ansFence = true // and after the lease's READs completed
			e.dn.wake(e)
		case wire.CheckRevoked:
			m := r.lent[c.RKey()]
			if m == nil {
				return false
			}
			delete(r.lent, c.RKey())
			e.dn.mrs.unlend(m, e)
		case wire.CheckAnswer:
			if !e.onAnswer(c) {
				return false
			}
		case wire.CheckRelease:
			if r.grants.Len() == 0 || r.grants.At(0).id != c.ID() {
				return false
			}
			e.endGrant()
		}
	}
	return true
}

// datMaxAnswers bounds the answers an owner queues for one EP: a runner
// asks about at most datRDMALookahead+1 ops at a time. datMaxGrants
// bounds the ops admitted and not over: those asked about plus those in
// flight, which the connection's credits bound.
const (
	datMaxAnswers = wire.MaxRDMAChecks
	datMaxGrants  = datRDMALookahead + 1 + datMaxCredits
)

// admit answers a request (event goroutine): a use-once mapping admits
// the op alone, pinned until its end; any other mapping grants a lease
// on the whole mapping, pinned until the peer gave it back.
func (e *datEP) admit(c wire.RDMACheck) wire.CheckFields {
	a := wire.CheckFields{Kind: wire.CheckAnswer, ID: c.ID(), Status: uint16(xport.RDMARemoteError)}
	m := e.dn.mrs.admit(c, e)
	if m == nil {
		return a
	}
	a.Status = uint16(xport.RDMASuccess)
	r := &e.rdma
	if m.useOnce {
		r.grants.PushGrow(datGrant{id: c.ID(), mr: m})
		return a
	}
	if r.lent[m.rkey] == m {
		e.dn.mrs.unpin(m, e) // leased already: one pin per lease
	} else {
		if r.lent == nil {
			r.lent = make(map[uint32]*datMR)
		}
		r.lent[m.rkey] = m
		e.dn.mrs.lend(m, e)
	}
	a.Lease, a.Write, a.RKey, a.Address, a.Length = true, m.write, m.rkey, m.addr, uint32(m.n)
	return a
}

// onAnswer records the owner's answer for the oldest request and wakes
// the sender waiting for it.
func (e *datEP) onAnswer(c wire.RDMACheck) bool {
	r := &e.rdma
	r.mu.Lock()
	if len(r.asked) == 0 || r.asked[0].Check().ID != c.ID() {
		r.mu.Unlock()
		return false
	}
	op := r.asked[0]
	n := copy(r.asked, r.asked[1:]) // a handful: asked about together
	r.asked[n] = nil
	r.asked = r.asked[:n]
	r.mu.Unlock()
	st := checkGranted
	if c.Status() != uint16(xport.RDMASuccess) {
		st = checkRefused
	} else if c.Lease() {
		r.leaseMu.Lock()
		if r.leases == nil {
			r.leases = make(map[uint32]datLease)
		}
		r.leases[c.RKey()] = datLease{addr: c.Address(), n: uint64(c.Length()), write: c.Write()}
		r.leaseMu.Unlock()
		op.Check().Leased = true
	}
	op.Check().State.Store(st)
	e.dn.wake(e)
	return true
}

// endGrant ends the oldest admitted op (event goroutine).
func (e *datEP) endGrant() {
	r := &e.rdma
	g, _ := r.grants.Pop()
	e.dn.mrs.unpin(g.mr, e)
}

// rdmaArrived handles a complete data message with header h before it
// is delivered (event goroutine): one with RDS_EXTHDR_RDMA on the
// mapping of the oldest admitted use-once op ends that op. One on
// another mapping ran under a lease (maybe returned since: the revoked
// record may overtake the message of the lease's last op, not its data);
// but naming a live use-once mapping it was not admitted for is a
// protocol error (the core would release that mapping). A kernel peer
// checks nothing (dat_kernel.go): its op on a use-once mapping ends with
// its message, as between kernels.
func (e *datEP) rdmaArrived(h wire.Header) bool {
	if h.ExtArea()[0] == byte(wire.ExtNone) || e.kernelPeer {
		return true
	}
	for it := h.Exts(); it.Next(); {
		ext := it.Ext()
		if ext.Type != wire.ExtRDMA {
			continue
		}
		rkey, _ := ext.RKey()
		r := &e.rdma
		switch {
		case r.grants.Len() > 0 && r.grants.At(0).mr.rkey == rkey:
			e.endGrant()
		case e.dn.mrs.isUseOnce(rkey):
			return false
		}
		return true
	}
	return true
}

// sendAnswers posts the queued answers in one frame unless one is in
// flight (event goroutine; retried when its completion or credits come).
func (e *datEP) sendAnswers() {
	r := &e.rdma
	if r.ansInFlight || len(r.answers) == 0 || e.dead.Load() {
		return
	}
	got, adv := e.credits.grab(1)
	if r.ansBlocked = got == 0; r.ansBlocked {
		return
	}
	n := min(len(r.answers), wire.MaxRDMAChecks)
	base := e.dn.cfg.SendDepth*datSlot + wire.HeaderLen
	frame := e.tx.Bytes()[base : base+wire.HeaderLen+n*wire.RDMACheckLen]
	h := wire.Header(frame[:wire.HeaderLen])
	wire.EncodeRDMACheckHeader(h, n, e.hAck(), uint8(adv))
	h.SetChecksum()
	for i := range r.answers[:n] {
		wire.RDMACheck(frame[wire.HeaderLen+i*wire.RDMACheckLen:]).Encode(&r.answers[i])
	}
	r.ansIOV[0] = e.tx.Triplet(base, len(frame))
	flags := dat.CompletionDefault
	if r.ansFence {
		flags = dat.CompletionBarrierFence
	}
	if err := e.ep.PostSend(r.ansIOV[:], datCheckCookie, flags); err != nil {
		e.credits.unGrab(got, adv)
		return
	}
	r.answers = r.answers[:copy(r.answers, r.answers[n:])]
	r.ansFence = r.ansFence && len(r.answers) > 0
	r.ansInFlight = true
}

// onAnswersSent handles the answer frame's completion (event goroutine).
func (e *datEP) onAnswersSent(c *dat.DTOCompletion) {
	e.rdma.ansInFlight = false
	if c.Status == dat.DTOSuccess && len(e.rdma.answers) > 0 {
		e.dn.wake(e)
	}
}

// retireChecks ends the EP's checks: its pins go, its unanswered ops
// stay unanswered (their messages are dropped with the connection).
func (e *datEP) retireChecks() {
	r := &e.rdma
	for r.grants.Len() > 0 {
		e.endGrant()
	}
	for rkey, m := range r.lent {
		delete(r.lent, rkey)
		e.dn.mrs.unlend(m, e)
	}
	r.answers = nil
	r.mu.Lock()
	clear(r.asked)
	r.asked = nil
	r.mu.Unlock()
}
