package rdsoverdat

import "github.com/godapl/godapl/rdsoverdat/internal/xport"

// A transport of package xport as the core's Transport, and attached as
// its nodeTransport.

// xportTransport is a transport of package xport as a Transport.
type xportTransport struct{ t xport.Transport }

func (x xportTransport) Type() TransportType { return TransportType(x.t.Type()) }
func (x xportTransport) Name() string        { return x.t.Name() }

func (x xportTransport) attach(n *rdsNode) (nodeTransport, error) {
	nt, err := x.t.Attach((*xnode)(n))
	if err != nil {
		return nil, err
	}
	xn := &xportNode{nt}
	rc, rdma := nt.(xport.RDMACapable)
	_, seq := nt.(xport.AckBySequence)
	switch {
	case rdma && seq:
		return &xportSeqRDMANode{xportRDMANode{xn, rc}}, nil
	case rdma:
		return &xportRDMANode{xn, rc}, nil
	case seq:
		return &xportSeqNode{xn}, nil
	}
	return xn, nil
}

// xportNode is an attached transport of package xport as a
// nodeTransport. Its optional abilities are xport's: MaxPaths is 1 and
// SettleAcks does nothing for a transport without them.
type xportNode struct{ nt xport.NodeTransport }

func (x *xportNode) Connect(p *connPath) { x.nt.Connect((*xpath)(p)) }
func (x *xportNode) Kick(p *connPath)    { x.nt.Kick((*xpath)(p)) }
func (x *xportNode) Reset(p *connPath)   { x.nt.Reset((*xpath)(p)) }
func (x *xportNode) Close() error        { return x.nt.Close() }

// unwrap returns the transport's own value (for white-box tests).
func (x *xportNode) unwrap() xport.NodeTransport { return x.nt }

func (x *xportNode) MaxPaths() int {
	if mp, ok := x.nt.(xport.Multipather); ok {
		return mp.MaxPaths()
	}
	return 1
}

func (x *xportNode) SettleAcks(p *connPath) {
	if w, ok := x.nt.(xport.AckSettler); ok {
		w.SettleAcks((*xpath)(p))
	}
}

// The abilities the core finds by type assertion, for a transport that
// has them.
type (
	xportSeqNode  struct{ *xportNode }
	xportRDMANode struct {
		*xportNode
		rc xport.RDMACapable
	}
	xportSeqRDMANode struct{ xportRDMANode }
)

func (xportSeqNode) AcksBySequence()     {}
func (xportSeqRDMANode) AcksBySequence() {}

func (x *xportRDMANode) RDMALimits() RDMALimits {
	l := x.rc.RDMALimits()
	return RDMALimits{MaxBytes: l.MaxBytes, MaxMRs: l.MaxMRs}
}

func (x *xportRDMANode) RegisterMR(mem []byte, flags RDMAFlags) (rdmaMR, error) {
	mr, err := x.rc.RegisterMR(mem, flags&RDMAReadWrite != 0, flags&RDMAUseOnce != 0)
	if err != nil {
		return nil, err
	}
	return mr, nil
}
