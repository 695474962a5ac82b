package iwarp

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MPA connection setup (RFC 5044 section 7, RFC 6581): right after the TCP
// handshake the initiator sends an MPA Request frame and the responder
// answers with an MPA Reply frame; FPDUs follow. The frames have no CRC
// and no padding:
//
//	[Key:16][Flags:1][Rev:1][PD_Length:2][private data: PD_Length]
//
// With Rev 2 and the enhanced flag the private data opens with a 4-byte
// IRD/ORD block (RFC 6581) that is not part of the application's private
// data.

// The two ASCII keys that open an MPA frame.
const (
	MPARequestKey = "MPA ID Req Frame"
	MPAReplyKey   = "MPA ID Rep Frame"
)

// MPAFlags is the flags byte of an MPA frame.
type MPAFlags uint8

const (
	MPAFlagMarkers  MPAFlags = 0x80 // M: markers wanted/used; siw never supports them
	MPAFlagCRC      MPAFlags = 0x40 // C: CRC wanted/used
	MPAFlagReject   MPAFlags = 0x20 // R: connection rejected (Reply only)
	MPAFlagEnhanced MPAFlags = 0x10 // RFC 6581 enhanced connection establishment
	// MPAFlagSiwGSO is siw's private, experimental "GSO" flag. Mainline siw
	// never sets it and ignores it; so does this package. Bits 2..0 are
	// reserved.
	MPAFlagSiwGSO MPAFlags = 0x08
)

// Bits of the RFC 6581 IRD/ORD block. Each 16-bit word carries a 14-bit
// value and two option bits.
const (
	IRDPeerToPeer   = 0x8000 // IRD word: peer-to-peer (RTR) mode requested/accepted
	IRDZeroSendRTR  = 0x4000 // IRD word: zero-length Send RTR (siw never offers it)
	ORDZeroWriteRTR = 0x8000 // ORD word: zero-length RDMA Write RTR
	ORDZeroReadRTR  = 0x4000 // ORD word: zero-length RDMA Read RTR
	IRDORDMask      = 0x3FFF // IRD or ORD value
)

// Offsets of the MPA frame header.
const (
	offMPAKey      = 0
	offMPAFlags    = 16
	offMPARev      = 17
	offMPAPDLength = 18
)

// MPAHeader is the fixed MPAHeaderLen-byte start of an MPA Request or
// Reply frame.
type MPAHeader []byte

func (h MPAHeader) IsRequest() bool { return string(h[offMPAKey:offMPAFlags]) == MPARequestKey }
func (h MPAHeader) IsReply() bool   { return string(h[offMPAKey:offMPAFlags]) == MPAReplyKey }

// SetKey writes the Reply key if reply, else the Request key.
func (h MPAHeader) SetKey(reply bool) {
	if reply {
		copy(h[offMPAKey:], MPAReplyKey)
	} else {
		copy(h[offMPAKey:], MPARequestKey)
	}
}

func (h MPAHeader) Flags() MPAFlags     { return MPAFlags(h[offMPAFlags]) }
func (h MPAHeader) SetFlags(f MPAFlags) { h[offMPAFlags] = byte(f) }
func (h MPAHeader) Rev() uint8          { return h[offMPARev] }
func (h MPAHeader) SetRev(r uint8)      { h[offMPARev] = r }
func (h MPAHeader) PDLength() int       { return int(binary.BigEndian.Uint16(h[offMPAPDLength:])) }
func (h MPAHeader) SetPDLength(n int) {
	binary.BigEndian.PutUint16(h[offMPAPDLength:], uint16(n))
}

// RTR is the set of RFC 6581 ready-to-receive message types a frame
// offers (Request) or selects (Reply) in peer-to-peer mode.
type RTR uint8

const (
	RTRZeroSend  RTR = 1 << iota // zero-length Send
	RTRZeroWrite                 // zero-length RDMA Write
	RTRZeroRead                  // zero-length RDMA Read Request
)

