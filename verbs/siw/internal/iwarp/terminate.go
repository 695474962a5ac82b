package iwarp

import (
	"encoding/binary"
	"strconv"
)

// Terminate (RFC 5040 section 4.8) is the last message of a failing
// stream: an untagged message on QN 2 whose 4-byte control word names the
// layer, error type and error code, optionally followed by a copy of the
// offending segment's headers.

// TermLayer is the layer that detected the error (4 bits).
type TermLayer uint8

const (
	TermLayerRDMAP TermLayer = 0
	TermLayerDDP   TermLayer = 1
	TermLayerLLP   TermLayer = 2 // MPA
)

// TermEType is the error type within a layer (4 bits); the same number
// means different things in different layers.
type TermEType uint8

const (
	// RDMAP layer.
	TermETypeRDMAPCatastrophic     TermEType = 0 // local catastrophic
	TermETypeRDMAPRemoteProtection TermEType = 1
	TermETypeRDMAPRemoteOperation  TermEType = 2
	// DDP layer.
	TermETypeDDPCatastrophic TermEType = 0
	TermETypeDDPTagged       TermEType = 1 // tagged buffer error
	TermETypeDDPUntagged     TermEType = 2 // untagged buffer error
	// LLP layer.
	TermETypeMPA TermEType = 0
)

// TermCause is the upper half of the Terminate control word: layer (bits
// 15..12), error type (11..8) and error code (7..0). Using the wire
// encoding as the value keeps every cause a comparable constant.
type TermCause uint16

// MakeTermCause assembles a cause from its parts.
func MakeTermCause(l TermLayer, t TermEType, code uint8) TermCause {
	return TermCause(l&0xF)<<12 | TermCause(t&0xF)<<8 | TermCause(code)
}

func (c TermCause) Layer() TermLayer { return TermLayer(c >> 12) }
func (c TermCause) EType() TermEType { return TermEType(c>>8) & 0xF }
func (c TermCause) Code() uint8      { return uint8(c) }

// Every error code of RFC 5040, RFC 5041, RFC 5044 and RFC 6581 as a full
// cause.
const (
	// RDMAP, local catastrophic.
	TermRDMAPCatastrophic TermCause = 0x0000
	// TermRDMAPCatastrophicUnspecified is what siw sends for its own fatal
	// errors.
	TermRDMAPCatastrophicUnspecified TermCause = 0x00FF

	// RDMAP, remote protection.
	TermRDMAPInvalidSTag          TermCause = 0x0100
	TermRDMAPBaseBounds           TermCause = 0x0101
	TermRDMAPAccessRights         TermCause = 0x0102
	TermRDMAPSTagNotAssoc         TermCause = 0x0103 // STag not associated with the RDMAP stream
	TermRDMAPTOWrap               TermCause = 0x0104
	TermRDMAPProtCannotInvalidate TermCause = 0x0109 // STag cannot be invalidated
	TermRDMAPProtUnspecified      TermCause = 0x01FF
	// RDMAP, remote operation.
	TermRDMAPVersion            TermCause = 0x0205 // invalid RDMAP version
	TermRDMAPOpcode             TermCause = 0x0206 // unexpected opcode
	TermRDMAPCatastrophicStream TermCause = 0x0207 // catastrophic error, localized to the stream
	TermRDMAPCatastrophicGlobal TermCause = 0x0208 // catastrophic error, global
	TermRDMAPOpCannotInvalidate TermCause = 0x0209 // STag cannot be invalidated
	TermRDMAPOpUnspecified      TermCause = 0x02FF

	// DDP, catastrophic.
	TermDDPCatastrophic TermCause = 0x1000
	// DDP, tagged buffer.
	TermDDPTaggedInvalidSTag  TermCause = 0x1100
	TermDDPTaggedBaseBounds   TermCause = 0x1101
	TermDDPTaggedSTagNotAssoc TermCause = 0x1102
	TermDDPTaggedTOWrap       TermCause = 0x1103
	TermDDPTaggedVersion      TermCause = 0x1104 // invalid DDP version
	// DDP, untagged buffer.
	TermDDPUntaggedInvalidQN TermCause = 0x1201
	// TermDDPUntaggedNoBuffer is "invalid MSN, no buffer available". siw
	// also sends it for a message longer than the posted receive.
	TermDDPUntaggedNoBuffer  TermCause = 0x1202
	TermDDPUntaggedMSNRange  TermCause = 0x1203 // invalid MSN, MSN range not valid
	TermDDPUntaggedInvalidMO TermCause = 0x1204
	TermDDPUntaggedTooLong   TermCause = 0x1205 // message too long for the receive buffer
	TermDDPUntaggedVersion   TermCause = 0x1206 // invalid DDP version

	// LLP (MPA).
	TermLLPStreamLost        TermCause = 0x2001 // TCP connection lost
	TermLLPCRC               TermCause = 0x2002 // received MPA CRC error
	TermLLPFPDUStart         TermCause = 0x2003 // FPDU start or marker error
	TermLLPInvalidMPA        TermCause = 0x2004 // invalid MPA Request/Reply
	TermLLPLocalCatastrophic TermCause = 0x2005 // RFC 6581
	TermLLPInsufficientIRD   TermCause = 0x2006 // RFC 6581
	TermLLPNoMatchingRTR     TermCause = 0x2007 // RFC 6581
)

