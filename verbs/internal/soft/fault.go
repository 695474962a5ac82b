package soft

import "github.com/godapl/godapl/verbs"

// Terminate error types and codes the engine's faults map to (RFC 5040
// section 7.2, RFC 5041 section 7.2; numbering as the Linux siw uses it).
const (
	ETypeRemoteProtection = 1 // RDMAP
	ETypeRemoteOperation  = 2 // RDMAP
	ETypeTaggedBuffer     = 1 // DDP
	ETypeUntaggedBuffer   = 2 // DDP

	CodeDDPUntaggedNoBuffer = 0x02 // invalid MSN - no buffer available
	CodeRDMAPCannotInval    = 0x09 // STag cannot be invalidated
	CodeRDMAPUnspecified    = 0xff
)

// DDPTagged is the Terminate a data sink sends when an inbound tagged
// segment (RDMA Write, Read Response) hits fault f. RFC 5041 has no access
// rights code, so like siw a missing right reports an invalid STag.
func (f Fault) DDPTagged() *verbs.TerminateError {
	code := [...]uint8{FaultSTag: 0x00, FaultBounds: 0x01, FaultAccess: 0x00, FaultPD: 0x02, FaultTOWrap: 0x03}[f]
	return &verbs.TerminateError{Layer: verbs.TermLayerDDP, EType: ETypeTaggedBuffer, Code: code}
}

// RDMAP is the Terminate a data source sends when an inbound RDMA Read
// Request hits fault f (remote protection error).
func (f Fault) RDMAP() *verbs.TerminateError {
	code := [...]uint8{FaultSTag: 0x00, FaultBounds: 0x01, FaultAccess: 0x02, FaultPD: 0x03, FaultTOWrap: 0x04}[f]
	return &verbs.TerminateError{Layer: verbs.TermLayerRDMAP, EType: ETypeRemoteProtection, Code: code}
}

// NoBuffer is the Terminate for a Send that found no receive posted, or a
// receive too small for it (siw uses the same code for both).
func NoBuffer() *verbs.TerminateError {
	return &verbs.TerminateError{Layer: verbs.TermLayerDDP, EType: ETypeUntaggedBuffer, Code: CodeDDPUntaggedNoBuffer}
}

// CannotInvalidate is the Terminate for a Send with Invalidate whose STag
// could not be invalidated.
func CannotInvalidate() *verbs.TerminateError {
	return &verbs.TerminateError{Layer: verbs.TermLayerRDMAP, EType: ETypeRemoteOperation, Code: CodeRDMAPCannotInval}
}

// Remote returns a copy of t marked as received from the peer.
func Remote(t *verbs.TerminateError) *verbs.TerminateError {
	c := *t
	c.Remote = true
	return &c
}
