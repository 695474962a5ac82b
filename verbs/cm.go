package verbs

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// MaxPrivateData is the largest private data a connect, accept or reject
// may carry. MPA allows 512 bytes, Linux 256, and MPA v2 spends 4 of those
// on IRD/ORD, so 252 is what reaches a Linux siw peer intact.
const MaxPrivateData = 252

// ConnParam carries what one side contributes to a connection.
type ConnParam struct {
	// PrivateData is delivered to the peer: with the request (Connect), with
	// the reply (Accept) or with a reject. At most MaxPrivateData bytes.
	// It goes on the wire as given, with no framing of godapl's, so that
	// any rdma_cm peer reads it. On iWARP (MPA) the peer receives exactly
	// these bytes. On IB and RoCE the CM message has a fixed field and no
	// length: the peer receives these bytes padded with zeros to the
	// field's size, as rdma_cm reports it (56 bytes with a request, 196
	// with a reply, 148 with a reject; a device refuses more with
	// ErrInvalidArgument, and its DeviceAttr.MaxPrivData is the request's
	// size). Consumers that parse private data must accept that padding.
	PrivateData []byte
	// ResponderResources (IRD) is how many inbound RDMA Reads this side will
	// serve at once; InitiatorDepth (ORD) how many it may have outstanding.
	// 0 means the provider's default of 1 each, so that a peer can always
	// issue RDMA Reads.
	ResponderResources int
	InitiatorDepth     int
	// LocalAddr binds the active side ("ip" or "ip:port"); Connect only.
	LocalAddr string
}

// ConnEventType names connection manager events, as in rdma_cm, plus
// BROKEN, which rdma_cm folds into DISCONNECTED. They are what dat/ turns
// into DAT connection events.
type ConnEventType uint8

const (
	ConnEventConnectRequest ConnEventType = iota
	ConnEventEstablished
	ConnEventRejected
	ConnEventUnreachable
	ConnEventConnectError
	ConnEventDisconnected
	// ConnEventBroken is an established connection that ended through an
	// error: a Terminate (sent or received) or a transport failure
	// (ErrBroken). rdma_cm reports these as DISCONNECTED too; DAT keeps
	// them apart (CONNECTION_EVENT_BROKEN).
	ConnEventBroken
)

var connEventNames = [...]string{"CONNECT_REQUEST", "ESTABLISHED", "REJECTED", "UNREACHABLE", "CONNECT_ERROR", "DISCONNECTED", "BROKEN"}

func (t ConnEventType) String() string {
	if int(t) < len(connEventNames) {
		return connEventNames[t]
	}
	return fmt.Sprintf("ConnEventType(%d)", uint8(t))
}

// ConnEventOf classifies a Connect error as the rdma_cm event it stands
// for: REJECTED for ErrRejected, UNREACHABLE for ErrUnreachable and
// timeouts, CONNECT_ERROR otherwise.
func ConnEventOf(err error) ConnEventType {
	switch {
	case err == nil:
		return ConnEventEstablished
	case errors.Is(err, ErrRejected):
		return ConnEventRejected
	case errors.Is(err, ErrUnreachable), errors.Is(err, context.DeadlineExceeded):
		return ConnEventUnreachable
	}
	return ConnEventConnectError
}

// DisconnectEventOf classifies the Err of an ended connection: DISCONNECTED
// for an orderly end (nil: this side disconnected; ErrDisconnected: the
// peer closed its side), BROKEN for a stream torn down by a Terminate,
// for a transport failure (ErrBroken) and for any other error.
func DisconnectEventOf(err error) ConnEventType {
	var te *TerminateError
	switch {
	case err == nil:
		return ConnEventDisconnected
	case errors.As(err, &te), errors.Is(err, ErrBroken):
		return ConnEventBroken
	case errors.Is(err, ErrDisconnected):
		return ConnEventDisconnected
	}
	return ConnEventBroken
}

// Listener is a passive connection endpoint: a port on one or all of the
// device's addresses, with a backlog of requests waiting to be accepted.
type Listener interface {
	// Accept waits for the next connection request. Requests beyond the
	// backlog are refused at the transport level.
	Accept(ctx context.Context) (ConnRequest, error)
	Addr() net.Addr
	// Close stops listening; pending requests are rejected.
	Close() error
}

// ConnRequest is a connection request waiting for Accept or Reject.
type ConnRequest interface {
	// PrivateData is the peer's request data, zero-padded to the CM's
	// field size on IB and RoCE (ConnParam.PrivateData).
	PrivateData() []byte
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// ResponderResources and InitiatorDepth are the values this side should
	// use to match the peer (the peer's ORD and IRD), as rdma_cm reports
	// them in its CONNECT_REQUEST event.
	ResponderResources() int
	InitiatorDepth() int
	// Accept connects qp (in RESET or INIT) to the peer, moves it to RTS
	// and returns the connection. Zero IRD/ORD in p take the request's.
	Accept(qp QP, p ConnParam) (Conn, error)
	// Reject refuses the request, sending privateData to the peer.
	Reject(privateData []byte) error
}

// Conn is an established connection of one QP.
type Conn interface {
	QP() QP
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// PrivateData is what the peer sent: its request data on the passive
	// side, its accept data on the active side. On IB and RoCE it is
	// zero-padded to the CM's field size (ConnParam.PrivateData).
	PrivateData() []byte
	// ResponderResources (IRD) and InitiatorDepth (ORD) are the negotiated values.
	ResponderResources() int
	InitiatorDepth() int
	// Done is closed when the connection has ended (DISCONNECTED): by
	// Disconnect, by the peer, or by an error. The QP is then in ERROR and
	// its outstanding work requests have been flushed.
	Done() <-chan struct{}
	// Err says why the connection ended: nil while it is up or after a
	// local Disconnect, ErrDisconnected when the peer closed it, a
	// *TerminateError when an error tore the stream down, a *BrokenError
	// (ErrBroken) when the transport failed under it (reset, timeout).
	// DisconnectEventOf names the event each stands for.
	Err() error
	// Disconnect closes the connection gracefully: the stream is closed
	// without a Terminate, and both sides flush what is left.
	Disconnect() error
}