var termCauseNames = map[TermCause]string{
	TermRDMAPCatastrophic:            "RDMAP catastrophic",
	TermRDMAPCatastrophicUnspecified: "RDMAP catastrophic, unspecified",
	TermRDMAPInvalidSTag:             "RDMAP invalid STag",
	TermRDMAPBaseBounds:              "RDMAP base or bounds violation",
	TermRDMAPAccessRights:            "RDMAP access rights violation",
	TermRDMAPSTagNotAssoc:            "RDMAP STag not associated with stream",
	TermRDMAPTOWrap:                  "RDMAP TO wrap",
	TermRDMAPProtCannotInvalidate:    "RDMAP STag cannot be invalidated (protection)",
	TermRDMAPProtUnspecified:         "RDMAP protection error, unspecified",
	TermRDMAPVersion:                 "RDMAP invalid version",
	TermRDMAPOpcode:                  "RDMAP unexpected opcode",
	TermRDMAPCatastrophicStream:      "RDMAP catastrophic, stream",
	TermRDMAPCatastrophicGlobal:      "RDMAP catastrophic, global",
	TermRDMAPOpCannotInvalidate:      "RDMAP STag cannot be invalidated (operation)",
	TermRDMAPOpUnspecified:           "RDMAP operation error, unspecified",
	TermDDPCatastrophic:              "DDP catastrophic",
	TermDDPTaggedInvalidSTag:         "DDP invalid STag",
	TermDDPTaggedBaseBounds:          "DDP base or bounds violation",
	TermDDPTaggedSTagNotAssoc:        "DDP STag not associated with stream",
	TermDDPTaggedTOWrap:              "DDP TO wrap",
	TermDDPTaggedVersion:             "DDP invalid version (tagged)",
	TermDDPUntaggedInvalidQN:         "DDP invalid QN",
	TermDDPUntaggedNoBuffer:          "DDP invalid MSN, no buffer",
	TermDDPUntaggedMSNRange:          "DDP invalid MSN range",
	TermDDPUntaggedInvalidMO:         "DDP invalid MO",
	TermDDPUntaggedTooLong:           "DDP message too long",
	TermDDPUntaggedVersion:           "DDP invalid version (untagged)",
	TermLLPStreamLost:                "MPA TCP stream lost",
	TermLLPCRC:                       "MPA CRC error",
	TermLLPFPDUStart:                 "MPA FPDU start error",
	TermLLPInvalidMPA:                "MPA invalid Request/Reply",
	TermLLPLocalCatastrophic:         "MPA local catastrophic",
	TermLLPInsufficientIRD:           "MPA insufficient IRD",
	TermLLPNoMatchingRTR:             "MPA no matching RTR",
}

