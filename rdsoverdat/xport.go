package rdsoverdat

import (
	"net/netip"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The core as the transports of package xport see it: its nodes,
// connections, paths and RDMA ops behind xport's interfaces (messages and
// sockets implement theirs directly). xport_node.go wraps such a
// transport the other way round.
//
// xnode, xconn and xpath are the core's own types under another method
// set, so converting between them costs nothing and boxing one in an
// interface allocates nothing.

type (
	xnode rdsNode
	xconn connection
	xpath connPath
	xop   rdmaOp
)

var (
	_ xport.Node     = (*xnode)(nil)
	_ xport.Conn     = (*xconn)(nil)
	_ xport.Path     = (*xpath)(nil)
	_ xport.Msg      = (*message)(nil)
	_ xport.RDMAOp   = (*xop)(nil)
	_ xport.Receiver = (*sock)(nil)
)

func (n *xnode) Addr() netip.Addr { return n.addr }

func (n *xnode) Conn(faddr netip.Addr, t uint32) xport.Conn {
	c := (*rdsNode)(n).Conn(faddr, TransportType(t))
	if c == nil {
		return nil
	}
	return (*xconn)(c)
}

func (n *xnode) SendersBlocked() bool {
	return n.sndBlocked.Load() != 0 || n.roomWanted.Load() != 0
}
func (n *xnode) GenNum() uint32 { return n.stack.genNum }

func (n *xnode) Count(c xport.Counter) {
	s := &n.stats
	switch c {
	case xport.CountAckSent:
		s.ackSent.Add(1)
	case xport.CountAckReceived:
		s.ackReceived.Add(1)
	case xport.CountCreditStall:
		s.creditStall.Add(1)
	case xport.CountTxRingFull:
		s.txRingFull.Add(1)
	case xport.CountBadChecksum:
		s.recvDropBadChecksum.Add(1)
	case xport.CountBadHeader:
		s.recvDropBadHeader.Add(1)
	}
}

func (c *xconn) Node() xport.Node       { return (*xnode)(c.node) }
func (c *xconn) RemoteAddr() netip.Addr { return c.faddr }
func (c *xconn) Path(i int) xport.Path  { return (*xpath)(c.paths[i]) }
func (c *xconn) MaxPaths() int          { return c.maxPaths }
func (c *xconn) NPaths() int            { return int(c.npaths.Load()) }
func (c *xconn) Ponged() bool           { return c.ponged.Load() }
func (c *xconn) PeerGenNum() uint32     { return c.peerGen.Load() }
func (c *xconn) PeerGenUpdate(g uint32) { (*connection)(c).peerGenUpdate(g) }
func (p *xpath) core() *connPath        { return (*connPath)(p) }
func (p *xpath) Conn() xport.Conn       { return (*xconn)(p.conn) }
func (p *xpath) Index() int             { return p.index }
func (p *xpath) Data() *atomic.Value    { return &p.TransportData }
func (p *xpath) Up()                    { p.core().Up() }
func (p *xpath) Down(err error)         { p.core().Down(err) }
func (p *xpath) HasWork() bool          { return p.core().HasWork() }
func (p *xpath) Pending() (int, int)    { return p.core().Pending() }
func (p *xpath) SendProbe()             { p.core().SendProbe() }

// Count bumps c on the node and, for what the connection counts too, on
// the path's connection.
func (p *xpath) Count(c xport.Counter) {
	switch c {
	case xport.CountAckSent:
		p.conn.stats.acksSent.Add(1)
	case xport.CountCreditStall:
		p.conn.stats.creditStalls.Add(1)
	}
	(*xnode)(p.conn.node).Count(c)
}
func (p *xpath) TxDone(m xport.Msg)     { p.core().TxDone(m.(*message)) }
func (p *xpath) TxAbort(m xport.Msg)    { p.core().TxAbort(m.(*message)) }
func (p *xpath) DropAcked(k uint64) int { return p.core().DropAcked(k) }
func (p *xpath) Receive(m xport.Msg)    { p.core().receive(m.(*message), nil) }
func (p *xpath) ReceiveWakes(m xport.Msg, w *xport.Wakes) {
	p.core().receive(m.(*message), w)
}
func (p *xpath) DropAckedSeq(s wire.Seq) int {
	return p.core().DropAckedSeq(s)
}

func (p *xpath) Gen() uint64 { return p.core().Gen() }

func (p *xpath) NextTx(gen uint64) xport.Msg {
	if m := p.core().NextTx(gen); m != nil {
		return m
	}
	return nil
}

// NextTxQueued is NextTx that also returns the number of messages still
// queued behind the one it returns, read under the same hold of the
// path's lock: a transport that marks the last message before the
// queue runs dry (dat: ACK_REQUIRED, a signalled completion) would
// otherwise take the lock again for Pending on every message. It runs
// once per message sent: no defer, and no connPath method in between.
func (p *xpath) NextTxQueued(gen uint64) (xport.Msg, int) {
	p.mu.Lock()
	m := p.core().nextTxLocked(gen)
	q := p.sendQ.n
	p.mu.Unlock()
	if m == nil {
		return nil, 0
	}
	return m, q
}

func (p *xpath) NextTxStream(gen, off uint64) (xport.Msg, wire.Header, []byte, int, int) {
	m, q, u := p.core().NextTxStream(gen, off)
	if m == nil {
		return nil, nil, nil, q, u
	}
	return m, m.Header(), m.buf, q, u
}

func (p *xpath) NewRxMessage(h wire.Header) (xport.Msg, error) {
	m, err := p.core().NewRxMessage(h)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (p *xpath) ClaimDirect(h wire.Header) (xport.Direct, bool) { return p.core().ClaimDirect(h) }
func (p *xpath) ClaimSink(h wire.Header) (xport.Direct, bool)   { return p.core().ClaimSink(h) }

func (p *xpath) ReaderTarget(h wire.Header) xport.Receiver {
	if s := p.core().readerTarget(h); s != nil {
		return s
	}
	return nil
}

func (p *xpath) AcceptDirect(seq wire.Seq, retx bool, l int) bool {
	return p.core().acceptDirect(seq, retx, l)
}

func (o *xop) core() *rdmaOp                { return (*rdmaOp)(o) }
func (o *xop) Write() bool                  { return o.write }
func (o *xop) Fence() bool                  { return o.fence }
func (o *xop) Silent() bool                 { return o.silent }
func (o *xop) RKey() uint32                 { return o.rkey }
func (o *xop) RemoteAddr() uint64           { return o.raddr }
func (o *xop) Len() int                     { return o.n }
func (o *xop) Local() [][]byte              { return o.local }
func (o *xop) Complete(st xport.RDMAStatus) { o.core().Complete(RDMAStatus(st)) }
func (o *xop) ConnLost()                    { o.core().connLost() }
func (o *xop) Check() *xport.OpCheck        { return &o.check }
