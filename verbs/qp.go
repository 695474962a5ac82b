package verbs

import "fmt"

// QPState is the state of a queue pair.
//
//	          +---------------------------------------------+
//	          v                                             |
//	RESET -> INIT -> RTR -> RTS <-> SQD          (any) -> RESET
//	          ^ |            ^ |                 (any) -> ERROR
//	          +-+            | +-> SQE (send error; internal)
//	                         +----- SQE
//
// Legal transitions are exactly those ValidTransition accepts: RESET->INIT,
// INIT->INIT, INIT->RTR, RTR->RTS, RTS->RTS, RTS->SQD, SQD->SQD, SQD->RTS,
// SQE->RTS, and any state to RESET or ERROR. The connection manager drives
// RESET/INIT->RTR->RTS when a connection is established; a provider moves a
// QP to ERROR when its connection ends or its stream is terminated, and
// then completes every outstanding work request with WCWRFlushErr.
type QPState uint8

const (
	QPStateReset QPState = iota
	QPStateInit
	QPStateRTR
	QPStateRTS
	QPStateSQD
	QPStateSQE
	QPStateError
)

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERROR"}

func (s QPState) String() string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// ValidTransition reports whether a QP may be modified from one state to
// another. Every provider rejects other transitions with ErrInvalidState.
func ValidTransition(from, to QPState) bool {
	if to == QPStateReset || to == QPStateError {
		return from <= QPStateError
	}
	switch from {
	case QPStateReset:
		return to == QPStateInit
	case QPStateInit:
		return to == QPStateInit || to == QPStateRTR
	case QPStateRTR:
		return to == QPStateRTS
	case QPStateRTS:
		return to == QPStateRTS || to == QPStateSQD
	case QPStateSQD:
		return to == QPStateSQD || to == QPStateRTS
	case QPStateSQE:
		return to == QPStateRTS
	}
	return false
}

// CanPostRecv reports whether receives may be posted in state s (they are
// flushed at once in ERROR).
func (s QPState) CanPostRecv() bool { return s != QPStateReset }

// CanPostSend reports whether sends may be posted in state s. In SQD they
// are queued and run after the return to RTS; in ERROR they are flushed.
func (s QPState) CanPostSend() bool {
	return s == QPStateRTS || s == QPStateSQD || s == QPStateSQE || s == QPStateError
}

// QPCaps are the queue sizes of a QP.
type QPCaps struct {
	MaxSendWR     int // outstanding send requests (posted, not yet completed)
	MaxRecvWR     int // outstanding receives (ignored with an SRQ)
	MaxSendSGE    int
	MaxRecvSGE    int
	MaxInlineData int
}

// QPInitAttr configures a new QP.
type QPInitAttr struct {
	SendCQ CQ
	RecvCQ CQ
	// SRQ, if set, supplies the receives; the QP then has no receive queue
	// of its own and PostRecv fails with ErrInvalidState.
	SRQ  SRQ
	Caps QPCaps
	// SignalAll makes every send produce a completion, as if each were
	// posted with SendSignaled.
	SignalAll bool
}

// QPAttr describes a QP.
type QPAttr struct {
	State QPState
	Caps  QPCaps
	// IRD is the number of inbound RDMA Reads the QP serves at once
	// (responder resources); ORD the number of RDMA Reads it may have
	// outstanding (initiator depth). Both are fixed by the connection.
	IRD, ORD  int
	SignalAll bool
}

// QP is a reliable-connected queue pair.
type QP interface {
	// QPN is the QP number, unique within its device.
	QPN() uint32
	PD() PD
	State() QPState
	Query() QPAttr
	// Modify moves the QP to state s if ValidTransition allows it.
	// Moving to ERROR tears down the connection abruptly and flushes every
	// outstanding work request; moving to SQD holds further sends until the
	// return to RTS and raises EventSQDrained once the send queue is idle.
	Modify(s QPState) error
	// PostSend posts send requests in order and returns how many were
	// posted; on error wrs[n] is the request that failed and nothing after
	// it was posted. Their completions come in posting order: a request's
	// completion (or, unsignalled and successful, its retirement) never
	// precedes an earlier request's, as in the IB and iWARP verbs, so a
	// consumer may take a signalled completion as proof that every earlier
	// unsignalled request succeeded.
	PostSend(wrs []SendWR) (int, error)
	// PostRecv posts receives like PostSend posts sends.
	PostRecv(wrs []RecvWR) (int, error)
	// Destroy disconnects and frees the QP; outstanding requests are flushed.
	Destroy() error
}
