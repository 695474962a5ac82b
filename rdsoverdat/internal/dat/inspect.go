package dat

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// What the tests of package rdsoverdat, which run this transport under a
// real stack, observe and provoke of its state. The package is internal,
// so exporting these adds nothing to any public API.

const (
	// PrivateLen is the length of the connection private data.
	PrivateLen = datPrivateLen
	// PrivateLenNoID is the length of an older godapl node's private
	// data, without conn_id; PrivateLenNoFrag, before frag_max.
	PrivateLenNoID   = datPrivateLenNoID
	PrivateLenNoFrag = privFragOffset
	// SlotLen is the size of a receive buffer: a header and one
	// fragment, the largest Send a peer may post.
	SlotLen = datSlot
	// RDMADepth is how many RDMA work requests an EP may have
	// outstanding.
	RDMADepth = datRDMADepth
)

// EncodePrivate writes connection private data into b (PrivateLen bytes
// at least) as a connecting or accepting node does, and returns it.
func EncodePrivate(b []byte, saddr, daddr netip.Addr, ack wire.Seq, ackGen, myGen, credit uint32) []byte {
	return encodeDatPrivate(b, saddr, daddr, ack, ackGen, myGen, credit)
}

// SetConnID writes conn_id into private data b (PrivateLen bytes).
func SetConnID(b []byte, id uint32) { putConnID(b, id) }

// Frames fragments a message the way the sender does on a connection
// of 4096-byte fragments and returns each Send's bytes; adv goes on the
// first fragment.
func Frames(f *wire.Fields, payload []byte, adv uint8) [][]byte {
	h := make(wire.Header, wire.HeaderLen)
	f.Len = uint32(len(payload))
	h.Encode(f)
	h.SetChecksum()
	var out [][]byte
	for off := 0; ; {
		slot := make([]byte, datSlot)
		n := datFragment(slot, h, payload, off, 0, adv)
		adv = 0
		out = append(out, slot[:wire.HeaderLen+n])
		if off += n; off >= len(payload) {
			return out
		}
	}
}

// Fenced reports whether the message that carries op (nil: none) waits
// for the op's READs.
func Fenced(op xport.RDMAOp) bool { return datFenced(op) }

// RDMAStatus is the RDMA status an op that completed with s reports.
func RDMAStatus(s dat.DTOStatus) xport.RDMAStatus { return datRDMAStatus(s) }

// AckSpace returns what path p's private data would announce: the last
// sequence received and the peer generation it counts in; false if p
// never ran over this transport.
func AckSpace(p xport.Path) (wire.Seq, uint32, bool) {
	dp, ok := p.Data().Load().(*datPath)
	if !ok {
		return 0, 0, false
	}
	seq, gen := dp.ackSpace()
	return seq, gen, true
}

// Node is a handle on the transport attached to one node.
type Node struct{ dn *datNode }

// NodeOf returns nt as this transport's node.
func NodeOf(nt xport.NodeTransport) (Node, bool) {
	dn, ok := nt.(*datNode)
	return Node{dn}, ok
}

// Kernel reports whether the node speaks the kernel's wire (IB, RoCE).
func (n Node) Kernel() bool { return n.dn.kernel }

// SRQ returns the number of receive buffers of the node's SRQ and how
// many of them its connections granted their peers.
func (n Node) SRQ() (capacity, reserved int) {
	n.dn.mu.Lock()
	defer n.dn.mu.Unlock()
	return n.dn.capacity, n.dn.reserved
}

// Posted returns how many of the node's receive buffers are on its SRQ
// or being handled, and whether it posts only what its connections'
// shares need (dat_rxpost.go).
func (n Node) Posted() (posted int, lazy bool) {
	return int(n.dn.rxp.out.Load()), n.dn.rxp.lazy.Load()
}

// Pin is a mapping an RDMA check request admitted, held for one op.
type Pin struct {
	m *datMR
	e *datEP
}

// Admit answers check request c as if it arrived on a connection of its
// own: the pinned mapping, or false if the op must fail.
func (n Node) Admit(c wire.RDMACheck) (Pin, bool) {
	e := &datEP{dn: n.dn}
	m := n.dn.mrs.admit(c, e)
	return Pin{m, e}, m != nil
}

// Unpin ends the op's hold on the mapping.
func (n Node) Unpin(p Pin) { n.dn.mrs.unpin(p.m, p.e) }

// Mapped reports whether rkey names a mapping checks may admit.
func (n Node) Mapped(rkey uint32) bool {
	t := &n.dn.mrs
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mrs[rkey] != nil
}

// Probe is an endpoint on a path that no connection backs: received
// frames go to it directly, as if its (absent) EP delivered them.
type Probe struct{ e *datEP }

// Probe returns an endpoint on path p of node n whose peer sent private
// data pd (nil: none).
func (n Node) Probe(p xport.Path, pd []byte) Probe {
	e := &datEP{dn: n.dn, dp: n.dn.dpath(p)}
	copy(e.peer[:], pd)
	return Probe{e}
}

// DetachedProbe returns an endpoint on path p of node n as a transport
// that never attached would see it: the path's state is its own, and
// the endpoint is the one the path transmits on. lastRx is the last
// sequence received on the path before the endpoint.
func DetachedProbe(n xport.Node, p xport.Path, lastRx wire.Seq) Probe {
	dp := &datPath{dn: &datNode{node: n}, p: p}
	dp.ackNext.Store(uint64(lastRx))
	e := &datEP{dn: dp.dn, dp: dp}
	dp.txEP = e
	return Probe{e}
}

// Recv processes one received Send.
func (pr Probe) Recv(frame []byte) { pr.e.recv(frame) }

// Prepare finalizes m's header for transmission, piggybacked ack
// included, as the path does when it transmits on the probe (a
// DetachedProbe only: another path transmits on its own endpoints).
func (pr Probe) Prepare(m xport.Msg) { pr.e.dp.prepareHeader(m, m.Header(), len(m.Payload())) }

// RoleState names who holds the node's event role: "goroutine", "idle"
// (lent, nobody holds it), "recv" (a RecvMsg) or "dead".
func (n Node) RoleState() string {
	return [...]string{"goroutine", "idle", "recv", "dead"}[n.dn.role.State()]
}

// RoleCounts are the counts of the node's event role: lends by the
// event goroutine, RecvMsg runs that ended with something for their
// socket, take-backs by the event goroutine's check or stop.
func (n Node) RoleCounts() (lends, held, resumes uint64) {
	r := &n.dn.role
	lends, resumes = r.Counts()
	return lends, r.held.Load(), resumes
}

// SetRoleGrace sets how long a lent event role may stay idle before the
// event goroutine takes it back, from the next lend on.
func (n Node) SetRoleGrace(d time.Duration) {
	n.dn.role.SetGrace(d)
}

// PeerConnID returns the generation (my_gen) and connection number
// (conn_id) the peer sent for the EP that carries path p; false if p is
// not up.
func (n Node) PeerConnID(p xport.Path) (gen, id uint32, ok bool) {
	dp, found := p.Data().Load().(*datPath)
	if !found {
		return 0, 0, false
	}
	dp.mu.Lock()
	defer dp.mu.Unlock()
	e := dp.up.Load()
	if e == nil {
		return 0, 0, false
	}
	pd := datPrivate(e.peer[:])
	return pd.MyGen(), pd.ConnID(), true
}
