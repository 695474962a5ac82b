package iwarp

// FPDU framing (RFC 5044 section 4): every DDP segment travels as
//
//	[ULPDU_Length:2][ULPDU: DDP/RDMAP header + payload][pad 0..3][CRC:4]
//
// where pad makes 2 + ULPDU_Length + pad a multiple of 4. Every header
// length here counts the ULPDU_Length field and is a multiple of 4, so the
// pad depends on the payload length alone.

// PadLen returns the number of pad bytes after a ULPDU of ulpduLen bytes.
func PadLen(ulpduLen int) int { return -(ULPDULengthLen + ulpduLen) & 3 }

// FrameLen returns the total FPDU size on the wire for a ULPDU of ulpduLen
// bytes: length field, ULPDU, pad and CRC.
func FrameLen(ulpduLen int) int {
	return ULPDULengthLen + ulpduLen + PadLen(ulpduLen) + CRCLen
}

// MaxPayload returns how many payload bytes one FPDU may carry behind a
// header of hdrLen bytes (counting ULPDU_Length, e.g. TaggedHeaderLen) when
// ULPDUs are capped at maxULPDU bytes. maxULPDU <= 0 or above
// MaxULPDULength means MaxULPDULength. The result is rounded down to a
// multiple of 4 so that every segment but the last needs no pad and later
// segments keep the TO/MO alignment of the first. Callers segment messages
// with it; siw accepts any FPDU size.
func MaxPayload(hdrLen, maxULPDU int) int {
	if maxULPDU <= 0 || maxULPDU > MaxULPDULength {
		maxULPDU = MaxULPDULength
	}
	n := maxULPDU - (hdrLen - ULPDULengthLen)
	if n < 0 {
		return 0
	}
	return n &^ 3
}
