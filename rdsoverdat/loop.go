package rdsoverdat

import "sync/atomic"

// The loop transport (net/rds/loop.c) carries messages between nodes of
// one Stack without a network: to a node's own address, and to any other
// node of the process whose sockets selected TransLoop. A loop path is
// always up. Transmission runs in the sending goroutine: the first sender
// to find the path idle drains its queue into the destination node and
// every other sender just queues (the kernel's RDS_IN_XMIT bit), so
// messages leave in sequence order. A message counts as acknowledged once
// it is on the receiving socket's queue (or dropped for want of one). The
// peer's congestion map is the destination node's local map itself, so no
// map updates are sent.
type loopTransport struct {
	stack *Stack
}

func (*loopTransport) Type() TransportType { return TransLoop }
func (*loopTransport) Name() string        { return "loopback" }

func (l *loopTransport) attach(n *rdsNode) (nodeTransport, error) {
	return &loopNode{stack: l.stack, node: n}, nil
}

type loopNode struct {
	stack *Stack
	node  *rdsNode
}

// loopPath is a loop path's transmit guard.
type loopPath struct {
	xmitGuard
}

// xmitGuard is the kernel's RDS_IN_XMIT bit, for a transport that
// transmits in the goroutine that kicks the path (loop, and the tests'
// in-memory RDMA transport). Such a transport has no connection of its
// own to number: a round takes the path's generation when it starts,
// under the guard, which is right as long as the transport reports Down
// and the next Up under the guard too (the loop transport never does).
type xmitGuard struct {
	inXmit atomic.Bool
}

// drain transmits p's queue with send until it is empty or p is down,
// unless another goroutine is at it: that one sees what we queued.
func (g *xmitGuard) drain(p *connPath, send func(*message)) {
	for {
		if !g.inXmit.CompareAndSwap(false, true) {
			return // the goroutine transmitting will see our message
		}
		gen := p.Gen()
		for m := p.NextTx(gen); m != nil; m = p.NextTx(gen) {
			send(m)
		}
		g.inXmit.Store(false)
		// A message queued after our last NextTx but before the Store
		// found inXmit set and left it to us.
		if q, _ := p.Pending(); q == 0 || !p.IsUp() {
			return
		}
	}
}

func (l *loopNode) Connect(p *connPath) {
	if p.TransportData.Load() == nil {
		p.TransportData.CompareAndSwap(nil, &loopPath{})
	}
	if !p.IsUp() {
		p.Up()
	}
}

func (l *loopNode) Kick(p *connPath) {
	lp, _ := p.TransportData.Load().(*loopPath)
	if lp == nil {
		l.Connect(p)
		return
	}
	lp.drain(p, func(m *message) {
		l.deliver(p, m)
		p.TxDone(m)
		p.DropAcked(^uint64(0))
	})
}

// deliver hands a copy of m to the destination node's loop path back to
// us, which runs the normal receive path (sequence check, pings, sockets).
func (l *loopNode) deliver(p *connPath, m *message) {
	dst := l.stack.nodeAt(p.conn.faddr)
	if dst == nil {
		l.node.stats.recvDropNoSock.Add(1)
		return
	}
	back := dst.Conn(l.node.addr, TransLoop)
	if back == nil {
		return
	}
	back.paths[0].receiveCopy(m)
}

// receiveCopy runs a copy of m, header flags included, through rp's
// receive path, as if it had arrived off a wire: what the in-process
// transports deliver.
func (rp *connPath) receiveCopy(m *message) {
	in, err := rp.NewRxMessage(m.Header())
	if err != nil {
		return
	}
	in.Header().SetFlags(m.WireFlags())
	copy(in.buf, m.buf)
	rp.Receive(in)
}

func (l *loopNode) Reset(p *connPath) {}

func (l *loopNode) Close() error { return nil }