func (c TermCause) String() string {
	if s, ok := termCauseNames[c]; ok {
		return s
	}
	return "layer " + strconv.Itoa(int(c.Layer())) + " etype " + strconv.Itoa(int(c.EType())) +
		" code 0x" + strconv.FormatUint(uint64(c.Code()), 16)
}

// Terminate control word (the 32 bits at offset 20): cause in bits 31..16,
// then the M, D and R flags.
const (
	offTermCtrl     = 20
	offTermAttached = TerminateHeaderLen

	termFlagM = 0x8000 // DDP Segment Length valid
	termFlagD = 0x4000 // DDP header included
	termFlagR = 0x2000 // RDMAP header included
)

// TerminateHeader is the fixed part of a Terminate, TerminateHeaderLen
// bytes: the untagged header (QN 2) and the Terminate control word.
// UntaggedHeader(h) gives access to the DDP fields.
type TerminateHeader []byte

func (h TerminateHeader) Cause() TermCause {
	return TermCause(binary.BigEndian.Uint16(h[offTermCtrl:]))
}
func (h TerminateHeader) SetCause(c TermCause) {
	binary.BigEndian.PutUint16(h[offTermCtrl:], uint16(c))
}
func (h TerminateHeader) flags() uint16 { return binary.BigEndian.Uint16(h[offTermCtrl+2:]) }

// M reports that the DDP Segment Length of the attached header is valid.
func (h TerminateHeader) M() bool { return h.flags()&termFlagM != 0 }

// D reports that the offending DDP header is attached.
func (h TerminateHeader) D() bool { return h.flags()&termFlagD != 0 }

// R reports that the offending RDMAP header is attached as well.
func (h TerminateHeader) R() bool { return h.flags()&termFlagR != 0 }

// SetFlags sets M, D and R and clears the reserved bits.
func (h TerminateHeader) SetFlags(m, d, r bool) {
	var f uint16
	if m {
		f |= termFlagM
	}
	if d {
		f |= termFlagD
	}
	if r {
		f |= termFlagR
	}
	binary.BigEndian.PutUint16(h[offTermCtrl+2:], f)
}

// Terminate is a whole Terminate ULPDU. Attached is what follows the
// control word: a copy of the offending segment's headers, starting with
// its 2-byte length slot, in which the DDP Segment Length (the offending
// segment's payload length) is stored when M is set.
type Terminate struct {
	Cause    TermCause
	MSN      MSN  // siw always sends 1 and expects 1
	M, D, R  bool // see TerminateHeader
	Attached []byte
}

// NewTerminate builds the Terminate siw would send for cause, copying from
// offending (the received header that failed, at least its opcode's
// header length, starting at ULPDU_Length) according to siw's rules:
//
//   - LLP errors, RDMAP catastrophic errors, and version or opcode errors
//     (the layout is unknown): nothing attached.
//   - other DDP errors, DDP catastrophic included: M and D with the
//     offending DDP header (16 bytes tagged, 20 untagged, counting the
//     length slot).
//   - RDMAP remote protection errors: M, D and R with the full offending
//     RDMAP header: 48 bytes for a Read Request, the opcode's header length
//     otherwise (siw copies 20 bytes there, which is the same for the Send
//     family, the only other messages that raise these errors).
//   - other RDMAP remote operation errors: M and D with the DDP header.
//
// With M the copied length slot holds the offending payload length. A
// nil or too short offending header attaches nothing. NewTerminate
// allocates; it runs once per failing stream.
func NewTerminate(cause TermCause, offending Header) Terminate {
	t := Terminate{Cause: cause, MSN: 1}
	n := attachLen(cause, offending)
	if n == 0 {
		return t
	}
	t.Attached = append([]byte(nil), offending[:n]...)
	t.M, t.D = true, true
	t.R = cause.Layer() == TermLayerRDMAP && cause.EType() == TermETypeRDMAPRemoteProtection
	Header(t.Attached).SetULPDULength(offending.PayloadLen())
	return t
}

