package mem

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// link implements soft.Link for one side of a mem connection. Kick runs
// the send queue in the caller's goroutine; exec keeps one runner per QP
// so that messages leave in posting order, and pending makes sure work
// posted while another goroutine runs the queue is not left behind.
type link struct {
	c       *conn
	exec    sync.Mutex
	pending atomic.Bool
	w       soft.SendWQE
	slices  [][]byte
	holds   soft.Holds // of slices, while copying
	placer  soft.Placer
	rwqe    soft.RecvWQE
}

// Kick implements soft.Link.
func (l *link) Kick() {
	l.pending.Store(true)
	for l.pending.Load() {
		if !l.exec.TryLock() {
			return // the runner will see pending
		}
		l.pending.Store(false)
		for l.c.qp.NextSend(&l.w) {
			l.run(&l.w)
		}
		l.exec.Unlock()
	}
}

// Close implements soft.Link.
func (l *link) Close() { l.c.abort() }

// run executes one send work request against the peer.
func (l *link) run(w *soft.SendWQE) {
	qp, peer := l.c.qp, l.c.peer
	switch w.Opcode {
	case verbs.OpSend, verbs.OpSendWithInv:
		l.send(w, peer)
	case verbs.OpRDMAWrite:
		var dst []byte
		var hold soft.Hold
		if w.Len > 0 { // zero-length writes are not checked (RFC 5041, siw)
			var f soft.Fault
			dst, hold, f = peer.qp.ResolveRemote(w.RKey, w.RemoteAddr, w.Len, verbs.AccessRemoteWrite)
			if f != soft.FaultNone {
				qp.CompleteSend(w.Seq, verbs.WCRemAccessErr, 0)
				peer.terminate(f.DDPTagged())
				return
			}
		}
		ok := l.gather(w, dst)
		hold.Release()
		if !ok {
			l.failLocal(w)
			return
		}
		l.c.dev.Counters.BytesSent.Add(w.Len)
		peer.dev.Counters.BytesReceived.Add(w.Len)
		qp.CompleteSend(w.Seq, verbs.WCSuccess, 0)
	case verbs.OpRDMARead:
		var src []byte
		var srcHold soft.Hold
		if w.Len > 0 {
			var f soft.Fault
			src, srcHold, f = peer.qp.ResolveRemote(w.RKey, w.RemoteAddr, w.Len, verbs.AccessRemoteRead)
			if f != soft.FaultNone {
				qp.CompleteSend(w.Seq, verbs.WCRemAccessErr, 0)
				peer.terminate(f.RDMAP())
				return
			}
		}
		dst, dstHold, f := qp.ResolveSGE(&w.SGL[0], true)
		if f != soft.FaultNone {
			srcHold.Release()
			l.failLocal(w)
			return
		}
		copy(dst, src)
		dstHold.Release()
		srcHold.Release()
		l.c.dev.Counters.BytesReceived.Add(w.Len)
		peer.dev.Counters.BytesSent.Add(w.Len)
		qp.CompleteSend(w.Seq, verbs.WCSuccess, uint32(w.Len))
	}
}

// gather copies w's data into dst (len(dst) == w.Len); it reports false
// when w's local memory is no longer valid.
func (l *link) gather(w *soft.SendWQE, dst []byte) bool {
	var f soft.Fault
	l.slices, f = l.c.qp.SendSlices(w, l.slices[:0], &l.holds)
	if f != soft.FaultNone {
		return false
	}
	off := 0
	for _, b := range l.slices {
		off += copy(dst[off:], b)
	}
	l.holds.Release()
	clear(l.slices)
	return true
}

// failLocal fails w for a local memory fault, and the connection with it,
// as siw does. The caller holds no memory: completing and terminating
// take locks that an invalidation may be waiting behind.
func (l *link) failLocal(w *soft.SendWQE) {
	l.c.qp.CompleteSend(w.Seq, verbs.WCLocProtErr, 0)
	l.c.shutdown(&verbs.TerminateError{Layer: verbs.TermLayerRDMAP, EType: 0, Code: soft.CodeRDMAPUnspecified}, verbs.ErrDisconnected)
}

// send delivers a Send into the peer's next receive.
func (l *link) send(w *soft.SendWQE, peer *conn) {
	qp := l.c.qp
	r := &l.rwqe
	if !peer.qp.TakeRecv(r) {
		if st := peer.qp.State(); st != verbs.QPStateRTS && st != verbs.QPStateRTR && st != verbs.QPStateSQD {
			// The peer left the connected states and is tearing the
			// connection down; its close reaches this side in a moment. On
			// a stream the Send would die with the connection: flush it.
			qp.CompleteSend(w.Seq, verbs.WCWRFlushErr, 0)
			return
		}
		qp.CompleteSend(w.Seq, verbs.WCRemOpErr, 0)
		peer.terminate(soft.NoBuffer())
		return
	}
	var f soft.Fault
	l.slices, f = qp.SendSlices(w, l.slices[:0], &l.holds)
	if f != soft.FaultNone {
		peer.qp.CompleteRecv(r, verbs.WCWRFlushErr, 0, 0, 0)
		qp.CompleteSend(w.Seq, verbs.WCLocProtErr, 0)
		l.c.shutdown(&verbs.TerminateError{Layer: verbs.TermLayerRDMAP, EType: 0, Code: soft.CodeRDMAPUnspecified}, verbs.ErrDisconnected)
		return
	}
	p := &l.placer
	p.Reset(peer.qp, r)
	for _, b := range l.slices {
		n, f := p.Write(b)
		if f != soft.FaultNone || n < len(b) {
			p.Release()
			l.holds.Release()
			clear(l.slices)
		}
		if f != soft.FaultNone {
			peer.qp.CompleteRecv(r, verbs.WCLocProtErr, 0, 0, 0)
			qp.CompleteSend(w.Seq, verbs.WCRemOpErr, 0)
			peer.terminate(&verbs.TerminateError{Layer: verbs.TermLayerDDP, EType: 0, Code: 0}) // catastrophic
			return
		}
		if n < len(b) {
			peer.qp.CompleteRecv(r, verbs.WCLocLenErr, 0, 0, 0)
			qp.CompleteSend(w.Seq, verbs.WCRemOpErr, 0)
			peer.terminate(soft.NoBuffer())
			return
		}
	}
	// Release before the invalidation below, which waits for every access
	// to its STag, possibly this receive's own.
	p.Release()
	l.holds.Release()
	clear(l.slices)
	var flags verbs.WCFlags
	var inv uint32
	if w.Flags&verbs.SendSolicited != 0 {
		flags |= verbs.WCSolicited
	}
	if w.Opcode == verbs.OpSendWithInv {
		if f := peer.qp.InvalidateRemote(w.InvRKey); f != soft.FaultNone {
			peer.qp.CompleteRecv(r, verbs.WCRemInvReqErr, 0, 0, 0)
			qp.CompleteSend(w.Seq, verbs.WCRemInvReqErr, 0)
			peer.terminate(soft.CannotInvalidate())
			return
		}
		flags |= verbs.WCWithInv
		inv = w.InvRKey
	}
	l.c.dev.Counters.BytesSent.Add(w.Len)
	peer.dev.Counters.BytesReceived.Add(w.Len)
	peer.qp.CompleteRecv(r, verbs.WCSuccess, uint32(p.Placed()), flags, inv)
	qp.CompleteSend(w.Seq, verbs.WCSuccess, 0)
}
