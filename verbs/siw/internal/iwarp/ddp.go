package iwarp

import "encoding/binary"

// DDP (RFC 5041) segment headers. Views start at the MPA ULPDU_Length field
// (offset 0), then the 2-byte control word shared by DDP and RDMAP
// (offset 2), then the tagged or untagged buffer model fields. Big-endian.

// Offsets common to every header.
const (
	offULPDULength = 0
	offCtrl        = 2
)

// Offsets of the tagged header (RFC 5041 section 4.2).
const (
	offTaggedSTag = 4
	offTaggedTO   = 8
)

// Offsets of the untagged header (RFC 5041 section 4.3).
const (
	offUntaggedULP = 4 // reserved for the ULP; RDMAP puts the Invalidate STag here
	offUntaggedQN  = 8
	offUntaggedMSN = 12
	offUntaggedMO  = 16
)

// STag names a registered memory region: a 24-bit index and an 8-bit
// consumer key, as siw lays it out.
type STag uint32

// Index is the upper 24 bits, the part siw looks memory up by.
func (s STag) Index() uint32 { return uint32(s) >> 8 }

// Key is the lower 8 bits, which must match the registration as well.
func (s STag) Key() uint8 { return uint8(s) }

// QN is a DDP untagged queue number. RDMAP uses three.
type QN uint32

const (
	QNSend        QN = 0 // Send and its variants
	QNReadRequest QN = 1 // RDMA Read Request
	QNTerminate   QN = 2 // Terminate
)

// MSN is a DDP message sequence number: per queue and direction, starting
// at 1 after RTS, incremented per message, wrapping at 2^32.
type MSN uint32

// Next returns the MSN following m.
func (m MSN) Next() MSN { return m + 1 }

// LessThan reports whether m precedes o in serial-number arithmetic, i.e.
// o is less than 2^31 messages ahead of m.
func (m MSN) LessThan(o MSN) bool { return int32(m-o) < 0 }

// Ctrl is the 16-bit DDP/RDMAP control word (RFC 5041 section 4.1, RFC 5040
// section 4.1):
//
//	bit 15 T tagged, 14 L last segment, 13..10 reserved, 9..8 DV,
//	bits 7..6 RV, 5..4 reserved, 3..0 RDMAP opcode
//
// Reserved bits are sent as zero and ignored on receipt.
type Ctrl uint16

const (
	CtrlTagged Ctrl = 0x8000 // T: tagged buffer model
	CtrlLast   Ctrl = 0x4000 // L: last segment of the DDP message

	ctrlDVShift = 8
	ctrlRVShift = 6
	ctrlOpMask  = 0x000F
)

// MakeCtrl returns the control word for op with DDP and RDMAP version 1 and
// the T bit the opcode requires.
func MakeCtrl(op Opcode, last bool) Ctrl {
	c := Ctrl(DDPVersion)<<ctrlDVShift | Ctrl(RDMAPVersion)<<ctrlRVShift | Ctrl(op&ctrlOpMask)
	if op.Tagged() {
		c |= CtrlTagged
	}
	if last {
		c |= CtrlLast
	}
	return c
}

func (c Ctrl) Tagged() bool        { return c&CtrlTagged != 0 }
func (c Ctrl) Last() bool          { return c&CtrlLast != 0 }
func (c Ctrl) DDPVersion() uint8   { return uint8(c>>ctrlDVShift) & 3 }
func (c Ctrl) RDMAPVersion() uint8 { return uint8(c>>ctrlRVShift) & 3 }
func (c Ctrl) Opcode() Opcode      { return Opcode(c & ctrlOpMask) }

// Header is the part every FPDU starts with: ULPDU_Length and the control
// word. It needs at least 4 bytes; convert it to TaggedHeader,
// UntaggedHeader, ReadRequestHeader or TerminateHeader for the rest.
type Header []byte

func (h Header) ULPDULength() int { return int(binary.BigEndian.Uint16(h[offULPDULength:])) }
func (h Header) SetULPDULength(n int) {
	binary.BigEndian.PutUint16(h[offULPDULength:], uint16(n))
}
func (h Header) Ctrl() Ctrl     { return Ctrl(binary.BigEndian.Uint16(h[offCtrl:])) }
func (h Header) SetCtrl(c Ctrl) { binary.BigEndian.PutUint16(h[offCtrl:], uint16(c)) }
func (h Header) Opcode() Opcode { return h.Ctrl().Opcode() }
func (h Header) Last() bool     { return h.Ctrl().Last() }
func (h Header) Tagged() bool   { return h.Ctrl().Tagged() }