func attachLen(cause TermCause, h Header) int {
	if len(h) < CheckHeaderLen {
		return 0
	}
	op := h.Opcode()
	if !op.Valid() || len(h) < op.HeaderLen() || h.PayloadLen() < 0 {
		return 0
	}
	ddpLen := UntaggedHeaderLen
	if h.Tagged() {
		ddpLen = TaggedHeaderLen
	}
	switch cause.Layer() {
	case TermLayerDDP:
		if cause == TermDDPTaggedVersion || cause == TermDDPUntaggedVersion {
			return 0
		}
		return ddpLen
	case TermLayerRDMAP:
		switch {
		case cause.EType() == TermETypeRDMAPCatastrophic:
			return 0
		case cause.EType() == TermETypeRDMAPRemoteProtection:
			return op.HeaderLen()
		case cause == TermRDMAPVersion || cause == TermRDMAPOpcode:
			return 0
		}
		return ddpLen
	}
	return 0
}

// Len returns the ULPDU length of t including the ULPDU_Length field.
func (t Terminate) Len() int { return TerminateHeaderLen + len(t.Attached) }

// Append appends t as a ULPDU (header with ULPDU_Length set, then
// Attached) to b, ready for FrameWriter.Frame(b[:TerminateHeaderLen],
// b[TerminateHeaderLen:]).
func (t Terminate) Append(b []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, TerminateHeaderLen)...)
	h := TerminateHeader(b[start:])
	UntaggedHeader(h).Encode(&UntaggedFields{Opcode: OpTerminate, Last: true, QN: QNTerminate, MSN: t.MSN})
	Header(h).SetULPDULength(TerminateHeaderLen - ULPDULengthLen + len(t.Attached))
	h.SetCause(t.Cause)
	h.SetFlags(t.M, t.D, t.R)
	return append(b, t.Attached...)
}

// ParseTerminate parses a Terminate ULPDU: b starts at ULPDU_Length and
// holds exactly 2 + ULPDU_Length bytes (the FPDU without pad and CRC). It
// checks the opcode, QN 2 and MO 0, as siw does; the MSN is left to the
// caller. Attached aliases b.
func ParseTerminate(b []byte) (Terminate, error) {
	if len(b) < TerminateHeaderLen {
		return Terminate{}, ErrMalformedTerminate
	}
	h := TerminateHeader(b)
	u := UntaggedHeader(b)
	if Header(b).Opcode() != OpTerminate || Header(b).ULPDULength() != len(b)-ULPDULengthLen ||
		u.QN() != QNTerminate || u.MO() != 0 {
		return Terminate{}, ErrMalformedTerminate
	}
	t := Terminate{Cause: h.Cause(), MSN: u.MSN(), M: h.M(), D: h.D(), R: h.R()}
	if len(b) > TerminateHeaderLen {
		t.Attached = b[TerminateHeaderLen:]
	}
	return t, nil
}

// Offending returns the attached copy of the offending header, when D is
// set and the attachment is long enough for the header its control word
// names. Its ULPDULength holds the DDP Segment Length when M is set.
func (t Terminate) Offending() (Header, bool) {
	h := Header(t.Attached)
	if !t.D || len(h) < CheckHeaderLen {
		return nil, false
	}
	op := h.Opcode()
	if !op.Valid() {
		return nil, false
	}
	need := TaggedHeaderLen
	if !h.Tagged() {
		need = UntaggedHeaderLen
	}
	if t.R {
		need = op.HeaderLen()
	}
	if len(h) < need {
		return nil, false
	}
	return h[:need], true
}
