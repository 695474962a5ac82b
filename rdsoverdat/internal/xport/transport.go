package xport

// Transport is a transport's configuration: it attaches to each node
// (local address) that uses it.
type Transport interface {
	// Type is the SO_RDS_TRANSPORT number (wire.RDS_TRANS_*).
	Type() uint32
	// Name is the transport's name in connection listings ("tcp").
	Name() string
	// Attach starts the transport on node n (a listener, an SRQ) and
	// returns its per-node state. An error fails the bind that created
	// the node.
	Attach(n Node) (NodeTransport, error)
}

// NodeTransport is a transport attached to one node.
//
// Contract: every method returns quickly and may be called from any
// goroutine, with no core lock held. The transport reports progress only
// through the Path methods: Up when a path can carry messages, Down when
// it lost them, Receive for each incoming message, DropAcked when the
// peer has acknowledged transmitted messages. After Close returns, the
// transport calls no Path method and has stopped all its goroutines.
type NodeTransport interface {
	// Connect asks for path p to be brought up. The core calls it on
	// every send while p is not up, so it must be idempotent; who
	// actually connects (and with what backoff) is the transport's rule.
	Connect(p Path)
	// Kick tells the transport that p has messages to transmit (the
	// kernel's send worker wake-up). The transport takes them with
	// NextTx, in order, until NextTx returns nil.
	Kick(p Path)
	// Reset drops p's current transport connection as an error would;
	// queued and unacknowledged messages are retransmitted once the path
	// is up again (the kernel's rds_conn_path_drop).
	Reset(p Path)
	// Close stops the transport on this node.
	Close() error
}

// Optional abilities of a NodeTransport, found by type assertion.

// Multipather is implemented by transports that may run several paths
// per connection (the kernel's t_mp_capable): the core then runs the
// NPATHS probe handshake and hashes sockets onto MaxPaths paths at most.
type Multipather interface {
	MaxPaths() int
}

// AckSettler is implemented by transports that may leave an ack, and so
// the SO_SNDBUF room it frees, to later traffic (TCP: a lone message's,
// which the peer's answer brings). SettleAcks frees what p's peer has
// acknowledged now, in the caller's goroutine; while Node.SendersBlocked
// reports a socket waiting for room, it also has p poll for the acks
// still missing. The core calls it when a socket starts waiting for room
// and before it reports queued bytes (Buffered, Info).
type AckSettler interface {
	SettleAcks(p Path)
}

// AckBySequence is implemented by transports whose peer acknowledges
// messages by RDS sequence number (h_ack, IB/DAT) instead of by the
// transport's own stream position (TCP). The core then asks for acks
// with FlagAckRequired and sets each message's ack key to its sequence
// number in NextTx, so the transport calls DropAcked with h_ack from any
// goroutine and never SetAckKey.
type AckBySequence interface {
	AcksBySequence()
}
