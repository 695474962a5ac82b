package rdsoverdat

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// memRDMA is a test transport: the loop transport's delivery between the
// nodes of one Stack, plus RDMA ops done as checked copies against a
// registry of MRs, with the rules of an RDMA device: an op names an MR by
// R_Key and a zero-based range that must lie inside it, a WRITE needs a
// writable MR, and a freed MR is gone. A failed op completes with a
// remote error and its message is not delivered, while the connection
// stays up, as the dat transport's in-band checks have it. It tests the
// core's RDMA logic apart from DAT; zerocopy_test.go runs the same cases
// over the dat transport.
//
// hold parks transmitted messages (taken by NextTx, neither delivered
// nor acknowledged) so that a test can reset a path with an op in flight.
type memRDMA struct {
	lim     RDMALimits
	mu      sync.Mutex
	mrs     map[uint32]*memMR
	nextKey uint32
	hold    atomic.Bool
	failReg atomic.Bool // RegisterMR fails (EBUSY)
}

func newMemRDMA(lim RDMALimits) *memRDMA {
	return &memRDMA{lim: lim, mrs: map[uint32]*memMR{}, nextKey: 0x1000}
}

func (*memRDMA) Type() TransportType { return TransIB }
func (*memRDMA) Name() string        { return "memrdma" }

func (t *memRDMA) attach(n *rdsNode) (nodeTransport, error) { return &memNode{t: t, node: n}, nil }

type memMR struct {
	t     *memRDMA
	key   uint32
	mem   []byte
	write bool
}

func (r *memMR) RKey() uint32   { return r.key }
func (r *memMR) Addr() uint64   { return 0 } // zero based, like the kernel's MRs
func (r *memMR) Offset() uint32 { return 0 }

func (r *memMR) Free() error {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	if r.t.mrs[r.key] != r {
		return errors.New("memrdma: MR freed twice")
	}
	delete(r.t.mrs, r.key)
	return nil
}

// exec runs op against the registry; the registry lock makes a Free
// that returned exclude any later access.
func (t *memRDMA) exec(op *rdmaOp) RDMAStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	mr := t.mrs[op.RKey()]
	a, n := op.RemoteAddr(), uint64(op.Len())
	if mr == nil || (op.Write() && !mr.write) || a > uint64(len(mr.mem)) || n > uint64(len(mr.mem))-a {
		return RDMARemoteError
	}
	remote := mr.mem[a : a+n]
	for _, b := range op.Local() {
		if op.Write() {
			copy(remote, b)
		} else {
			copy(b, remote)
		}
		remote = remote[len(b):]
	}
	return RDMASuccess
}

type memNode struct {
	t    *memRDMA
	node *rdsNode
}

type memPath struct {
	xmitGuard
	mu     sync.Mutex
	parked []*message
}

func (l *memNode) RDMALimits() RDMALimits { return l.t.lim }

func (l *memNode) RegisterMR(mem []byte, flags RDMAFlags) (rdmaMR, error) {
	if l.t.failReg.Load() {
		return nil, errors.New("memrdma: registration refused")
	}
	t := l.t
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nextKey++
	r := &memMR{t: t, key: t.nextKey, mem: mem, write: flags&RDMAReadWrite != 0}
	t.mrs[r.key] = r
	return r, nil
}

func (l *memNode) Connect(p *connPath) {
	if p.TransportData.Load() == nil {
		p.TransportData.CompareAndSwap(nil, &memPath{})
	}
	if !p.IsUp() {
		p.Up()
	}
}

func (l *memNode) Kick(p *connPath) {
	mp, _ := p.TransportData.Load().(*memPath)
	if mp == nil {
		l.Connect(p)
		return
	}
	mp.drain(p, func(m *message) {
		if l.t.hold.Load() && !m.IsCongMap() {
			mp.mu.Lock()
			mp.parked = append(mp.parked, m)
			mp.mu.Unlock()
			return
		}
		l.xmit(p, m)
	})
}

// xmit posts m's op, then its SEND: a failed op drops the message.
func (l *memNode) xmit(p *connPath, m *message) {
	if op := m.rdma; op != nil {
		if st := l.t.exec(op); st != RDMASuccess {
			op.Complete(st)
			p.TxAbort(m)
			return
		}
		if !op.Silent() {
			l.deliver(p, m)
		}
		op.Complete(RDMASuccess)
	} else if !m.IsCongMap() {
		l.deliver(p, m)
	}
	p.TxDone(m)
	p.DropAcked(^uint64(0))
}

func (l *memNode) deliver(p *connPath, m *message) {
	rp := l.peerPath(p)
	if rp == nil {
		return
	}
	rp.receiveCopy(m)
}

// Reset drops the path with the parked messages unacknowledged, as a
// broken connection would, and brings it back up with the handshake of
// an ack-by-sequence transport (the dat transport's ack_seq): what the
// peer received, delivered but maybe not yet acknowledged, is acked
// before anything is sent again. It waits for a transmission in
// progress, which on a real connection would have ended before the
// break or with it: nothing is delivered between Down and the handshake.
func (l *memNode) Reset(p *connPath) {
	mp, _ := p.TransportData.Load().(*memPath)
	if mp != nil {
		for !mp.inXmit.CompareAndSwap(false, true) {
			runtime.Gosched()
		}
		defer func() {
			mp.inXmit.Store(false)
			p.Up()
		}()
		mp.mu.Lock()
		parked := mp.parked
		mp.parked = nil
		mp.mu.Unlock()
		for _, m := range parked {
			p.TxDone(m)
		}
	}
	p.Down(errors.New("memrdma: reset"))
	if rp := l.peerPath(p); rp != nil {
		rp.mu.Lock()
		next := rp.nextRxSeq
		rp.mu.Unlock()
		if next > 1 {
			p.DropAckedSeq(next - 1)
		}
	}
	if mp == nil {
		p.Up()
	}
}

// peerPath returns the peer's path that receives what p sends.
func (l *memNode) peerPath(p *connPath) *connPath {
	dst := l.node.stack.nodeAt(p.conn.faddr)
	if dst == nil {
		return nil
	}
	back := dst.Conn(l.node.addr, TransIB)
	if back == nil {
		return nil
	}
	return back.paths[0]
}

func (l *memNode) Close() error { return nil }

// parked reports how many messages path p holds.
func (l *memNode) parkedOn(p *connPath) int {
	mp, _ := p.TransportData.Load().(*memPath)
	if mp == nil {
		return 0
	}
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return len(mp.parked)
}
