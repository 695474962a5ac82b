package verbs

import (
	"errors"
	"fmt"
	"net"
)

// Sentinel errors returned by synchronous verbs calls. Hot paths return them
// unwrapped so that an error costs no allocation; slower paths may wrap them
// with context, so callers should test with errors.Is.
var (
	// ErrInvalidArgument reports a malformed request: a zero-sized queue, an
	// unknown opcode, a length that does not fit.
	ErrInvalidArgument = errors.New("verbs: invalid argument")
	// ErrInvalidState reports a call that the object's current state forbids,
	// such as an illegal QP transition or a send posted before RTS.
	ErrInvalidState = errors.New("verbs: invalid state")
	// ErrQueueFull reports that a send queue, receive queue or SRQ already
	// holds as many outstanding work requests as it was created for.
	ErrQueueFull = errors.New("verbs: queue full")
	// ErrTooManySGE reports a scatter/gather list longer than the queue allows.
	ErrTooManySGE = errors.New("verbs: too many scatter/gather elements")
	// ErrInvalidKey reports an lkey, rkey or STag that names no valid memory.
	ErrInvalidKey = errors.New("verbs: invalid memory key")
	// ErrProtection reports memory outside a registration's bounds, an access
	// the registration does not grant, or a registration of another PD.
	// Providers that tell these apart return ErrBounds, ErrAccess or
	// ErrWrongPD, which match it with errors.Is.
	ErrProtection = errors.New("verbs: protection violation")
	// ErrBounds reports an SGE whose range leaves its registration (or whose
	// address plus length wraps). It matches ErrProtection.
	ErrBounds error = &protectionError{"verbs: protection violation: range outside the registration"}
	// ErrAccess reports an SGE that needs a right its registration does not
	// grant (local write, for a receive or an RDMA Read sink). It matches
	// ErrProtection.
	ErrAccess error = &protectionError{"verbs: protection violation: access not granted"}
	// ErrWrongPD reports an SGE whose registration belongs to another PD
	// than the QP's. It matches ErrProtection.
	ErrWrongPD error = &protectionError{"verbs: protection violation: registration of another PD"}
	// ErrInUse reports an object that cannot be destroyed while others use it
	// (a PD with MRs or QPs, a CQ or SRQ attached to a QP).
	ErrInUse = errors.New("verbs: resource in use")
	// ErrNoResources reports that a device limit was reached.
	ErrNoResources = errors.New("verbs: out of resources")
	// ErrNotSupported reports a feature the provider does not have.
	ErrNotSupported = errors.New("verbs: not supported by provider")
	// ErrNoDevice reports an unknown device or provider name.
	ErrNoDevice = errors.New("verbs: no such device")
	// ErrNotConnected reports data transfer on a QP without a connection.
	ErrNotConnected = errors.New("verbs: queue pair not connected")
	// ErrRejected reports that the peer rejected a connection request; the
	// error is a *RejectError carrying the peer's private data.
	ErrRejected = errors.New("verbs: connection rejected")
	// ErrUnreachable reports that no connection could be set up in time.
	ErrUnreachable = errors.New("verbs: peer unreachable")
	// ErrDisconnected reports a connection ended by the peer.
	ErrDisconnected = errors.New("verbs: disconnected")
	// ErrBroken reports a connection that the transport under it lost — a
	// TCP reset, a retransmission or keepalive timeout — as opposed to an
	// orderly close. Conn.Err carries it as a *BrokenError, which matches
	// ErrDisconnected too: the connection has ended either way.
	ErrBroken = errors.New("verbs: connection broken")
	// ErrCQOverflow reports that a CQ lost completions because it was full.
	ErrCQOverflow = errors.New("verbs: completion queue overflow")
	// ErrClosed reports use of an object after it was closed or destroyed.
	// It wraps net.ErrClosed so that code handling network errors sees it.
	ErrClosed = fmt.Errorf("verbs: %w", net.ErrClosed)
)

// protectionError is one of the kinds of ErrProtection. The values are
// preallocated, so that a post refused for one costs no allocation.
type protectionError struct{ msg string }

func (e *protectionError) Error() string { return e.msg }

// Is makes errors.Is(err, ErrProtection) true.
func (e *protectionError) Is(target error) bool { return target == ErrProtection }

// RejectError is returned by Device.Connect when the passive side rejects
// the request. It matches ErrRejected with errors.Is.
type RejectError struct {
	// PrivateData is the data the peer attached to its reject, if any.
	PrivateData []byte
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("verbs: connection rejected by peer (%d bytes of private data)", len(e.PrivateData))
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectError) Is(target error) bool { return target == ErrRejected }

// BrokenError is the Conn.Err of a connection whose transport failed: the
// TCP connection under an iWARP stream was reset or timed out. Err is what
// the transport said (syscall.ECONNRESET, ETIMEDOUT, EPIPE, ...), so that
// errors.Is(err, syscall.ECONNRESET) works. Consumers that only care that
// the connection ended can keep testing for ErrDisconnected; those that
// report how it ended (DAT's CONNECTION_EVENT_BROKEN) use
// DisconnectEventOf.
type BrokenError struct {
	Err error
}

func (e *BrokenError) Error() string {
	if e.Err == nil {
		return ErrBroken.Error()
	}
	return ErrBroken.Error() + ": " + e.Err.Error()
}

// Is makes errors.Is true for ErrBroken and ErrDisconnected.
func (e *BrokenError) Is(target error) bool { return target == ErrBroken || target == ErrDisconnected }

// Unwrap returns the transport's error.
func (e *BrokenError) Unwrap() error { return e.Err }

// TerminateError describes why an RDMA stream was torn down, in the terms of
// the iWARP Terminate message (RFC 5040 section 7, RFC 5041 section 7,
// RFC 5044): the layer that found the error, its error type and code. All
// providers use these codes, so that a protection fault looks the same on
// every transport. It is carried by Conn.Err and AsyncEvent.Err.
type TerminateError struct {
	Layer  TermLayer
	EType  uint8
	Code   uint8
	Remote bool // the peer sent the Terminate; false when this side detected the error
}

// TermLayer is the layer field of a Terminate message.
type TermLayer uint8

// Terminate layers (RFC 5040 section 7.1).
const (
	TermLayerRDMAP TermLayer = 0
	TermLayerDDP   TermLayer = 1
	TermLayerLLP   TermLayer = 2 // MPA
)

func (l TermLayer) String() string {
	switch l {
	case TermLayerRDMAP:
		return "RDMAP"
	case TermLayerDDP:
		return "DDP"
	case TermLayerLLP:
		return "LLP"
	}
	return fmt.Sprintf("layer(%d)", uint8(l))
}

func (e *TerminateError) Error() string {
	who := "local"
	if e.Remote {
		who = "remote"
	}
	return fmt.Sprintf("verbs: stream terminated (%s): layer %s etype %d code %#02x", who, e.Layer, e.EType, e.Code)
}

// Is makes errors.Is(err, ErrDisconnected) true: a terminated stream is a
// connection that ended.
func (e *TerminateError) Is(target error) bool { return target == ErrDisconnected }