// PayloadLen returns the payload bytes behind the header, from
// ULPDU_Length and the opcode's header length. It is meaningful only for a
// header that passed CheckHeader.
func (h Header) PayloadLen() int {
	return h.ULPDULength() - (h.Opcode().HeaderLen() - ULPDULengthLen)
}

// TaggedHeader is the DDP tagged buffer model header, TaggedHeaderLen
// bytes: RDMA Write and RDMA Read Response.
type TaggedHeader []byte

// TaggedFields describes a tagged header for Encode.
type TaggedFields struct {
	Opcode Opcode // OpRDMAWrite or OpRDMAReadResponse
	Last   bool
	STag   STag   // data sink STag
	TO     uint64 // tagged offset of this segment's first payload byte
}

// Encode writes f into h. ULPDU_Length is left to the framer.
func (h TaggedHeader) Encode(f *TaggedFields) {
	Header(h).SetCtrl(MakeCtrl(f.Opcode, f.Last))
	h.SetSTag(f.STag)
	h.SetTO(f.TO)
}

func (h TaggedHeader) STag() STag     { return STag(binary.BigEndian.Uint32(h[offTaggedSTag:])) }
func (h TaggedHeader) SetSTag(s STag) { binary.BigEndian.PutUint32(h[offTaggedSTag:], uint32(s)) }
func (h TaggedHeader) TO() uint64     { return binary.BigEndian.Uint64(h[offTaggedTO:]) }
func (h TaggedHeader) SetTO(to uint64) {
	binary.BigEndian.PutUint64(h[offTaggedTO:], to)
}

// UntaggedHeader is the DDP untagged buffer model header,
// UntaggedHeaderLen bytes: the Send family, and the first part of the Read
// Request and Terminate headers.
type UntaggedHeader []byte

// UntaggedFields describes an untagged header for Encode.
type UntaggedFields struct {
	Opcode         Opcode
	Last           bool
	InvalidateSTag STag // only for OpSendInv and OpSendSEInv; else 0
	QN             QN
	MSN            MSN
	MO             uint32 // message offset of this segment's first payload byte
}

// Encode writes f into h. ULPDU_Length is left to the framer.
func (h UntaggedHeader) Encode(f *UntaggedFields) {
	_ = h[UntaggedHeaderLen-1] // one bounds check for the five stores
	Header(h).SetCtrl(MakeCtrl(f.Opcode, f.Last))
	h.SetInvalidateSTag(f.InvalidateSTag)
	h.SetQN(f.QN)
	h.SetMSN(f.MSN)
	h.SetMO(f.MO)
}

// InvalidateSTag is the word DDP reserves for the ULP. RDMAP uses it for
// the STag a Send with Invalidate asks the receiver to invalidate; other
// messages send 0 here.
func (h UntaggedHeader) InvalidateSTag() STag {
	return STag(binary.BigEndian.Uint32(h[offUntaggedULP:]))
}
func (h UntaggedHeader) SetInvalidateSTag(s STag) {
	binary.BigEndian.PutUint32(h[offUntaggedULP:], uint32(s))
}
func (h UntaggedHeader) QN() QN          { return QN(binary.BigEndian.Uint32(h[offUntaggedQN:])) }
func (h UntaggedHeader) SetQN(q QN)      { binary.BigEndian.PutUint32(h[offUntaggedQN:], uint32(q)) }
func (h UntaggedHeader) MSN() MSN        { return MSN(binary.BigEndian.Uint32(h[offUntaggedMSN:])) }
func (h UntaggedHeader) SetMSN(m MSN)    { binary.BigEndian.PutUint32(h[offUntaggedMSN:], uint32(m)) }
func (h UntaggedHeader) MO() uint32      { return binary.BigEndian.Uint32(h[offUntaggedMO:]) }
func (h UntaggedHeader) SetMO(mo uint32) { binary.BigEndian.PutUint32(h[offUntaggedMO:], mo) }
