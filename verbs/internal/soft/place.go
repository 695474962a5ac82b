package soft

import "github.com/godapl/godapl/verbs"

// Placer scatters an inbound message over a receive's SGL, front to back:
// every leading element is filled before the next is touched, so after a
// message of n bytes exactly the first n bytes of the list are written.
// Memory is resolved one element at a time, when first needed, so a
// message never touches an element it does not reach.
//
// The memory of the current element is held (see Hold) from the Next that
// resolves it until the element is full or Release is called: the
// provider calls Release when it stops copying for now (after a segment,
// on failure, and before it applies a Send with Invalidate), so that an
// idle receive never delays a deregistration.
type Placer struct {
	qp   *QP
	w    *RecvWQE
	i    int    // current element
	off  uint32 // bytes written into element i
	cur  []byte // memory of element i, while held
	hold Hold
	done uint64 // bytes placed
}

// Reset prepares p to place a message into w for qp.
func (p *Placer) Reset(qp *QP, w *RecvWQE) {
	p.Release()
	*p = Placer{qp: qp, w: w}
}

// Release ends p's access to the current element's memory; the next call
// of Next resolves it again.
func (p *Placer) Release() {
	p.hold.Release()
	p.hold, p.cur = Hold{}, nil
}

// Placed returns the bytes placed so far.
func (p *Placer) Placed() uint64 { return p.done }

// Room returns the bytes the receive can still take.
func (p *Placer) Room() uint64 { return p.w.Len - p.done }

// Next returns writable memory for at most n more bytes of the message: a
// prefix of the next unfilled part of the current element. It returns an
// empty slice when the receive is full, and a fault when an element's
// memory is no longer valid or writable.
func (p *Placer) Next(n int) ([]byte, Fault) {
	for p.i < p.w.NumSGE {
		sge := &p.w.SGL[p.i]
		if p.off == sge.Length {
			p.i++
			p.off = 0
			p.Release()
			continue
		}
		if p.cur == nil {
			b, h, f := p.qp.dev.resolveLocal(p.qp.pd, sge, true)
			if f != FaultNone {
				return nil, f
			}
			p.cur, p.hold = b, h
		}
		b := p.cur[p.off:]
		if len(b) > n {
			b = b[:n]
		}
		return b, FaultNone
	}
	return nil, FaultNone
}

// Advance records that k bytes of the slice Next returned were written.
func (p *Placer) Advance(k int) {
	p.off += uint32(k)
	p.done += uint64(k)
}

// Write places b, returning how much fit; n < len(b) means the message is
// longer than the receive (WCLocLenErr). The caller releases p when done.
func (p *Placer) Write(b []byte) (int, Fault) {
	n := 0
	for n < len(b) {
		dst, f := p.Next(len(b) - n)
		if f != FaultNone {
			return n, f
		}
		if len(dst) == 0 {
			return n, FaultNone
		}
		k := copy(dst, b[n:])
		p.Advance(k)
		n += k
	}
	return n, FaultNone
}

// compile-time checks that the engine's types implement the verbs API.
var (
	_ verbs.PD  = (*PD)(nil)
	_ verbs.MR  = (*MR)(nil)
	_ verbs.MW  = (*MW)(nil)
	_ verbs.CQ  = (*CQ)(nil)
	_ verbs.QP  = (*QP)(nil)
	_ verbs.SRQ = (*SRQ)(nil)
)
