package dat

import (
	"fmt"
	"net/netip"
)

// EventNumber says what an event is (DAT_EVENT_NUMBER), with DAT's values.
type EventNumber uint32

const (
	DTOCompletionEvent              EventNumber = 0x00001
	RMRBindCompletionEvent          EventNumber = 0x01001
	ConnectionRequestEvent          EventNumber = 0x02001
	ConnectionEventEstablished      EventNumber = 0x04001
	ConnectionEventPeerRejected     EventNumber = 0x04002
	ConnectionEventNonPeerRejected  EventNumber = 0x04003
	ConnectionEventAcceptCompletion EventNumber = 0x04004 // DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR
	ConnectionEventDisconnected     EventNumber = 0x04005
	ConnectionEventBroken           EventNumber = 0x04006
	ConnectionEventTimedOut         EventNumber = 0x04007
	ConnectionEventUnreachable      EventNumber = 0x04008
	AsyncErrorEVDOverflow           EventNumber = 0x08001
	AsyncErrorIACatastrophic        EventNumber = 0x08002
	AsyncErrorEPBroken              EventNumber = 0x08003
	AsyncErrorTimedOut              EventNumber = 0x08004
	AsyncErrorProviderInternalError EventNumber = 0x08005
	SoftwareEvent                   EventNumber = 0x10001

	// DAT reserves reason codes for the SRQ low watermark and the EP soft
	// high watermark (ReasonSRQWatermark) but no event numbers. godapl
	// puts both in the async-error range right after DAT's own, so that
	// Stream reports them as async events, and keeps these values stable.
	AsyncSRQLowWatermark     EventNumber = 0x08006 // SRQ: fewer buffers posted than its low watermark
	AsyncEPSoftHighWatermark EventNumber = 0x08007 // EP: more SRQ buffers held than its soft high watermark
)

var eventNames = map[EventNumber]string{
	DTOCompletionEvent: "DAT_DTO_COMPLETION_EVENT", RMRBindCompletionEvent: "DAT_RMR_BIND_COMPLETION_EVENT",
	ConnectionRequestEvent: "DAT_CONNECTION_REQUEST_EVENT", ConnectionEventEstablished: "DAT_CONNECTION_EVENT_ESTABLISHED",
	ConnectionEventPeerRejected: "DAT_CONNECTION_EVENT_PEER_REJECTED", ConnectionEventNonPeerRejected: "DAT_CONNECTION_EVENT_NON_PEER_REJECTED",
	ConnectionEventAcceptCompletion: "DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR", ConnectionEventDisconnected: "DAT_CONNECTION_EVENT_DISCONNECTED",
	ConnectionEventBroken: "DAT_CONNECTION_EVENT_BROKEN", ConnectionEventTimedOut: "DAT_CONNECTION_EVENT_TIMED_OUT",
	ConnectionEventUnreachable: "DAT_CONNECTION_EVENT_UNREACHABLE", AsyncErrorEVDOverflow: "DAT_ASYNC_ERROR_EVD_OVERFLOW",
	AsyncErrorIACatastrophic: "DAT_ASYNC_ERROR_IA_CATASTROPHIC", AsyncErrorEPBroken: "DAT_ASYNC_ERROR_EP_BROKEN",
	AsyncErrorTimedOut: "DAT_ASYNC_ERROR_TIMED_OUT", AsyncErrorProviderInternalError: "DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR",
	SoftwareEvent: "DAT_SOFTWARE_EVENT", AsyncSRQLowWatermark: "DAT_ASYNC_SRQ_LOW_WATERMARK",
	AsyncEPSoftHighWatermark: "DAT_ASYNC_EP_SOFT_HIGH_WATERMARK",
}

func (n EventNumber) String() string {
	if s, ok := eventNames[n]; ok {
		return s
	}
	return fmt.Sprintf("EventNumber(%#x)", uint32(n))
}