// MPAFrame is a decoded MPA Request or Reply.
type MPAFrame struct {
	Reply    bool // Reply key; else Request key
	Markers  bool // M flag
	CRC      bool // C flag
	Reject   bool // R flag (Reply only)
	Enhanced bool // RFC 6581 flag; with Rev >= 2 the IRD/ORD block is present
	Rev      uint8

	// IRD/ORD block, on the wire only when HasIRDORD. IRD and ORD are
	// 14-bit values; P2P and RTR are the option bits.
	IRD uint16
	ORD uint16
	P2P bool
	RTR RTR

	// PrivateData is the application's private data, without the IRD/ORD
	// block. ParseMPA makes it alias its input.
	PrivateData []byte
}

// HasIRDORD reports whether the frame carries the RFC 6581 IRD/ORD block.
func (f MPAFrame) HasIRDORD() bool { return f.Rev >= MPARev2 && f.Enhanced }

// PDLength returns the frame's PD_Length: the private data plus the
// IRD/ORD block when present.
func (f MPAFrame) PDLength() int {
	n := len(f.PrivateData)
	if f.HasIRDORD() {
		n += IRDORDLen
	}
	return n
}

// Len returns the frame's size on the wire.
func (f MPAFrame) Len() int { return MPAHeaderLen + f.PDLength() }

// Validate reports whether f may be sent: revision at most 2, IRD and ORD
// within 14 bits, reject only on a Reply, PD_Length within siw's limit.
func (f MPAFrame) Validate() error {
	switch {
	case f.Rev > MPAMaxRev:
		return fmt.Errorf("%w: revision %d", ErrInvalidMPA, f.Rev)
	case f.IRD > IRDORDMask || f.ORD > IRDORDMask:
		return fmt.Errorf("%w: IRD %d / ORD %d exceed %d", ErrInvalidMPA, f.IRD, f.ORD, IRDORDMask)
	case f.Reject && !f.Reply:
		return fmt.Errorf("%w: reject flag on a Request", ErrInvalidMPA)
	case f.PDLength() > MaxPrivateData:
		return fmt.Errorf("%w: PD_Length %d exceeds %d", ErrInvalidMPA, f.PDLength(), MaxPrivateData)
	}
	return nil
}

func (f MPAFrame) flags() MPAFlags {
	var fl MPAFlags
	if f.Markers {
		fl |= MPAFlagMarkers
	}
	if f.CRC {
		fl |= MPAFlagCRC
	}
	if f.Reject {
		fl |= MPAFlagReject
	}
	if f.Enhanced {
		fl |= MPAFlagEnhanced
	}
	return fl
}

// Append appends the frame to b. It encodes f as given, with IRD and ORD
// truncated to 14 bits; call Validate first for frames built from local
// input.
func (f MPAFrame) Append(b []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, MPAHeaderLen)...)
	h := MPAHeader(b[start:])
	h.SetKey(f.Reply)
	h.SetFlags(f.flags())
	h.SetRev(f.Rev)
	h.SetPDLength(f.PDLength())
	if f.HasIRDORD() {
		ird, ord := f.IRD&IRDORDMask, f.ORD&IRDORDMask
		if f.P2P {
			ird |= IRDPeerToPeer
		}
		if f.RTR&RTRZeroSend != 0 {
			ird |= IRDZeroSendRTR
		}
		if f.RTR&RTRZeroWrite != 0 {
			ord |= ORDZeroWriteRTR
		}
		if f.RTR&RTRZeroRead != 0 {
			ord |= ORDZeroReadRTR
		}
		b = binary.BigEndian.AppendUint16(b, ird)
		b = binary.BigEndian.AppendUint16(b, ord)
	}
	return append(b, f.PrivateData...)
}

