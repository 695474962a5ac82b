package rdsoverdat

import "github.com/godapl/godapl/rdsoverdat/wire"

// TransportType is the SO_RDS_TRANSPORT number of a transport.
type TransportType uint32

// Transport numbers (uapi RDS_TRANS_*). TransLoop is the kernel-internal
// number of the loopback transport; unlike the kernel this API lets a
// socket select it, so that tests can pin same-process delivery.
const (
	TransIB    TransportType = wire.RDS_TRANS_IB
	TransIWARP TransportType = wire.RDS_TRANS_IWARP
	TransTCP   TransportType = wire.RDS_TRANS_TCP
	TransLoop  TransportType = wire.RDS_TRANS_LOOP
	TransNone  TransportType = TransportType(wire.RDS_TRANS_NONE)
)

// Transport is the seam between the RDS core and a way of carrying RDS
// messages between two nodes, modelled on the kernel's struct
// rds_transport. The core owns sockets, connections, paths, sequence
// numbers, retransmission, congestion maps and pings; a transport only
// brings paths up and down and moves headers and payloads.
//
// A Transport value is configuration, made by TCP or DAT (the loop
// transport is built in). Its attach method is unexported, so the set is
// closed: a transport works on the core's own state (nodes, connection
// paths, messages), which the package does not export. attach is called
// once per node (local address) that uses the transport and returns the
// per-node state.
type Transport interface {
	// Type is the SO_RDS_TRANSPORT number sockets select it with.
	Type() TransportType
	// Name is the transport's name in connection listings ("tcp").
	Name() string
	// attach starts the transport on node n (a listener, an SRQ) and
	// returns its per-node state. An error fails the bind that created
	// the node.
	attach(n *rdsNode) (nodeTransport, error)
}

// nodeTransport is a transport attached to one node, as the core drives
// it: the loop transport implements it directly, tcp and dat implement
// xport.NodeTransport behind xportNode (xport.go).
//
// Contract: every method returns quickly and may be called from any
// goroutine, with no core lock held. The transport reports progress only
// through the connPath methods: Up when a path can carry messages, Down when
// it lost them, Receive for each incoming message, DropAcked when the
// peer has acknowledged transmitted messages. After Close returns, the
// transport calls no connPath method and has stopped all its goroutines.
type nodeTransport interface {
	// Connect asks for path p to be brought up. The core calls it on
	// every send while p is not up, so it must be idempotent; who
	// actually connects (and with what backoff) is the transport's rule.
	Connect(p *connPath)
	// Kick tells the transport that p has messages to transmit (the
	// kernel's send worker wake-up). The transport takes them with
	// NextTx, in order, until NextTx returns nil.
	Kick(p *connPath)
	// Reset drops p's current transport connection as an error would;
	// queued and unacknowledged messages are retransmitted once the path
	// is up again (the kernel's rds_conn_path_drop; UEK's RDS_CONN_RESET).
	Reset(p *connPath)
	// Close stops the transport on this node.
	Close() error
}

// Optional abilities, tested with type assertions on the nodeTransport.
//
// One more needs no interface, as it is the transport that asks: a
// transport that reads a header before its payload may call
// (*connPath).ClaimDirect to read a large payload straight into a blocked
// RecvMsg's buffer instead of into a message (recv_direct.go; the tcp
// transport does).

// multipather is implemented by transports that may run several paths
// per connection (the kernel's t_mp_capable): the core then runs the
// NPATHS probe handshake and hashes sockets onto MaxPaths paths at most.
type multipather interface {
	MaxPaths() int
}

// ackBySequence is implemented by transports whose peer acknowledges
// messages by RDS sequence number (h_ack, IB/DAT) instead of by the
// transport's own stream position (TCP). The core then asks for acks
// with FlagAckRequired and expects ack-only traffic from the transport;
// NextTx sets each message's ack key to its sequence number, so the
// transport calls DropAcked with h_ack from any goroutine and never
// SetAckKey.
type ackBySequence interface {
	AcksBySequence()
}
