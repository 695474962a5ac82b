package iwarp

import (
	"errors"
	"fmt"
)

// Kinds of malformed input. A parser returns them wrapped in a
// *ProtocolError that also names the Terminate cause; test with errors.Is.
var (
	ErrMPAKey            = errors.New("iwarp: MPA frame has neither the Request nor the Reply key")
	ErrMPARev            = errors.New("iwarp: MPA revision not supported")
	ErrMPAPrivateDataLen = errors.New("iwarp: MPA private data too long")
	ErrMPAIRDORD         = errors.New("iwarp: MPA v2 frame lacks its IRD/ORD block")
	ErrDDPVersion        = errors.New("iwarp: DDP version not supported")
	ErrRDMAPVersion      = errors.New("iwarp: RDMAP version not supported")
	ErrOpcode            = errors.New("iwarp: unexpected RDMAP opcode")
	ErrTaggedMismatch    = errors.New("iwarp: DDP tagged flag does not match the RDMAP opcode")
	ErrULPDULength       = errors.New("iwarp: ULPDU_Length shorter than the DDP/RDMAP header")
	ErrReadRequestLength = errors.New("iwarp: RDMA Read Request carries payload")
	ErrCRC               = errors.New("iwarp: MPA CRC mismatch")
)

// Errors that are not about the peer's bytes.
var (
	// ErrMPAIncomplete means b holds only part of an MPA frame; a
	// streaming reader should read more and retry.
	ErrMPAIncomplete = errors.New("iwarp: MPA frame incomplete")
	// ErrMalformedTerminate reports a Terminate that cannot be parsed.
	// siw answers such a message by closing the connection, not with a
	// Terminate of its own, so it carries no cause.
	ErrMalformedTerminate = errors.New("iwarp: malformed Terminate")
	// ErrFrameTooLong is returned to a sender whose header plus payload
	// exceed MaxULPDULength; the caller must segment (see MaxPayload).
	ErrFrameTooLong = errors.New("iwarp: ULPDU longer than 65535 bytes")
	// ErrHeaderLen is returned to a sender whose header slice does not
	// have the length of its opcode's header.
	ErrHeaderLen = errors.New("iwarp: header length does not match opcode")
	// ErrInvalidMPA is returned by MPAFrame.Validate for a frame this
	// package must not send.
	ErrInvalidMPA = errors.New("iwarp: invalid MPA frame")
)

// ProtocolError is a violation of the wire protocol by the peer. Cause is
// the Terminate cause Linux siw sends for the same violation; Err is one of
// the Err* kinds above.
type ProtocolError struct {
	Err   error
	Cause TermCause
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("%v (terminate: %v)", e.Err, e.Cause)
}

func (e *ProtocolError) Unwrap() error { return e.Err }

// CauseOf returns the Terminate cause carried by err, if any.
func CauseOf(err error) (TermCause, bool) {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe.Cause, true
	}
	return 0, false
}

// Preallocated protocol errors: the set is small and fixed, and returning
// shared values keeps even the error path of the decoders allocation-free.
var (
	errMPAKey             = &ProtocolError{ErrMPAKey, TermLLPInvalidMPA}
	errMPARev             = &ProtocolError{ErrMPARev, TermLLPInvalidMPA}
	errMPAPrivateDataLen  = &ProtocolError{ErrMPAPrivateDataLen, TermLLPInvalidMPA}
	errMPAIRDORD          = &ProtocolError{ErrMPAIRDORD, TermLLPInvalidMPA}
	errDDPVersionTagged   = &ProtocolError{ErrDDPVersion, TermDDPTaggedVersion}
	errDDPVersionUntagged = &ProtocolError{ErrDDPVersion, TermDDPUntaggedVersion}
	errRDMAPVersion       = &ProtocolError{ErrRDMAPVersion, TermRDMAPVersion}
	errOpcode             = &ProtocolError{ErrOpcode, TermRDMAPOpcode}
	errTaggedMismatch     = &ProtocolError{ErrTaggedMismatch, TermRDMAPOpcode}
	errULPDULength        = &ProtocolError{ErrULPDULength, TermLLPFPDUStart}
	errReadRequestLength  = &ProtocolError{ErrReadRequestLength, TermRDMAPCatastrophicStream}
	errCRC                = &ProtocolError{ErrCRC, TermLLPCRC}
)