// checkMPAHeader validates what the fixed header alone can tell and
// returns PD_Length. It rejects before the private data is read so that a
// streaming reader never waits for bytes of a frame it will refuse.
func checkMPAHeader(h MPAHeader) (int, error) {
	// siw's order: a bad length or revision is dropped silently, a bad
	// key is answered with a Terminate, so the key is checked last.
	n := h.PDLength()
	if n > MaxPrivateData {
		return 0, errMPAPrivateDataLen
	}
	if h.Rev() > MPAMaxRev {
		return 0, errMPARev
	}
	if !h.IsRequest() && !h.IsReply() {
		return 0, errMPAKey
	}
	if h.Rev() >= MPARev2 && h.Flags()&MPAFlagEnhanced != 0 && n < IRDORDLen {
		return 0, errMPAIRDORD
	}
	return n, nil
}

// ParseMPA decodes one MPA Request or Reply from the start of b and returns
// it with its length n = MPAHeaderLen + PD_Length. Bytes after n are not
// looked at: they belong to the FPDU stream. It accepts revisions 0..2 and
// reads the IRD/ORD block for Rev 2 with the enhanced flag. A wrong key,
// revision above 2, PD_Length above MaxPrivateData, or an enhanced rev 2
// frame too short for its IRD/ORD block is a *ProtocolError (cause
// TermLLPInvalidMPA); if b ends before the frame does, the error is
// ErrMPAIncomplete. Semantic checks (markers, reject, CRC policy, IRD/ORD
// negotiation) are the connection manager's. PrivateData aliases b.
func ParseMPA(b []byte) (MPAFrame, int, error) {
	if len(b) < MPAHeaderLen {
		return MPAFrame{}, 0, ErrMPAIncomplete
	}
	h := MPAHeader(b[:MPAHeaderLen])
	pdLen, err := checkMPAHeader(h)
	if err != nil {
		return MPAFrame{}, 0, err
	}
	n := MPAHeaderLen + pdLen
	if len(b) < n {
		return MPAFrame{}, 0, ErrMPAIncomplete
	}
	fl := h.Flags()
	f := MPAFrame{
		Reply:    h.IsReply(),
		Markers:  fl&MPAFlagMarkers != 0,
		CRC:      fl&MPAFlagCRC != 0,
		Reject:   fl&MPAFlagReject != 0,
		Enhanced: fl&MPAFlagEnhanced != 0,
		Rev:      h.Rev(),
	}
	pd := b[MPAHeaderLen:n]
	if f.HasIRDORD() {
		ird := binary.BigEndian.Uint16(pd[0:])
		ord := binary.BigEndian.Uint16(pd[2:])
		f.IRD, f.ORD = ird&IRDORDMask, ord&IRDORDMask
		f.P2P = ird&IRDPeerToPeer != 0
		if ird&IRDZeroSendRTR != 0 {
			f.RTR |= RTRZeroSend
		}
		if ord&ORDZeroWriteRTR != 0 {
			f.RTR |= RTRZeroWrite
		}
		if ord&ORDZeroReadRTR != 0 {
			f.RTR |= RTRZeroRead
		}
		pd = pd[IRDORDLen:]
	}
	if len(pd) > 0 {
		f.PrivateData = pd
	}
	return f, n, nil
}

// ReadMPA reads exactly one MPA frame from r: MPAHeaderLen bytes, then
// exactly PD_Length more, never beyond the frame, so that FPDUs a peer
// sends right behind its Reply stay in r for the FPDU reader. A frame the
// header already shows to be invalid is refused before its private data
// is read. Errors from r are returned as io.ReadFull reports them (io.EOF
// before the first byte, io.ErrUnexpectedEOF within the frame).
// PrivateData is freshly allocated.
func ReadMPA(r io.Reader) (MPAFrame, error) {
	var hdr [MPAHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return MPAFrame{}, err
	}
	pdLen, err := checkMPAHeader(hdr[:])
	if err != nil {
		return MPAFrame{}, err
	}
	b := make([]byte, MPAHeaderLen+pdLen)
	copy(b, hdr[:])
	if _, err := io.ReadFull(r, b[MPAHeaderLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return MPAFrame{}, err
	}
	f, _, err := ParseMPA(b)
	return f, err
}
