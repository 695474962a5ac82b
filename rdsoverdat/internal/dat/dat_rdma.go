package dat

import (
	"math"
	"sync"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/internal/ring"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// RDMA over the dat transport (rds_ib's ib_rdma.c and rds_ib_xmit_rdma).
// Mappings and local registrations are in dat_rdma_mr.go, the in-band
// checks in dat_rdma_check.go; this file posts an op.
//
// An op goes out in three steps on the EP that carries its message:
//
//  1. unless a lease from an earlier answer covers it, a check request
//     to the peer that owns the memory; the sender stalls until the
//     answer comes (a refused op completes with RDS_RDMA_REMOTE_ERROR and
//     its message is dropped, the connection carrying on);
//  2. one RDMA READ or WRITE work request per local buffer, each buffer
//     registered through the node's cache of local LMRs;
//  3. the message's Sends, on the same request queue, so RC ordering
//     delivers a WRITE's data before the Send that follows it; RDMAFence,
//     and a READ op on a use-once mapping (see below), makes the first
//     Send wait for the op's READs (dat.CompletionBarrierFence). An op
//     with no message (a silent one, or one that failed here after its
//     check) ends with a release record instead, fenced the same way.
//
// The fence is the user's choice, as in rds_ib (rds_ib_xmit sets
// IB_SEND_FENCE only from the op's RDS_RDMA_FENCE; rds-rdma(7): without
// it an RDMA READ is not ordered with the ACK that follows). Our own
// bookkeeping needs it in one case. The peer's mapping stays pinned from
// its answer until the op's message or release record arrives (or, under
// a lease, the revoked record), so those must come after the op has
// touched the memory: a WRITE's data is placed before the Send behind it,
// but an RDMA READ is served by the peer after its request arrived, maybe
// after a Send behind it. A use-once op's message ends its pin and
// releases the mapping, and a READ that then finds the R_Key gone breaks
// the connection: so a READ op admitted alone (use-once) always fences
// its Sends. A READ op under a lease does not need to: the message ends
// nothing there, and the revoked record that lets a FreeMR finish is
// fenced behind every READ of the lease (dat_rdma_check.go).
//
// A large WRITE op (datPaceMin bytes or more) has its first WRITE fenced
// behind a 1-byte READ of the op's first remote byte: the READ's round
// trip paces the stream. Without it a window of 1 MiB WRITEs goes out
// back to back, and on a loaded host both ends' goroutines block and wake
// more often per op, each wake-up waiting for a CPU. On a loaded host
// the pacing wins back more than the READ's round trip costs; on an
// idle one it does not, and a 64 KiB op pays the round trip without the
// gain at any load, hence the size threshold. The READ is
// inside the op's check or lease like its WRITEs.
//
// A silent WRITE op, whose message is never acknowledged, ends with a
// 1-byte READ of its last byte before the release: the READ's response
// follows the WRITEs' placement in the stream, so the op's completion
// means the data is in the peer's memory.
//
// At most datRDMADepth RDMA work requests are outstanding per EP; a
// sender with more to post stalls like one without send slots. Every RDMA
// work request is signalled: its completion returns its local
// registration and, the last of an op, reports the op's status.

const (
	// datRDMACookie marks an RDMA work request's completion cookie.
	datRDMACookie = dat.DTOCookie(1 << 62)
	// datRDMADepth is the RDMA work requests an EP may have outstanding.
	datRDMADepth = 16
	// datRDMASeqMask keeps work request numbers below datCheckCookie.
	datRDMASeqMask = 1<<61 - 1
	// datPaceMin is the smallest WRITE op paced by a READ (see above).
	datPaceMin = 512 << 10
)

// datRDMA is an EP's RDMA state.
type datRDMA struct {
	// Progress of the op of the message being sent (inXmit held).
	cur      xport.RDMAOp
	next     int    // local buffers of cur already posted
	roff     uint64 // remote address of the next one
	tailRead bool   // cur's silent-WRITE READ is posted
	failed   bool   // cur failed here after its check: only the release is left
	probe    *lmr.LMR
	checkID  uint32                             // the last check id used
	askBuf   [datRDMALookahead + 1]xport.RDMAOp // scratch of askRDMA
	iov      [1]dat.LMRTriplet                  // scratch of postRDMAWR

	mu    sync.Mutex
	seq   uint64
	outs  map[dat.DTOCookie]datRDMAWR // posted, not completed
	asked []xport.RDMAOp              // checks sent, not answered, oldest first

	// Leases the peer granted (dat_rdma_check.go), by R_Key: xmit checks
	// and posts under leaseMu, the event goroutine revokes under it.
	leaseMu sync.Mutex
	leases  map[uint32]datLease

	// Owner side of the checks, the event goroutine's.
	// grants holds the use-once ops admitted, not over, oldest first.
	grants      ring.FIFO[datGrant]
	lent        map[uint32]*datMR  // leases granted to the peer
	answers     []wire.CheckFields // records not sent yet
	ansInFlight bool
	ansBlocked  bool // the answer frame found no send credit
	ansFence    bool // the next answer frame waits for earlier READs
	ansIOV      [1]dat.LMRTriplet
}

// datRDMAWR is an outstanding RDMA work request. It holds a reference to
// its op's message, where the op lives (message.go).
type datRDMAWR struct {
	m    xport.Msg
	loc  *datLocal // nil: the probe LMR
	last bool
}

// RDMALimits implements xport.RDMACapable.
func (dn *datNode) RDMALimits() xport.RDMALimits { return dn.cfg.RDMA }

// datXmit says what xmit does with a message after xmitRDMA.
type datXmit uint8

const (
	datXmitSend datXmit = iota // send the message's fragments
	datXmitStop                // stop transmitting for now (stalled, or the EP is going down)
	datXmitSkip                // the message has no Sends (a silent op): done with it
	datXmitDrop                // the op failed: the message must not arrive (TxAbort)
)

// xmitRDMA checks and posts m's op, if it has one not yet posted, ahead
// of its Sends (inXmit held).
func (e *datEP) xmitRDMA(m xport.Msg) datXmit {
	op := m.RDMA()
	if op == nil || op.Check().State.Load() == checkPosted {
		return datXmitSend
	}
	if op.Len() > math.MaxUint32 {
		op.Complete(xport.RDMAOtherError) // a check cannot name it
		return datXmitDrop
	}
	if e.kernelPeer {
		e.admitUnchecked(op)
	} else if op.Check().EP != e {
		e.useLease(op)
	}
	if op.Check().EP != e || op.Check().State.Load() == checkAsked {
		// Ask about op if it was not, and about the ops after it while
		// it waits for its answer.
		if !e.askRDMA(op) {
			return datXmitStop
		}
	}
	switch op.Check().State.Load() {
	case checkAsked:
		e.stall(false)
		if op.Check().State.Load() == checkAsked {
			return datXmitStop // onAnswer wakes us
		}
		e.stalled.Store(false)
		if op.Check().State.Load() == checkRefused {
			return e.refused(op)
		}
	case checkRefused:
		return e.refused(op)
	}
	switch e.postRDMA(m) {
	case datRDMAStall, datRDMAStop:
		return datXmitStop
	case datRDMAFailed:
		return datXmitDrop
	}
	op.Check().State.Store(checkPosted)
	if op.Silent() {
		return datXmitSkip
	}
	return datXmitSend
}

func (e *datEP) refused(op xport.RDMAOp) datXmit {
	op.Complete(xport.RDMARemoteError)
	return datXmitDrop
}

// datFenced reports whether a message's first Send waits for its op's
// READs: with RDMAFence, and for a READ op not granted by a lease, whose
// message ends its pin (see the top of the file). op's check is over.
func datFenced(op xport.RDMAOp) bool {
	return op != nil && (op.Fence() || !op.Write() && !op.Check().Leased)
}

// datRDMAResult says how posting a message's op went.
type datRDMAResult uint8

const (
	datRDMAPosted datRDMAResult = iota // every work request is posted
	datRDMAStall                       // no room: retry when completions free some
	datRDMAStop                        // the EP is going down
	datRDMAFailed                      // the op failed here: its message must not go
)

// postRDMA posts what is left of m's admitted op (inXmit held).
func (e *datEP) postRDMA(m xport.Msg) datRDMAResult {
	r, op := &e.rdma, m.RDMA()
	if r.cur != op {
		r.cur, r.next, r.roff, r.tailRead, r.failed = op, 0, op.RemoteAddr(), false, false
	}
	local := op.Local()
	for !r.failed && r.next < len(local) {
		b := local[r.next]
		if len(b) == 0 {
			r.next++
			continue
		}
		paced := op.Write() && op.Len() >= datPaceMin && r.roff == op.RemoteAddr() // a large op's first WRITE
		k := 1
		if paced {
			k = 2
		}
		if !e.rdmaRoom(k) {
			return datRDMAStall
		}
		if paced && !e.allocProbe() {
			op.Complete(xport.RDMAOtherError)
			r.failed = true
			break
		}
		loc, off, err := e.dn.locals.get(e.dn, b)
		if err != nil {
			op.Complete(xport.RDMAOtherError)
			r.failed = true // the peer still waits for the op's end
			break
		}
		last := !(op.Silent() && op.Write()) // a silent WRITE ends with a READ
		for _, rest := range local[r.next+1:] {
			if len(rest) > 0 {
				last = false
				break
			}
		}
		if !e.holdLease(op) {
			e.dn.locals.put(loc)
			op.Complete(xport.RDMARemoteError) // the owner is freeing the mapping
			r.failed = true
			break
		}
		flags := dat.CompletionDefault
		ok := true
		if paced {
			ok = e.postRDMAWR(m, nil, r.probe.Triplet(0, 1), r.roff, false, false, dat.CompletionDefault)
			flags = dat.CompletionBarrierFence
		}
		if ok {
			ok = e.postRDMAWR(m, loc, loc.l.Triplet(off, len(b)), r.roff, op.Write(), last, flags)
		} else {
			e.dn.locals.put(loc)
		}
		e.dropLease(op)
		if !ok {
			return datRDMAStop // the connection is going down; the op's message is not sent
		}
		r.next++
		r.roff += uint64(len(b))
	}
	if !r.failed && op.Silent() && op.Write() && !r.tailRead {
		if !e.rdmaRoom(1) {
			return datRDMAStall
		}
		if !e.allocProbe() {
			op.Complete(xport.RDMAOtherError)
			r.failed = true
		}
		if !r.failed && !e.holdLease(op) {
			op.Complete(xport.RDMARemoteError)
			r.failed = true
		}
		if !r.failed {
			ok := e.postRDMAWR(m, nil, r.probe.Triplet(0, 1), r.roff-1, false, true, dat.CompletionDefault)
			e.dropLease(op)
			if !ok {
				return datRDMAStop
			}
			r.tailRead = true
		}
	}
	// An op under a lease has no hold to release, one to rds_rdma no
	// check at all.
	if (r.failed || op.Silent()) && !op.Check().Leased && !e.kernelPeer {
		if !e.releaseRDMA(op, r.failed || !op.Write() || r.tailRead) {
			if e.dead.Load() {
				return datRDMAStop
			}
			return datRDMAStall
		}
	}
	r.cur = nil
	if r.failed {
		return datRDMAFailed
	}
	return datRDMAPosted
}

// allocProbe makes sure the EP has its 1-byte LMR, where the pacing and
// tail READs land (inXmit held).
func (e *datEP) allocProbe() bool {
	r := &e.rdma
	if r.probe == nil {
		l, err := lmr.Alloc(e.dn.ia, e.dn.pz, 1, datLocalPriv)
		if err != nil {
			return false
		}
		r.probe = l
	}
	return true
}

// rdmaRoom reports whether k more work requests fit, stalling the sender
// if not (inXmit held).
func (e *datEP) rdmaRoom(k int) bool {
	r := &e.rdma
	r.mu.Lock()
	full := len(r.outs)+k > datRDMADepth
	r.mu.Unlock()
	if !full {
		return true
	}
	e.stall(false)
	r.mu.Lock()
	full = len(r.outs)+k > datRDMADepth
	r.mu.Unlock()
	if full {
		return false
	}
	e.stalled.Store(false)
	return true
}

// postRDMAWR posts one RDMA work request of m's op moving local to or
// from raddr; loc is the registration it holds until it completes (nil:
// the probe LMR). last: its completion is the op's. flags: fenced or not.
func (e *datEP) postRDMAWR(m xport.Msg, loc *datLocal, local dat.LMRTriplet, raddr uint64, write, last bool, flags dat.CompletionFlags) bool {
	r := &e.rdma
	m.Hold()
	r.mu.Lock()
	r.seq++
	ck := datRDMACookie | dat.DTOCookie(r.seq&datRDMASeqMask)
	if r.outs == nil {
		r.outs = make(map[dat.DTOCookie]datRDMAWR, datRDMADepth)
	}
	r.outs[ck] = datRDMAWR{m: m, loc: loc, last: last}
	r.mu.Unlock()
	r.iov[0] = local
	remote := dat.RMRTriplet{VirtualAddress: dat.VAddr(raddr), SegmentLength: local.SegmentLength, RMRContext: dat.RMRContext(m.RDMA().RKey())}
	var err error
	if write {
		err = e.ep.PostRDMAWrite(r.iov[:], ck, remote, flags)
	} else {
		err = e.ep.PostRDMARead(r.iov[:], ck, remote, flags)
	}
	if err != nil {
		r.mu.Lock()
		delete(r.outs, ck)
		r.mu.Unlock()
		if loc != nil {
			e.dn.locals.put(loc)
		}
		m.Release()
		return false
	}
	return true
}

// onRDMADone handles the completion of an RDMA work request or of the
// answer frame (event goroutine).
func (e *datEP) onRDMADone(c *dat.DTOCompletion) {
	if c.Cookie == datCheckCookie {
		e.onAnswersSent(c)
		return
	}
	r := &e.rdma
	r.mu.Lock()
	wr, ok := r.outs[c.Cookie]
	delete(r.outs, c.Cookie)
	r.mu.Unlock()
	if !ok {
		return
	}
	if wr.loc != nil {
		e.dn.locals.put(wr.loc)
	}
	switch {
	case c.Status == dat.DTOErrFlushed:
		// The connection went down, unless the work request that broke
		// it reports the cause first (that completion comes before).
		if wr.last {
			wr.m.RDMA().ConnLost()
		}
	case c.Status != dat.DTOSuccess:
		wr.m.RDMA().Complete(datRDMAStatus(c.Status))
	case wr.last:
		wr.m.RDMA().Complete(xport.RDMASuccess)
	}
	wr.m.Release()
	if e.stalled.Load() {
		e.dn.wake(e)
	}
}

// datRDMAStatus maps a failed RDMA work request to an RDS status as
// rds_ib does (rds_ib_send_complete): the peer refusing the access (its
// R_Key, range or rights) is RDS_RDMA_REMOTE_ERROR, any other failure
// (a bad response, the peer failing the op for another reason, a local
// error) RDS_RDMA_OTHER_ERROR. With the checks a peer refuses nothing
// the checks admitted, so this is for a peer that broke its word.
func datRDMAStatus(s dat.DTOStatus) xport.RDMAStatus {
	if s == dat.DTOErrRemoteAccess {
		return xport.RDMARemoteError
	}
	return xport.RDMAOtherError
}

// retireRDMA returns the registrations of work requests that will never
// complete (the EP is gone), reports their ops as lost with the
// connection, and ends the EP's checks.
func (e *datEP) retireRDMA() {
	r := &e.rdma
	r.mu.Lock()
	outs := r.outs
	r.outs = nil
	r.mu.Unlock()
	for _, wr := range outs {
		if wr.loc != nil {
			e.dn.locals.put(wr.loc)
		}
		if wr.last {
			wr.m.RDMA().ConnLost()
		}
		wr.m.Release()
	}
	if r.probe != nil {
		r.probe.Free()
		r.probe = nil
	}
	r.cur = nil
	e.retireChecks()
}

var _ xport.RDMACapable = (*datNode)(nil)
