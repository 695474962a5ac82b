package iwarp

import (
	"encoding/binary"
	"strconv"
)

// RDMAP (RFC 5040) messages ride on DDP segments; the opcode in the low 4
// bits of the control word selects the message and with it the DDP buffer
// model, queue number and header length. Those facts live in one
// opcode-indexed table rather than in switch statements on both the
// transmit and the receive path.

// Opcode is the 4-bit RDMAP opcode.
type Opcode uint8

const (
	OpRDMAWrite        Opcode = 0
	OpRDMAReadRequest  Opcode = 1
	OpRDMAReadResponse Opcode = 2
	OpSend             Opcode = 3
	OpSendInv          Opcode = 4 // Send with Invalidate
	OpSendSE           Opcode = 5 // Send with Solicited Event
	OpSendSEInv        Opcode = 6 // Send with Solicited Event and Invalidate
	OpTerminate        Opcode = 7
	// Opcodes 8..15 are RFC 7306 extensions (atomics, immediate data);
	// siw terminates a stream that uses them, and so does CheckHeader.
	maxOpcode = OpTerminate
)

type opInfo struct {
	hdrLen int  // header length counting ULPDU_Length
	tagged bool // DDP buffer model
	qn     QN   // untagged queue, meaningless when tagged
	name   string
}

var opTable = [maxOpcode + 1]opInfo{
	OpRDMAWrite:        {TaggedHeaderLen, true, 0, "RDMA Write"},
	OpRDMAReadRequest:  {ReadRequestHeaderLen, false, QNReadRequest, "RDMA Read Request"},
	OpRDMAReadResponse: {TaggedHeaderLen, true, 0, "RDMA Read Response"},
	OpSend:             {UntaggedHeaderLen, false, QNSend, "Send"},
	OpSendInv:          {UntaggedHeaderLen, false, QNSend, "Send with Invalidate"},
	OpSendSE:           {UntaggedHeaderLen, false, QNSend, "Send with SE"},
	OpSendSEInv:        {UntaggedHeaderLen, false, QNSend, "Send with SE and Invalidate"},
	OpTerminate:        {TerminateHeaderLen, false, QNTerminate, "Terminate"},
}

// Valid reports whether op is one of the eight RDMAP opcodes of RFC 5040.
func (op Opcode) Valid() bool { return op <= maxOpcode }

// HeaderLen returns the fixed header length of op, counting ULPDU_Length,
// or 0 for an invalid opcode.
func (op Opcode) HeaderLen() int {
	if !op.Valid() {
		return 0
	}
	return opTable[op].hdrLen
}

// Tagged reports whether op uses the DDP tagged buffer model.
func (op Opcode) Tagged() bool { return op.Valid() && opTable[op].tagged }

// QN returns the untagged queue op is sent on; it is 0 for tagged opcodes.
func (op Opcode) QN() QN {
	if !op.Valid() {
		return 0
	}
	return opTable[op].qn
}

func (op Opcode) String() string {
	if !op.Valid() {
		return "opcode(" + strconv.Itoa(int(op)) + ")"
	}
	return opTable[op].name
}

// Offsets of the RDMA Read Request header (RFC 5040 section 4.4), behind
// the untagged DDP header.
const (
	offRRSinkSTag = 20
	offRRSinkTO   = 24
	offRRSize     = 32
	offRRSrcSTag  = 36
	offRRSrcTO    = 40
)

// ReadRequestHeaderULPDULength is the only ULPDU_Length a Read Request may
// carry: it has no payload.
const ReadRequestHeaderULPDULength = ReadRequestHeaderLen - ULPDULengthLen

// ReadRequestHeader is an RDMA Read Request, ReadRequestHeaderLen bytes:
// the untagged header (QN 1) followed by sink and source descriptions.
// UntaggedHeader(h) gives access to the DDP fields.
type ReadRequestHeader []byte

