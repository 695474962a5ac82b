package wire

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// Header is a view of one struct rds_header (net/rds/rds.h): 48 bytes,
// big-endian fields, no implicit padding. Every RDS message on every
// transport starts with one; fragmenting transports repeat it per fragment.
//
//	 0  h_sequence  u64   per-path sequence number (0: cong map, IB ack)
//	 8  h_ack       u64   piggybacked ack (IB/DAT; TCP sends 0)
//	16  h_len       u32   payload length of the whole message
//	20  h_sport     u16   source RDS port
//	22  h_dport     u16   destination RDS port (0: ping)
//	24  h_flags     u8    Flag bits
//	25  h_credit    u8    advertised credits (IB/DAT; TCP 0)
//	26  h_padding   [4]   zero
//	30  h_csum      u16   Internet checksum of the header, 0 = unchecked
//	32  h_exthdr    [16]  extension headers
//
// The slice must be at least HeaderLen long; accessors panic otherwise,
// like slice indexing, so callers check lengths once with ParseHeader.
type Header []byte

// Header layout.
const (
	SequenceOffset = 0
	AckOffset      = 8
	LenOffset      = 16
	SportOffset    = 20
	DportOffset    = 22
	FlagsOffset    = 24
	CreditOffset   = 25
	PaddingOffset  = 26
	CsumOffset     = 30
	ExtHdrOffset   = 32

	// ExtSpace is RDS_HEADER_EXT_SPACE.
	ExtSpace = 16
	// HeaderLen is sizeof(struct rds_header).
	HeaderLen = ExtHdrOffset + ExtSpace
)

// Seq is an RDS sequence number (h_sequence, h_ack): 64 bits, assigned per
// connection path starting at 1, never wrapping in practice.
type Seq uint64

// Port is an RDS port: a 16-bit number in RDS's own port space.
type Port uint16

// Flag is the h_flags byte.
type Flag uint8

// h_flags bits (rds.h). 0x08/0x10 are UEK's heartbeat bits, reserved here.
const (
	// FlagCongBitmap marks a congestion map update. Receivers test
	// h_flags == FlagCongBitmap exactly, so data never carries it alone.
	FlagCongBitmap Flag = 0x01
	// FlagAckRequired asks the receiver to ack promptly (IB/DAT only).
	FlagAckRequired Flag = 0x02
	// FlagRetransmitted marks a message resent after a reconnect; it
	// enables duplicate suppression by sequence number.
	FlagRetransmitted Flag = 0x04
	// FlagExthdrExtension is set by newer IB senders that added an
	// RDMA_BYTES extension; informational.
	FlagExthdrExtension Flag = 0x20
)

// ErrShortHeader reports fewer than HeaderLen bytes.
var ErrShortHeader = errors.New("rds: short header")

// ParseHeader returns the header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return nil, ErrShortHeader
	}
	return Header(b[:HeaderLen]), nil
}

func (h Header) Sequence() Seq { return Seq(binary.BigEndian.Uint64(h[SequenceOffset:])) }
func (h Header) Ack() Seq      { return Seq(binary.BigEndian.Uint64(h[AckOffset:])) }
func (h Header) Len() uint32   { return binary.BigEndian.Uint32(h[LenOffset:]) }
func (h Header) Sport() Port   { return Port(binary.BigEndian.Uint16(h[SportOffset:])) }
func (h Header) Dport() Port   { return Port(binary.BigEndian.Uint16(h[DportOffset:])) }
func (h Header) Flags() Flag   { return Flag(h[FlagsOffset]) }
func (h Header) Credit() uint8 { return h[CreditOffset] }
func (h Header) Csum() uint16  { return binary.BigEndian.Uint16(h[CsumOffset:]) }

// ExtArea returns the 16-byte extension-header area (aliasing h).
func (h Header) ExtArea() []byte { return h[ExtHdrOffset:HeaderLen] }

