package dat

import (
	"fmt"
	"strings"
)

// Code is the type of a DAT_RETURN (its "major" code, bits 29..16), with
// DAT's numeric values so that a Code can be compared with C programs' and
// printed as DAT prints it.
type Code uint32

// Return codes (dat_error.h). Success is the zero value.
const (
	Success                   Code   = 0x00000000
	Abort                     Code   = 0x00010000 // IA closed or EVD destroyed under a waiter
	ConnQualInUse             Code   = 0x00020000
	InsufficientResources     Code   = 0x00030000
	InternalError             Code   = 0x00040000
	InvalidHandle             Code   = 0x00050000
	InvalidParameter          Code   = 0x00060000
	InvalidState              Code   = 0x00070000
	LengthError               Code   = 0x00080000
	ModelNotSupported         Code   = 0x00090000
	ProviderNotFound          Code   = 0x000A0000 // also DAT_NAME_NOT_FOUND
	PrivilegesViolation       Code   = 0x000B0000
	ProtectionViolation       Code   = 0x000C0000
	QueueEmpty                Code   = 0x000D0000
	QueueFull                 Code   = 0x000E0000
	TimeoutExpired            Code   = 0x000F0000
	ProviderAlreadyRegistered Code   = 0x00100000
	ProviderInUse             Code   = 0x00110000
	InvalidAddress            Code   = 0x00120000
	InterruptedCall           Code   = 0x00130000
	ConnQualUnavailable       Code   = 0x00140000
	ReservedLMR               Code   = 0x00150000
	PortInUse                 Code   = 0x00160000
	CommNotSupported          Code   = 0x00170000
	NotImplemented            Code   = 0x3FFF0000
	codeMask                  Code   = 0x3FFF0000
	classError                uint32 = 0x80000000
)

var codeNames = map[Code]string{
	Success: "DAT_SUCCESS", Abort: "DAT_ABORT", ConnQualInUse: "DAT_CONN_QUAL_IN_USE",
	InsufficientResources: "DAT_INSUFFICIENT_RESOURCES", InternalError: "DAT_INTERNAL_ERROR",
	InvalidHandle: "DAT_INVALID_HANDLE", InvalidParameter: "DAT_INVALID_PARAMETER",
	InvalidState: "DAT_INVALID_STATE", LengthError: "DAT_LENGTH_ERROR",
	ModelNotSupported: "DAT_MODEL_NOT_SUPPORTED", ProviderNotFound: "DAT_PROVIDER_NOT_FOUND",
	PrivilegesViolation: "DAT_PRIVILEGES_VIOLATION", ProtectionViolation: "DAT_PROTECTION_VIOLATION",
	QueueEmpty: "DAT_QUEUE_EMPTY", QueueFull: "DAT_QUEUE_FULL", TimeoutExpired: "DAT_TIMEOUT_EXPIRED",
	ProviderAlreadyRegistered: "DAT_PROVIDER_ALREADY_REGISTERED", ProviderInUse: "DAT_PROVIDER_IN_USE",
	InvalidAddress: "DAT_INVALID_ADDRESS", InterruptedCall: "DAT_INTERRUPTED_CALL",
	ConnQualUnavailable: "DAT_CONN_QUAL_UNAVAILABLE", ReservedLMR: "DAT_RESERVED_LMR",
	PortInUse: "DAT_PORT_IN_USE", CommNotSupported: "DAT_COMM_NOT_SUPPORTED",
	NotImplemented: "DAT_NOT_IMPLEMENTED",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("DAT_RETURN_TYPE(%#08x)", uint32(c))
}

// Subtype is the minor code of a DAT_RETURN (bits 15..0): which handle,
// argument, state or privilege the error is about.
type Subtype uint16

func (s Subtype) String() string {
	if s < numSubtypes {
		return subtypeNames[s]
	}
	return fmt.Sprintf("DAT_SUBTYPE(%d)", uint16(s))
}

// Return is a DAT_RETURN as C returns it: class | type | subtype.
type Return uint32

// Code returns the type (DAT_GET_TYPE).
func (r Return) Code() Code { return Code(r) & codeMask }

// Subtype returns the subtype (DAT_GET_SUBTYPE).
func (r Return) Subtype() Subtype { return Subtype(r & 0xffff) }

// Error is the error every dat/ call returns: the DAT operation, the
// DAT_RETURN type and subtype, and, where one exists, the lower-level
// cause (usually a verbs error). Test it with errors.Is against the
// sentinels below (which match on Code, and on Sub when the sentinel has
// one) or with errors.As to read Code and Sub.
type Error struct {
	Op   string // DAT operation without the dat_ prefix: "ep_post_send"
	Code Code
	Sub  Subtype
	Err  error // cause, may be nil
}

// NewError returns an *Error for op with code and subtype.
func NewError(op string, code Code, sub Subtype) *Error {
	return &Error{Op: op, Code: code, Sub: sub}
}

// Wrap returns an *Error for op with code and subtype caused by err.
func Wrap(op string, code Code, sub Subtype, err error) *Error {
	return &Error{Op: op, Code: code, Sub: sub, Err: err}
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("dat: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Code.String())
	if e.Sub != NoSubtype {
		b.WriteString(" (")
		b.WriteString(e.Sub.String())
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a target *Error that carries no Op: same Code, and same Sub
// unless the target's Sub is NoSubtype. So errors.Is(err,
// dat.ErrInvalidState) holds for every DAT_INVALID_STATE, and a sentinel
// built with a subtype narrows the match.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Op != "" {
		return false
	}
	return t.Code == e.Code && (t.Sub == NoSubtype || t.Sub == e.Sub)
}

// Return is the numeric DAT_RETURN: error class, type and subtype.
func (e *Error) Return() Return {
	if e.Code == Success {
		return 0
	}
	return Return(classError | uint32(e.Code) | uint32(e.Sub))
}

// Timeout reports whether the error is DAT_TIMEOUT_EXPIRED, as net.Error does.
func (e *Error) Timeout() bool { return e.Code == TimeoutExpired }

// Strerror returns the major and minor strings of a DAT_RETURN, as
// dat_strerror does.
func Strerror(r Return) (major, minor string) {
	return r.Code().String(), r.Subtype().String()
}

// Sentinels for errors.Is, one per DAT_RETURN type the API produces.
var (
	ErrAbort                 = &Error{Code: Abort}
	ErrConnQualInUse         = &Error{Code: ConnQualInUse}
	ErrInsufficientResources = &Error{Code: InsufficientResources}
	ErrInternalError         = &Error{Code: InternalError}
	ErrInvalidHandle         = &Error{Code: InvalidHandle}
	ErrInvalidParameter      = &Error{Code: InvalidParameter}
	ErrInvalidState          = &Error{Code: InvalidState}
	ErrLengthError           = &Error{Code: LengthError}
	ErrModelNotSupported     = &Error{Code: ModelNotSupported}
	ErrProviderNotFound      = &Error{Code: ProviderNotFound}
	ErrPrivilegesViolation   = &Error{Code: PrivilegesViolation}
	ErrProtectionViolation   = &Error{Code: ProtectionViolation}
	ErrQueueEmpty            = &Error{Code: QueueEmpty}
	ErrQueueFull             = &Error{Code: QueueFull}
	ErrTimeoutExpired        = &Error{Code: TimeoutExpired}
	ErrInvalidAddress        = &Error{Code: InvalidAddress}
	ErrInterruptedCall       = &Error{Code: InterruptedCall}
	ErrConnQualUnavailable   = &Error{Code: ConnQualUnavailable}
	ErrNotImplemented        = &Error{Code: NotImplemented}
)
