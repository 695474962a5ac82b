package rdsoverdat

import (
	"net/netip"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The core as the transports of package xport see it: its nodes,
// connections and paths behind xport's interfaces (messages and sockets
// implement theirs directly), and such a transport behind the core's
// Transport and nodeTransport.
//
// xnode, xconn and xpath are the core's own types under another method
// set, so converting between them costs nothing and boxing one in an
// interface allocates nothing.

type (
	xnode rdsNode
	xconn connection
	xpath connPath
)

var (
	_ xport.Node     = (*xnode)(nil)
	_ xport.Conn     = (*xconn)(nil)
	_ xport.Path     = (*xpath)(nil)
	_ xport.Msg      = (*message)(nil)
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

func (n *xnode) SendersBlocked() bool { return n.sndBlocked.Load() != 0 }

func (c *xconn) Node() xport.Node       { return (*xnode)(c.node) }
func (c *xconn) RemoteAddr() netip.Addr { return c.faddr }
func (c *xconn) Path(i int) xport.Path  { return (*xpath)(c.paths[i]) }
func (c *xconn) MaxPaths() int          { return c.maxPaths }
func (c *xconn) NPaths() int            { return int(c.npaths.Load()) }
func (c *xconn) Ponged() bool           { return c.ponged.Load() }
func (p *xpath) core() *connPath        { return (*connPath)(p) }
func (p *xpath) Conn() xport.Conn       { return (*xconn)(p.conn) }
func (p *xpath) Index() int             { return p.index }
func (p *xpath) Data() *atomic.Value    { return &p.TransportData }
func (p *xpath) Up()                    { p.core().Up() }
func (p *xpath) Down(err error)         { p.core().Down(err) }
func (p *xpath) HasWork() bool          { return p.core().HasWork() }
func (p *xpath) Pending() (int, int)    { return p.core().Pending() }
func (p *xpath) SendProbe()             { p.core().SendProbe() }
func (p *xpath) TxDone(m xport.Msg)     { p.core().TxDone(m.(*message)) }
func (p *xpath) TxAbort(m xport.Msg)    { p.core().TxAbort(m.(*message)) }
func (p *xpath) DropAcked(k uint64) int { return p.core().DropAcked(k) }
func (p *xpath) Receive(m xport.Msg)    { p.core().Receive(m.(*message)) }
func (p *xpath) DropAckedSeq(s wire.Seq) int {
	return p.core().DropAckedSeq(s)
}

func (p *xpath) NextTx() xport.Msg {
	if m := p.core().NextTx(); m != nil {
		return m
	}
	return nil
}

func (p *xpath) NewRxMessage(h wire.Header) (xport.Msg, error) {
	m, err := p.core().NewRxMessage(h)
	if err != nil {
		return nil, err
	}
	return m, nil
}

func (p *xpath) ClaimDirect(h wire.Header) (xport.Direct, bool) { return p.core().ClaimDirect(h) }

func (p *xpath) ReaderTarget(h wire.Header) xport.Receiver {
	if s := p.core().readerTarget(h); s != nil {
		return s
	}
	return nil
}

func (p *xpath) PlainInWindow(h wire.Header) bool { return p.core().plainInWindow(h) }

func (p *xpath) AcceptDirect(seq wire.Seq, retx bool, l int) bool {
	return p.core().acceptDirect(seq, retx, l)
}

// xportTransport is a transport of package xport as a Transport.
type xportTransport struct{ t xport.Transport }

func (x xportTransport) Type() TransportType { return TransportType(x.t.Type()) }
func (x xportTransport) Name() string        { return x.t.Name() }

func (x xportTransport) attach(n *rdsNode) (nodeTransport, error) {
	nt, err := x.t.Attach((*xnode)(n))
	if err != nil {
		return nil, err
	}
	return &xportNode{nt}, nil
}

// xportNode is an attached transport of package xport as a
// nodeTransport. Its optional abilities are xport's: MaxPaths is 1 and
// WakeForRoom does nothing for a transport without them.
type xportNode struct{ nt xport.NodeTransport }

func (x *xportNode) Connect(p *connPath) { x.nt.Connect((*xpath)(p)) }
func (x *xportNode) Kick(p *connPath)    { x.nt.Kick((*xpath)(p)) }
func (x *xportNode) Reset(p *connPath)   { x.nt.Reset((*xpath)(p)) }
func (x *xportNode) Close() error        { return x.nt.Close() }

func (x *xportNode) MaxPaths() int {
	if mp, ok := x.nt.(xport.Multipather); ok {
		return mp.MaxPaths()
	}
	return 1
}

func (x *xportNode) WakeForRoom(p *connPath) {
	if w, ok := x.nt.(xport.RoomWaker); ok {
		w.WakeForRoom((*xpath)(p))
	}
}
