package siw

import (
	"github.com/godapl/godapl/verbs/internal/soft"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The Terminate causes this provider sends, and why. Where the RFCs leave
// a choice the Linux siw's is taken (iwarp-wire.md section 5.3), so that a
// kernel peer logs the same reason for the same fault.

// taggedCause is the cause for an inbound tagged segment (RDMA Write or
// Read Response) whose memory check failed with f. DDP has no access
// rights code, so a missing right reports an invalid STag, as in siw.
func taggedCause(f soft.Fault) iwarp.TermCause {
	switch f {
	case soft.FaultBounds:
		return iwarp.TermDDPTaggedBaseBounds
	case soft.FaultPD:
		return iwarp.TermDDPTaggedSTagNotAssoc
	case soft.FaultTOWrap:
		return iwarp.TermDDPTaggedTOWrap
	}
	return iwarp.TermDDPTaggedInvalidSTag
}

// readCause is the cause for an inbound RDMA Read Request whose source
// memory check failed with f: an RDMAP remote protection error, sent with
// the whole Read Request attached.
func readCause(f soft.Fault) iwarp.TermCause {
	switch f {
	case soft.FaultBounds:
		return iwarp.TermRDMAPBaseBounds
	case soft.FaultAccess:
		return iwarp.TermRDMAPAccessRights
	case soft.FaultPD:
		return iwarp.TermRDMAPSTagNotAssoc
	case soft.FaultTOWrap:
		return iwarp.TermRDMAPTOWrap
	}
	return iwarp.TermRDMAPInvalidSTag
}

// Causes for failures the engine's faults do not describe.
const (
	// causeNoBuffer: a Send found no receive posted, or a receive too
	// small for it (siw uses the one code for both).
	causeNoBuffer = iwarp.TermDDPUntaggedNoBuffer
	// causeCannotInvalidate: a Send with Invalidate named an STag that
	// cannot be invalidated (the engine's soft.CannotInvalidate).
	causeCannotInvalidate = iwarp.TermRDMAPOpCannotInvalidate
	// causeIRDOverflow: more RDMA Read Requests outstanding than the IRD
	// negotiated.
	causeIRDOverflow = iwarp.TermRDMAPCatastrophicStream
	// causeNoRead: a Read Response arrived with no Read outstanding.
	causeNoRead = iwarp.TermRDMAPCatastrophicStream
	// causeLocal: this side failed on its own (a local buffer vanished
	// while a response was being sent); siw sends "unspecified".
	causeLocal = iwarp.TermRDMAPCatastrophicUnspecified
)
