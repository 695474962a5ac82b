package xport

import (
	"net/netip"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Node is the core's RDS stack of one local address, as its transports
// see it.
type Node interface {
	// Addr is the node's local address.
	Addr() netip.Addr
	// Conn returns the connection to faddr over transport type t,
	// creating it (not connecting it) if needed; nil if the node does not
	// run t. Transports call it for incoming connections.
	Conn(faddr netip.Addr, t uint32) Conn
	// SendersBlocked reports whether a socket of the node waits for
	// SO_SNDBUF room, which only acks free: a blocked SendMsg, or one
	// refused with EAGAIN, or a Poll without POLLOUT, until room frees.
	SendersBlocked() bool
	// GenNum is the node's generation number (RDS_EXTHDR_GEN_NUM),
	// new with each start of the stack.
	GenNum() uint32
	// Count adds one to the node's counter c.
	Count(c Counter)
}

// Counter names a statistics counter a transport bumps.
type Counter uint8

const (
	CountAckSent     Counter = iota // an ack-only frame sent
	CountAckReceived                // an ack-only frame received
	CountCreditStall                // a send waited for credits
	CountTxRingFull                 // a send waited for send slots
	CountBadChecksum                // a frame dropped for its checksum
	CountBadHeader                  // a frame dropped for its header
)

// Conn is an RDS connection between a node and one remote address over
// one transport (the kernel's rds_connection).
type Conn interface {
	Node() Node
	RemoteAddr() netip.Addr
	// Path returns path i (0 <= i < MaxPaths).
	Path(i int) Path
	// MaxPaths is the number of paths the connection may use.
	MaxPaths() int
	// NPaths is the negotiated path count (0 while unknown).
	NPaths() int
	// Ponged reports whether the peer answered this node's handshake
	// probe, so that it knows the path count: only then may paths above
	// 0 connect.
	Ponged() bool
	// PeerGenNum is the generation number the peer announced (0 if
	// none).
	PeerGenNum() uint32
	// PeerGenUpdate reports the peer's generation number g, as a
	// connection handshake tells it: a new non-zero one means the peer
	// restarted, and the sequence spaces start over.
	PeerGenUpdate(g uint32)
}

// Path is one lane of a connection (the kernel's rds_conn_path): its own
// send queue, retransmit list and sequence numbers, carried by one
// transport connection at a time.
type Path interface {
	Conn() Conn
	// Index is the path's index in its connection.
	Index() int
	// Data is the transport's per-path state (its own synchronisation).
	Data() *atomic.Value

	// Gen returns the generation of the transport connection that
	// carries the path or is to carry it next. A transport reads it for
	// a new connection after the previous one's Down returned and before
	// it reports Up, and takes that connection's messages with NextTx of
	// it.
	Gen() uint64
	// Up reports that the path can carry messages: the core queues the
	// local congestion map first, then kicks the transport.
	Up()
	// Down reports that the path lost its transport connection: every
	// unacknowledged message goes back to the send queue, and the
	// connection's generation ends with it, so that NextTx hands out
	// nothing more for it. A transmit round that loaded the connection
	// before may still run while the path comes up on the next one; what
	// it took before the Down was requeued, and it can take nothing
	// after, so no message is posted on a connection whose messages were
	// requeued already, to be acknowledged unseen by the next one.
	Down(err error)
	// HasWork reports whether the path has messages to transmit or
	// unacknowledged: a reason to bring it up.
	HasWork() bool
	// Pending returns the numbers of queued and unacknowledged messages.
	Pending() (queued, unacked int)
	// Count adds one to counter c of the path's connection and node.
	Count(c Counter)
	// SendProbe queues the handshake probe (NPATHS, GEN_NUM) unless one
	// is outstanding; multipath transports call it when path 0 comes up.
	SendProbe()

	// NextTx returns the next message to transmit on the transport
	// connection of generation gen, or nil when there is none, the path
	// is down or that connection's Down has run. The caller holds a
	// reference until TxDone or TxAbort.
	NextTx(gen uint64) Msg
	// NextTxQueued is NextTx that also returns how many messages were
	// still queued behind the one it returns (Pending's queued).
	NextTxQueued(gen uint64) (Msg, int)
	// NextTxStream is NextTxQueued for a transport that writes messages
	// one after another into a byte stream (tcp), the next at stream
	// offset off: it also gives the header its WireFlags and, but for a
	// congestion map, sets the ack key (SetAckKey) to the offset past
	// the message, and returns the header, the payload and how many
	// messages are unacknowledged (Pending's, m among them): what such a
	// transport would otherwise ask m and the path for one call at a
	// time.
	NextTxStream(gen, off uint64) (m Msg, h wire.Header, p []byte, queued, unacked int)
	// TxDone gives back the reference NextTx handed out.
	TxDone(m Msg)
	// TxAbort returns a message the transport could not (completely)
	// transmit to the front of the send queue, and its reference.
	TxAbort(m Msg)
	// DropAcked frees the unacknowledged messages at the queue's head
	// whose ack key is at most key, and returns how many.
	DropAcked(key uint64) int
	// DropAckedSeq frees the messages whose sequence number is at most
	// seq: what the peer says it has when a connection comes up.
	DropAckedSeq(seq wire.Seq) int

	// NewRxMessage returns a message for an incoming header h, whose
	// payload the transport fills; an error for a header the core
	// refuses (the connection must then be dropped).
	NewRxMessage(h wire.Header) (Msg, error)
	// Receive takes ownership of a complete incoming message.
	Receive(m Msg)

	StreamReceiver
}

// Msg is one RDS message (the kernel's rds_message): its header and
// payload. It is reference counted; the core owns it, and a transport
// holds references from NextTx, NewRxMessage and Hold.
type Msg interface {
	// Header is the message's header; a transport may set the flag,
	// ack, credit and checksum fields just before transmitting it.
	Header() wire.Header
	// Payload is the payload (h_len bytes).
	Payload() []byte
	// Retransmitted reports a resend after a reconnect.
	Retransmitted() bool
	// AckRequired reports that the sender wants a prompt ack.
	AckRequired() bool
	// IsCongMap reports a congestion map update (unsequenced).
	IsCongMap() bool
	// WireFlags is the h_flags a transport without RDS-level acks (TCP)
	// sends: exactly FlagCongBitmap for a map (and for nothing else),
	// FlagRetransmitted for a resend.
	WireFlags() wire.Flag
	// SetAckKey records where the transport will see m acknowledged
	// (TCP: the stream offset past its last byte); DropAcked compares
	// against it.
	SetAckKey(k uint64)
	// RDMA is the op to post before the message's SENDs, or nil.
	RDMA() RDMAOp
	// Hold takes one more reference; Release drops one.
	Hold()
	Release()
}