// ReadRequestFields describes a Read Request for Encode. QN is always
// QNReadRequest, MO 0 and L set.
type ReadRequestFields struct {
	MSN      MSN
	SinkSTag STag   // requester's buffer, echoed in the Read Response
	SinkTO   uint64 //
	Size     uint32 // RDMA Read Message Size in bytes
	SrcSTag  STag   // responder's buffer (the advertised rkey)
	SrcTO    uint64 //
}

// Encode writes f into h and sets ULPDU_Length, which is fixed.
func (h ReadRequestHeader) Encode(f *ReadRequestFields) {
	UntaggedHeader(h).Encode(&UntaggedFields{
		Opcode: OpRDMAReadRequest, Last: true, QN: QNReadRequest, MSN: f.MSN,
	})
	Header(h).SetULPDULength(ReadRequestHeaderULPDULength)
	h.SetSinkSTag(f.SinkSTag)
	h.SetSinkTO(f.SinkTO)
	h.SetSize(f.Size)
	h.SetSrcSTag(f.SrcSTag)
	h.SetSrcTO(f.SrcTO)
}

func (h ReadRequestHeader) SinkSTag() STag { return STag(binary.BigEndian.Uint32(h[offRRSinkSTag:])) }
func (h ReadRequestHeader) SetSinkSTag(s STag) {
	binary.BigEndian.PutUint32(h[offRRSinkSTag:], uint32(s))
}
func (h ReadRequestHeader) SinkTO() uint64      { return binary.BigEndian.Uint64(h[offRRSinkTO:]) }
func (h ReadRequestHeader) SetSinkTO(to uint64) { binary.BigEndian.PutUint64(h[offRRSinkTO:], to) }
func (h ReadRequestHeader) Size() uint32        { return binary.BigEndian.Uint32(h[offRRSize:]) }
func (h ReadRequestHeader) SetSize(n uint32)    { binary.BigEndian.PutUint32(h[offRRSize:], n) }
func (h ReadRequestHeader) SrcSTag() STag       { return STag(binary.BigEndian.Uint32(h[offRRSrcSTag:])) }
func (h ReadRequestHeader) SetSrcSTag(s STag) {
	binary.BigEndian.PutUint32(h[offRRSrcSTag:], uint32(s))
}
func (h ReadRequestHeader) SrcTO() uint64      { return binary.BigEndian.Uint64(h[offRRSrcTO:]) }
func (h ReadRequestHeader) SetSrcTO(to uint64) { binary.BigEndian.PutUint64(h[offRRSrcTO:], to) }

// CheckHeaderLen is how many bytes CheckHeader needs: ULPDU_Length and the
// control word.
const CheckHeaderLen = 4

// CheckHeader validates the start of an FPDU, b[:4] (ULPDU_Length and the
// control word), and returns its opcode and full header length counting
// ULPDU_Length. It checks, in siw's order: DDP version, RDMAP version,
// opcode <= 7; then, beyond what siw checks, that the T bit matches the
// opcode, that ULPDU_Length covers the header, and that a Read Request
// carries no payload. A failure is a *ProtocolError whose Cause is the
// Terminate to send. len(b) < 4 panics: the caller reads 4 bytes first.
func CheckHeader(b []byte) (Opcode, int, error) {
	h := Header(b[:CheckHeaderLen])
	c := h.Ctrl()
	if c.DDPVersion() != DDPVersion {
		if c.Tagged() {
			return 0, 0, errDDPVersionTagged
		}
		return 0, 0, errDDPVersionUntagged
	}
	if c.RDMAPVersion() != RDMAPVersion {
		return 0, 0, errRDMAPVersion
	}
	op := c.Opcode()
	if !op.Valid() {
		return 0, 0, errOpcode
	}
	info := &opTable[op]
	if c.Tagged() != info.tagged {
		return 0, 0, errTaggedMismatch
	}
	n := h.ULPDULength()
	if n < info.hdrLen-ULPDULengthLen {
		return 0, 0, errULPDULength
	}
	if op == OpRDMAReadRequest && n != ReadRequestHeaderULPDULength {
		return 0, 0, errReadRequestLength
	}
	return op, info.hdrLen, nil
}
