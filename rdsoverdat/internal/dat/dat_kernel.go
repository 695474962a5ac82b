package dat

import (
	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// The kernel's wire on InfiniBand and RoCE (docs/RDS-IB.md). The kernel's
// rds_rdma accepts connections only on IB and RoCE devices, so over iWARP
// the transport keeps its own conventions (credits always, the smaller
// address wins a race, a handshake probe on connect). On an IA whose
// device is IB or RoCE it follows rds_rdma instead, whether the peer is a
// kernel or another godapl node, so that either can be on the other end:
//
//   - Its private data grants no credits (dp_credit 0) and carries no
//     ack_seq; a peer's dp_credit of 0 turns flow control off on that
//     connection, and the sender relies on the QP's RNR retry when the
//     receiver's buffers run out, as two kernels do.
//   - Connection races follow rds_ib_cm_handle_connect: a request that
//     finds our own request out, or an accepted one not yet established,
//     is rejected whatever the addresses; one that finds the connection up
//     drops it and is rejected too; both sides reconnect after every drop,
//     with random backoff, traffic or not.
//   - A peer whose private data names no generation (my_gen 0: the kernel
//     fills only its struct) gets no handshake probe, whose NPATHS and
//     GEN_NUM rds_rdma has no use for and whose generation update would
//     reset its sequence numbers.
//   - Nor any RDMA check frame (dat_rdma_check.go): rds_rdma would take
//     one for a message from port 0 and reset its next expected sequence.
//     An op on such a peer's memory runs unchecked, as between kernels: a
//     bad one fails its work request, which reports the status and costs
//     the connection. The kernel's cookies are zero-based (the offset in
//     the cookie plus remote_vec.addr), which is what the core computes
//     for a cookie that came without an address extension.
//   - The mappings it lends are zero-based the kernel's way
//     (mapVAType): the kernel sends no address extension and knows none,
//     and addresses a cookie's memory from the start of its first page,
//     the cookie's offset naming the first byte. Every peer of the node
//     gets the same cookie, and a godapl peer computes the same address
//     for its check (the address extension is sent only for VA LMRs).

// transportRoCE and transportIB are the values of the IA's TRANSPORT
// provider attribute for the devices rds_rdma runs on.
const (
	transportRoCE = "RoCE"
	transportIB   = "InfiniBand"
)

// kernelWire reports whether a's device is one rds_rdma runs on.
func kernelWire(a *ia.IA) bool {
	_, pa, err := a.Query()
	if err != nil {
		return false
	}
	t := pa.Specific["TRANSPORT"]
	return t == transportRoCE || t == transportIB
}

// mapVAType is how the LMRs of mappings are addressed: zero-based on the
// kernel's wire, where a kernel peer names memory by cookie offset; by
// virtual address elsewhere, the address going with the cookie.
func (dn *datNode) mapVAType() dat.VAType {
	if dn.kernel {
		return dat.VATypeZB
	}
	return dat.VATypeVA
}

// parsePeer checks the private data a peer sent. On the kernel's wire a
// dp_credit of 0 is the normal case (flow control off), elsewhere a
// connection without credits could only end in a terminated stream.
func (dn *datNode) parsePeer(b []byte) (datPrivate, error) {
	p, err := parseDatPrivate(b)
	if err == errPrivCredit && dn.kernel && datPrivate(b).Credit() == 0 {
		return datPrivate(b), nil
	}
	return p, err
}

// isKernelPeer reports whether peer's private data came from a node that
// runs no generations, which on the kernel's wire is rds_rdma.
func (dn *datNode) isKernelPeer(peer datPrivate) bool {
	return dn.kernel && peer.MyGen() == 0
}

// offer returns what our private data announces: the last sequence
// received with its generation, and the receive credits granted. On the
// kernel's wire both are 0: rds_rdma trusts dp_ack_seq blindly, and one
// from a connection before its module was reloaded would free messages
// it never had; and a non-zero dp_credit would make a kernel whose
// flow_control sysctl is 1 count credits we never advertise.
func (dp *datPath) offer(e *datEP) (ack uint64, ackGen, credit uint32) {
	if dp.dn.kernel {
		return 0, 0, 0
	}
	a, gen := dp.ackSpace()
	return uint64(a), gen, uint32(e.grant)
}

// retries reports whether this side reconnects a dropped or refused
// connection with nothing to send: on the kernel's wire both do, over
// iWARP only the smaller address.
func (dp *datPath) retries() bool { return dp.dn.kernel || dp.isActive() }

// verdict returns what a connection request whose private data is req
// does to old, the EP the path has: on the kernel's wire it is rejected
// whenever there is one, an established one being dropped first; over
// iWARP the transport's own rule applies (dat_race.go).
func (dp *datPath) verdict(old *datEP, req datPrivate) datVerdict {
	switch {
	case old == nil || old.state == datDead:
		return reqAccept
	case !dp.dn.kernel:
		return dp.iwarpVerdict(old, req)
	case old.state == datUp:
		return reqRejectDrop
	}
	return reqReject
}

// privLen is how much of our private data goes out: conn_id only over
// iWARP, where the race rule reads it (dat_race.go).
func (dn *datNode) privLen() int {
	if dn.kernel {
		return datPrivateLenNoID
	}
	return datPrivateLen
}

// admitUnchecked lets op to a kernel peer through without a check
// (inXmit held): posted at once, and nothing to release afterwards.
func (e *datEP) admitUnchecked(op xport.RDMAOp) {
	if c := op.Check(); c.EP != e {
		c.EP, c.Leased = e, false
		c.State.Store(checkGranted)
	}
}

// KernelWire reports, for the tests of package rdsoverdat, whether the
// node speaks the kernel's wire and whether the connection carrying path
// p (if it is up) runs without credits.
func (n Node) KernelWire(p xport.Path) (kernel, noCredits bool) {
	dp, ok := p.Data().Load().(*datPath)
	if !ok {
		return n.dn.kernel, false
	}
	e := dp.up.Load()
	return n.dn.kernel, e != nil && e.credits.off.Load()
}