// Stream returns the EVD stream (one of the EVDFlags) an event belongs to.
func (n EventNumber) Stream() EVDFlags {
	switch {
	case n == DTOCompletionEvent:
		return EVDDTO
	case n == RMRBindCompletionEvent:
		return EVDRMRBind
	case n == ConnectionRequestEvent:
		return EVDCR
	case n&0xff000 == 0x04000:
		return EVDConnection
	case n&0xff000 == 0x08000:
		return EVDAsync
	case n == SoftwareEvent:
		return EVDSoftware
	}
	return 0
}

// Event is a DAT_EVENT. Number says which of the data members is set; the
// others are zero in an Event returned by value (evd.Wait, Dequeue), and
// left as they were by evd.WaitInto and DequeueInto, which write only
// what the event needs, as into C's DAT_EVENT union: read only the member
// Number names. An Event is a plain value: dequeuing copies it out of the
// EVD, and handles in it are the objects themselves (compare them with
// ==, or type-assert to *ep.EP, *lmr.RMR, ...).
type Event struct {
	Number EventNumber
	EVD    Handle

	DTO     DTOCompletion     // DTOCompletionEvent
	RMRBind RMRBindCompletion // RMRBindCompletionEvent
	CR      CRArrival         // ConnectionRequestEvent
	Conn    ConnectionData    // ConnectionEvent*
	Async   AsyncErrorData    // AsyncError*
	// Software is what EVD.PostSE posted (SoftwareEvent).
	Software any
}

// DTOCompletion is DAT_DTO_COMPLETION_EVENT_DATA.
type DTOCompletion struct {
	EP     Handle
	Cookie DTOCookie
	Status DTOStatus
	Op     DTOOp
	// Length is the bytes transferred (received, read); defined only when
	// Status is DTOSuccess.
	Length uint32
	// RMRContext is the context a Send with Invalidate invalidated
	// (Op DTOReceiveWithInvalidate).
	RMRContext RMRContext
}

// RMRBindCompletion is DAT_RMR_BIND_COMPLETION_EVENT_DATA.
type RMRBindCompletion struct {
	RMR    Handle
	Cookie DTOCookie
	Status DTOStatus
}

// CRArrival is DAT_CR_ARRIVAL_EVENT_DATA.
type CRArrival struct {
	// SP is the PSP that took the request, or nil for an RSP (which
	// destroyed itself when the request arrived).
	SP        Handle
	LocalAddr netip.Addr
	ConnQual  ConnQual
	CR        Handle
}

// ConnectionData is DAT_CONNECTION_EVENT_DATA.
type ConnectionData struct {
	EP Handle
	// PrivateData is the peer's: its accept data with ESTABLISHED on the
	// active side, its reject data with PEER_REJECTED. Over an IB or RoCE
	// IA it arrives zero-padded to the CM's field size (196 bytes with an
	// accept, 148 with a reject), as rdma_cm delivers it: parse it
	// allowing trailing zeros.
	PrivateData []byte
}

// AsyncErrorData is DAT_ASYNCH_ERROR_EVENT_DATA.
type AsyncErrorData struct {
	// Handle is the object the error is about: the IA, an EP, an EVD.
	Handle Handle
	Reason AsyncReason
	// Err is the lower-level cause, when there is one.
	Err error
}

// AsyncReason is an async error's object-specific reason code.
type AsyncReason uint8

const (
	ReasonCatastrophic    AsyncReason = 0 // IA: CATASTROPHIC_ERROR; EP: TRANSFER_TO_ERROR; EVD: OVERFLOW
	ReasonOther           AsyncReason = 1
	ReasonSRQWatermark    AsyncReason = 2 // DAT_SRQ_SOFT_HIGH_WATERMARK_EVENT (EP), DAT_SRQ_LOW_WATERMARK_EVENT (SRQ)
	ReasonEPTransferToErr             = ReasonCatastrophic
	ReasonEVDOverflow                 = ReasonCatastrophic
)