func (h Header) SetSequence(s Seq) { binary.BigEndian.PutUint64(h[SequenceOffset:], uint64(s)) }
func (h Header) SetAck(s Seq)      { binary.BigEndian.PutUint64(h[AckOffset:], uint64(s)) }
func (h Header) SetLen(n uint32)   { binary.BigEndian.PutUint32(h[LenOffset:], n) }
func (h Header) SetSport(p Port)   { binary.BigEndian.PutUint16(h[SportOffset:], uint16(p)) }
func (h Header) SetDport(p Port)   { binary.BigEndian.PutUint16(h[DportOffset:], uint16(p)) }
func (h Header) SetFlags(f Flag)   { h[FlagsOffset] = byte(f) }
func (h Header) SetCredit(c uint8) { h[CreditOffset] = c }
func (h Header) SetCsum(c uint16)  { binary.BigEndian.PutUint16(h[CsumOffset:], c) }

// IsCongMap reports whether the header announces a congestion map: the
// kernel compares the whole flags byte with FlagCongBitmap.
func (h Header) IsCongMap() bool { return h.Flags() == FlagCongBitmap }

// Fields is a whole header for Encode; Ext is the raw extension area.
type Fields struct {
	Sequence Seq
	Ack      Seq
	Len      uint32
	Sport    Port
	Dport    Port
	Flags    Flag
	Credit   uint8
	Ext      [ExtSpace]byte
}

// Encode writes f into h: padding and checksum zero, as rds_tcp sends it.
// Transports that checksum (DAT) call SetChecksum afterwards.
func (h Header) Encode(f *Fields) {
	h.SetSequence(f.Sequence)
	h.SetAck(f.Ack)
	h.SetLen(f.Len)
	h.SetSport(f.Sport)
	h.SetDport(f.Dport)
	h.SetFlags(f.Flags)
	h.SetCredit(f.Credit)
	clear(h[PaddingOffset : CsumOffset+2])
	copy(h[ExtHdrOffset:HeaderLen], f.Ext[:])
}

// EncodeData writes the header of a data message as it is queued: length
// and ports, every other field zero, as Encode with only those three set
// writes it. It builds no Fields and copies no extension area, which a
// sender does for every message.
func (h Header) EncodeData(n uint32, sport, dport Port) {
	clear(h[:HeaderLen])
	h.SetLen(n)
	h.SetSport(sport)
	h.SetDport(dport)
}

// Decode returns the header's fields.
func (h Header) Decode() Fields {
	f := Fields{
		Sequence: h.Sequence(), Ack: h.Ack(), Len: h.Len(),
		Sport: h.Sport(), Dport: h.Dport(), Flags: h.Flags(), Credit: h.Credit(),
	}
	copy(f.Ext[:], h.ExtArea())
	return f
}

// checksum is the RFC 1071 ones'-complement sum of the 48 header bytes as
// big-endian 16-bit words, folded and complemented (ip_fast_csum). The
// ones'-complement sum of the six 64-bit words, folded to 16 bits, is
// the same sum (RFC 1071, 2.C), and so is the sum of the words read in
// the other byte order, byte-swapped at the end (2.B): the words are
// read little-endian, plain loads on the common hosts, and only the
// folded result is swapped, instead of each of the six words. A header
// is checksummed on every send and receive.
//
// The six additions are written out, one carry chain with no loop
// around it and one bounds check for all six loads: the header is
// summed twice per message, and the loop cost twice the sum itself.
func (h Header) checksum() uint16 {
	_ = h[HeaderLen-1]
	le := binary.LittleEndian
	sum, c := bits.Add64(le.Uint64(h[0:]), le.Uint64(h[8:]), 0)
	sum, c = bits.Add64(sum, le.Uint64(h[16:]), c)
	sum, c = bits.Add64(sum, le.Uint64(h[24:]), c)
	sum, c = bits.Add64(sum, le.Uint64(h[32:]), c)
	sum, c = bits.Add64(sum, le.Uint64(h[40:]), c)
	s := sum>>32 + sum&0xffffffff + c // c: the end-around carry
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	s = s>>16 + s&0xffff
	return ^bits.ReverseBytes16(uint16(s))
}

// SetChecksum computes h_csum over the header with the field zeroed
// (rds_message_make_checksum). Recompute after changing any field.
func (h Header) SetChecksum() {
	h.SetCsum(0)
	h.SetCsum(h.checksum())
}

// ChecksumOK reports whether h_csum is 0 (unchecked, as rds_tcp sends) or
// the header including it sums to zero (rds_message_verify_checksum).
func (h Header) ChecksumOK() bool {
	return h.Csum() == 0 || h.checksum() == 0
}
