package rdsoverdat

import (
	"errors"
	"sync"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// RDMA over the dat transport (rds_ib's ib_rdma.c and rds_ib_xmit_rdma).
//
// Mappings are DAT LMRs registered over exactly the application's range
// with exactly the remote rights asked for: read always, write with
// RDMAReadWrite. The LMR's rmr_context is the cookie's R_Key, so a peer
// reaches that range in that direction and nothing else, and freeing the
// LMR revokes it at once. (An RMR bound inside a larger LMR would grant
// the same, but binding needs an EP and a round of completions; an LMR
// per mapping is what the kernel's FMR pools amount to.) LMRs are
// addressed by virtual address, so the address of the first byte goes
// with the cookie (wire.ExtRDMAAddr).
//
// An op is posted as one RDMA READ or WRITE work request per local
// buffer, each buffer registered as an LMR for the op's lifetime, on the
// EP's request queue ahead of the message's Sends; RC ordering delivers
// a WRITE's data before the Send that follows it, and RDMAFence makes
// the first Send wait for earlier READs (dat.CompletionBarrierFence).
// iWARP completes an RDMA WRITE when it has been sent, and a peer that
// rejects it (a freed or used-once cookie, a range outside the mapping)
// just terminates the connection: the WRITE's own completion cannot tell
// the sender. So a WRITE op first posts two 1-byte RDMA READs of the
// first and last byte of its remote range: the peer answers a READ on a
// bad R_Key or range with a Terminate naming that READ, which completes
// with a remote access error, and the WRITEs after it in the stream are
// never placed. The first WRITE is fenced behind those READs, so the
// peer has read the two bytes before it overwrites them. A silent WRITE
// op, whose message is never acknowledged, ends with one more 1-byte
// READ: its response follows the WRITEs' placement in the stream, so the
// op's completion means the data is in the peer's memory. (A WRITE into a mapping the client made read-only still
// fails only by breaking the connection: it reports RDMADropped.)
//
// At most datRDMADepth work requests are outstanding per EP; a sender
// with more to post stalls like one without send slots. Every RDMA work
// request is signalled: its completion frees its LMR and, the last of an
// op, reports the op's status.

const (
	// datRDMACookie marks an RDMA work request's completion cookie.
	datRDMACookie = dat.DTOCookie(1 << 62)
	// datRDMADepth is the RDMA work requests an EP may have outstanding.
	datRDMADepth = 16
)

// datRDMA is an EP's RDMA state.
type datRDMA struct {
	// Progress of the op of the message being sent (inXmit held).
	cur    *RDMAOp
	next   int     // local buffers of cur already posted
	roff   uint64  // remote address of the next one
	probed bool    // cur's checking READs are posted
	done   *RDMAOp // the last op posted in full
	probe  *lmr.LMR

	mu   sync.Mutex
	seq  uint64
	outs map[dat.DTOCookie]datRDMAWR // posted, not completed
}

type datRDMAWR struct {
	op   *RDMAOp
	l    *lmr.LMR
	last bool
}

// RDMALimits implements RDMACapable.
func (dn *datNode) RDMALimits() RDMALimits { return dn.cfg.RDMA }

// datMR is a mapping: an LMR with remote rights.
type datMR struct{ l *lmr.LMR }

func (m datMR) RKey() uint32 { return uint32(m.l.RMRContext()) }
func (m datMR) Addr() uint64 { return uint64(m.l.Addr()) }
func (m datMR) Free() error  { return m.l.Free() }

var errDatMRAddr = errors.New("rds dat: memory above the addresses a cookie can announce")

// RegisterMR implements RDMACapable.
func (dn *datNode) RegisterMR(mem []byte, write bool) (RDMAMR, error) {
	priv := dat.MemPrivLocalRead | dat.MemPrivRemoteRead
	if write {
		priv |= dat.MemPrivLocalWrite | dat.MemPrivRemoteWrite
	}
	l, err := lmr.Create(dn.ia, dn.pz, mem, priv, dat.VATypeVA)
	if err != nil {
		return nil, err
	}
	if a := uint64(l.Addr()); a+uint64(len(mem)) > wire.MaxRDMAAddr {
		l.Free()
		return nil, errDatMRAddr
	}
	return datMR{l}, nil
}

// datRDMAResult says how posting a message's op went.
type datRDMAResult uint8

const (
	datRDMAPosted datRDMAResult = iota // every work request is posted
	datRDMAStall                       // no room: retry when completions free some
	datRDMAStop                        // the EP is going down
	datRDMAFailed                      // the op failed here: its message must not go
)

// xmitRDMA posts m's op, if it has one not yet posted, ahead of its
// Sends (inXmit held). stop: stop transmitting for now; skip: m has no
// Sends (a silent op, or a failed one whose message must not arrive).
func (e *datEP) xmitRDMA(m *Message) (stop, skip bool) {
	op := m.rdma
	if op == nil || e.rdma.done == op {
		return false, false
	}
	switch e.postRDMA(op) {
	case datRDMAStall, datRDMAStop:
		return true, false
	case datRDMAFailed:
		return false, true
	}
	e.rdma.done = op
	return false, op.Silent()
}

// postRDMA posts what is left of op (inXmit held).
func (e *datEP) postRDMA(op *RDMAOp) datRDMAResult {
	r := &e.rdma
	if r.cur != op {
		r.cur, r.next, r.roff, r.probed = op, 0, op.RemoteAddr(), false
	}
	if op.Write() && !r.probed {
		if res := e.probeRDMA(op); res != datRDMAPosted {
			return res
		}
		r.probed = true
	}
	local := op.Local()
	for r.next < len(local) {
		b := local[r.next]
		if len(b) == 0 {
			r.next++
			continue
		}
		if !e.rdmaRoom(1) {
			return datRDMAStall
		}
		priv := dat.MemPrivLocalWrite // a READ lands in b
		if op.Write() {
			priv = dat.MemPrivLocalRead
		}
		l, err := lmr.Create(e.dn.ia, e.dn.pz, b, priv, dat.VATypeVA)
		if err != nil {
			op.Complete(RDMAOtherError)
			r.cur = nil
			return datRDMAFailed
		}
		last := !(op.Write() && op.Silent()) // a silent WRITE ends with a READ
		for _, rest := range local[r.next+1:] {
			if len(rest) > 0 {
				last = false
				break
			}
		}
		flags := dat.CompletionDefault
		if op.Write() && r.roff == op.RemoteAddr() {
			flags = dat.CompletionBarrierFence // after the checking READs
		}
		if !e.postRDMAWR(op, l, l.Triplet(0, len(b)), r.roff, op.Write(), last, flags) {
			return datRDMAStop // the connection is going down; Down drops the op
		}
		r.next++
		r.roff += uint64(len(b))
	}
	if op.Write() && op.Silent() {
		if !e.rdmaRoom(1) {
			return datRDMAStall
		}
		if !e.postRDMAWR(op, nil, r.probe.Triplet(0, 1), r.roff-1, false, true, dat.CompletionDefault) {
			return datRDMAStop
		}
	}
	r.cur = nil
	return datRDMAPosted
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

// postRDMAWR posts one RDMA work request of op moving local to or from
// raddr; l is the LMR to free when it completes (nil: the probe LMR).
func (e *datEP) postRDMAWR(op *RDMAOp, l *lmr.LMR, local dat.LMRTriplet, raddr uint64, write, last bool, flags dat.CompletionFlags) bool {
	r := &e.rdma
	r.mu.Lock()
	r.seq++
	ck := datRDMACookie | dat.DTOCookie(r.seq&(1<<62-1))
	if r.outs == nil {
		r.outs = make(map[dat.DTOCookie]datRDMAWR)
	}
	r.outs[ck] = datRDMAWR{op: op, l: l, last: last}
	r.mu.Unlock()
	iov := [1]dat.LMRTriplet{local}
	remote := dat.RMRTriplet{VirtualAddress: dat.VAddr(raddr), SegmentLength: local.SegmentLength, RMRContext: dat.RMRContext(op.RKey())}
	var err error
	if write {
		err = e.ep.PostRDMAWrite(iov[:], ck, remote, flags)
	} else {
		err = e.ep.PostRDMARead(iov[:], ck, remote, flags)
	}
	if err != nil {
		r.mu.Lock()
		delete(r.outs, ck)
		r.mu.Unlock()
		if l != nil {
			l.Free()
		}
		return false
	}
	return true
}

// probeRDMA posts the checking READs of a WRITE op: the first and the
// last byte of its remote range, into the EP's probe LMR.
func (e *datEP) probeRDMA(op *RDMAOp) datRDMAResult {
	r := &e.rdma
	ends := []uint64{op.RemoteAddr(), op.RemoteAddr() + uint64(op.Len()) - 1}
	if op.Len() == 1 {
		ends = ends[:1]
	}
	if !e.rdmaRoom(len(ends)) {
		return datRDMAStall
	}
	if r.probe == nil {
		l, err := lmr.Alloc(e.dn.ia, e.dn.pz, 2, dat.MemPrivLocalWrite)
		if err != nil {
			op.Complete(RDMAOtherError)
			r.cur = nil
			return datRDMAFailed
		}
		r.probe = l
	}
	for i, a := range ends {
		if !e.postRDMAWR(op, nil, r.probe.Triplet(i, 1), a, false, false, dat.CompletionDefault) {
			return datRDMAStop
		}
	}
	return datRDMAPosted
}

// onRDMADone handles an RDMA work request's completion (event goroutine).
func (e *datEP) onRDMADone(c *dat.DTOCompletion) {
	r := &e.rdma
	r.mu.Lock()
	wr, ok := r.outs[c.Cookie]
	delete(r.outs, c.Cookie)
	r.mu.Unlock()
	if !ok {
		return
	}
	if wr.l != nil {
		wr.l.Free()
	}
	switch {
	case c.Status == dat.DTOErrFlushed:
		// The connection went down: the path's Down drops the op, unless
		// the work request that broke it reports the cause first.
	case c.Status != dat.DTOSuccess:
		wr.op.Complete(datRDMAStatus(c.Status))
	case wr.last:
		wr.op.Complete(RDMASuccess)
	}
	if e.stalled.Load() {
		e.dn.wake(e)
	}
}

// datRDMAStatus maps a failed RDMA work request to an RDS status.
func datRDMAStatus(s dat.DTOStatus) RDMAStatus {
	switch s {
	case dat.DTOErrRemoteAccess, dat.DTOErrRemoteResponder, dat.DTOErrBadResponse:
		return RDMARemoteError
	}
	return RDMAOtherError
}

// retireRDMA frees the LMRs of work requests that will never complete
// (the EP is gone); their ops are dropped by the path's Down.
func (e *datEP) retireRDMA() {
	r := &e.rdma
	r.mu.Lock()
	outs := r.outs
	r.outs = nil
	r.mu.Unlock()
	for _, wr := range outs {
		if wr.l != nil {
			wr.l.Free()
		}
		wr.op.Complete(RDMADropped)
	}
	if r.probe != nil {
		r.probe.Free()
		r.probe = nil
	}
	r.cur, r.done = nil, nil
}

var _ RDMACapable = (*datNode)(nil)
