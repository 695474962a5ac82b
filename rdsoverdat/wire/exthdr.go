package wire

import (
	"encoding/binary"
	"errors"
)

// ExtType is the type byte of an extension header (RDS_EXTHDR_*). An
// extension is the type byte followed by a body whose length the type
// implies; there is no length byte, so a receiver that does not know a
// type cannot skip it (the kernel then reads the next byte as a type).
type ExtType uint8

// Extension types (net/rds/rds.h). 7 (CAP_BITS) and 9 (CSUM) are UEK-only
// and have no size in mainline; they are listed so nobody reuses them.
const (
	ExtNone      ExtType = 0 // end of list
	ExtVersion   ExtType = 1 // be32 protocol version; never sent by Linux
	ExtRDMA      ExtType = 2 // be32 R_Key of the MR an RDMA op used
	ExtRDMADest  ExtType = 3 // be32 R_Key, be32 offset of a requested RDMA
	ExtRDMABytes ExtType = 4 // be32 bytes, u8 direction, 3 pad (mainline 2026)
	ExtNPaths    ExtType = 5 // be16 paths the sender supports
	ExtGenNum    ExtType = 6 // be32 sender's connection generation number
	_            ExtType = 7 // UEK RDS_EXTHDR_CAP_BITS
	ExtSportIdx  ExtType = 8 // u8 0: TCP source port encodes the path index
	_            ExtType = 9 // UEK RDS_EXTHDR_CSUM

	// ExtRDMAAddr is rdsoverdat's own: the be48 address of the first byte
	// of the MR named by the RDMA_DEST extension before it. Kernel MRs
	// are zero based, so a cookie's offset is all a peer needs; DAT LMRs
	// are addressed by virtual address, which the 32-bit offset of a
	// cookie cannot hold, so a node sending a cookie tells the peer node
	// where that MR starts. Body: 6 bytes, enough for user-space
	// addresses (47 bits on amd64 and arm64 with 4-level tables). The
	// last type below ExtMax, far from the kernel's growing list.
	ExtRDMAAddr ExtType = 15
	// ExtRDMACheck (14, rdmacheck.go) marks the dat transport's check
	// frames.

	// ExtMax is __RDS_EXTHDR_MAX: types at or above it end parsing.
	ExtMax = 16
)

// RDMA_BYTES directions.
const (
	RDMAWriteBytes = 0x01 // RDS_FLAG_RDMA_WR_BYTES
	RDMAReadBytes  = 0x02 // RDS_FLAG_RDMA_RD_BYTES
)

// extSize is rds_exthdr_size[]: the body length of each type, 0 for
// types mainline does not define.
var extSize = [ExtMax]uint8{
	ExtVersion:   4,
	ExtRDMA:      4,
	ExtRDMADest:  8,
	ExtRDMABytes: 8,
	ExtNPaths:    2,
	ExtGenNum:    4,
	ExtSportIdx:  1,
	ExtRDMAAddr:  6,
	ExtRDMACheck: 1,
}

// ExtBodyLen returns the body length of type t, 0 if t is undefined.
func ExtBodyLen(t ExtType) int {
	if t >= ExtMax {
		return 0
	}
	return int(extSize[t])
}

// Ext is one extension header: a type and its fixed-size body.
type Ext struct {
	Type ExtType
	body [8]byte // the longest body is 8 bytes
}

// Errors of ParseExt and AddExt.
var (
	ErrExtEnd      = errors.New("rds: end of extension headers")
	ErrExtOverflow = errors.New("rds: extension header overflows the header")
	ErrExtNoSpace  = errors.New("rds: no room for extension header")
	ErrExtType     = errors.New("rds: extension type without a defined size")
)

// ParseExt decodes the extension at the start of b and returns it with
// the bytes it used. It follows rds_message_next_extension: type 0 or a
// type >= ExtMax ends the list (ErrExtEnd), a body running past b is
// ErrExtOverflow, and an undefined type below ExtMax yields an empty body
// and n == 1, so parsing continues at the next byte like the kernel does.
func ParseExt(b []byte) (e Ext, n int, err error) {
	if len(b) == 0 || b[0] == byte(ExtNone) || b[0] >= ExtMax {
		return Ext{}, 0, ErrExtEnd
	}
	e.Type = ExtType(b[0])
	l := ExtBodyLen(e.Type)
	if 1+l > len(b) {
		return Ext{}, 0, ErrExtOverflow
	}
	copy(e.body[:], b[1:1+l])
	return e, 1 + l, nil
}

// Len is the encoded length: type byte plus body.
func (e Ext) Len() int { return 1 + ExtBodyLen(e.Type) }

// Append appends the encoded extension to b.
func (e Ext) Append(b []byte) []byte {
	b = append(b, byte(e.Type))
	return append(b, e.body[:ExtBodyLen(e.Type)]...)
}

// Body returns the body bytes (a copy-free view of e's storage).
func (e *Ext) Body() []byte { return e.body[:ExtBodyLen(e.Type)] }

// NPathsExt announces how many paths the sender supports.
func NPathsExt(n uint16) Ext {
	e := Ext{Type: ExtNPaths}
	binary.BigEndian.PutUint16(e.body[:], n)
	return e
}

// GenNumExt announces the sender's connection generation number.
func GenNumExt(g uint32) Ext {
	e := Ext{Type: ExtGenNum}
	binary.BigEndian.PutUint32(e.body[:], g)
	return e
}

// SportIdxExt says the TCP source port encodes the path index.
func SportIdxExt() Ext { return Ext{Type: ExtSportIdx} }

// RDMAExt names the R_Key of the MR an RDMA op of this message used.
func RDMAExt(rkey uint32) Ext {
	e := Ext{Type: ExtRDMA}
	binary.BigEndian.PutUint32(e.body[:], rkey)
	return e
}

// RDMADestExt names the destination of an RDMA the receiver may perform.
func RDMADestExt(rkey, offset uint32) Ext {
	e := Ext{Type: ExtRDMADest}
	binary.BigEndian.PutUint32(e.body[:], rkey)
	binary.BigEndian.PutUint32(e.body[4:], offset)
	return e
}

// RDMABytesExt tells the peer how many bytes an RDMA op moved.
func RDMABytesExt(n uint32, dir uint8) Ext {
	e := Ext{Type: ExtRDMABytes}
	binary.BigEndian.PutUint32(e.body[:], n)
	e.body[4] = dir
	return e
}

// MaxRDMAAddr is the largest address an RDMA_ADDR extension carries.
const MaxRDMAAddr = 1<<48 - 1

// RDMAAddrExt announces the address of an MR's first byte (at most
// MaxRDMAAddr; higher bits are dropped).
func RDMAAddrExt(addr uint64) Ext {
	e := Ext{Type: ExtRDMAAddr}
	binary.BigEndian.PutUint16(e.body[:], uint16(addr>>32))
	binary.BigEndian.PutUint32(e.body[2:], uint32(addr))
	return e
}

// RDMAAddr returns the address of an RDMA_ADDR extension.
func (e Ext) RDMAAddr() (addr uint64, ok bool) {
	if e.Type != ExtRDMAAddr {
		return 0, false
	}
	return uint64(binary.BigEndian.Uint16(e.body[:]))<<32 | uint64(binary.BigEndian.Uint32(e.body[2:])), true
}

// NPaths returns the NPATHS body; ok is false for other types.
func (e Ext) NPaths() (n uint16, ok bool) {
	if e.Type != ExtNPaths {
		return 0, false
	}
	return binary.BigEndian.Uint16(e.body[:]), true
}

// GenNum returns the GEN_NUM body; ok is false for other types.
func (e Ext) GenNum() (g uint32, ok bool) {
	if e.Type != ExtGenNum {
		return 0, false
	}
	return binary.BigEndian.Uint32(e.body[:]), true
}

// RKey returns the R_Key of an RDMA or RDMA_DEST extension.
func (e Ext) RKey() (rkey uint32, ok bool) {
	if e.Type != ExtRDMA && e.Type != ExtRDMADest {
		return 0, false
	}
	return binary.BigEndian.Uint32(e.body[:]), true
}

// Offset returns the offset of an RDMA_DEST extension.
func (e Ext) Offset() (off uint32, ok bool) {
	if e.Type != ExtRDMADest {
		return 0, false
	}
	return binary.BigEndian.Uint32(e.body[4:]), true
}

// RDMABytes returns the byte count and direction of an RDMA_BYTES extension.
func (e Ext) RDMABytes() (n uint32, dir uint8, ok bool) {
	if e.Type != ExtRDMABytes {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(e.body[:]), e.body[4], true
}

// Exts iterates over the extension headers of a header's 16-byte area.
//
//	for it := h.Exts(); it.Next(); { e := it.Ext() ... }
type ExtIter struct {
	area []byte
	off  int
	cur  Ext
	err  error
}

// Exts returns an iterator over h's extension headers.
func (h Header) Exts() ExtIter { return ExtIter{area: h.ExtArea()} }

// Next advances to the next extension; false at the end of the list or
// on malformed input (Err tells which).
func (it *ExtIter) Next() bool {
	if it.err != nil {
		return false
	}
	e, n, err := ParseExt(it.area[it.off:])
	if err != nil {
		if err != ErrExtEnd {
			it.err = err
		}
		return false
	}
	it.cur, it.off = e, it.off+n
	return true
}

// Ext returns the current extension.
func (it *ExtIter) Ext() Ext { return it.cur }

// Err returns ErrExtOverflow if the list ran past the area, else nil.
func (it *ExtIter) Err() error { return it.err }

// AddExt appends e after the extensions already in h (mainline's
// rds_find_next_ext_space: several per header, packed, terminated by a
// zero type byte when room remains). Linux 6.1 receivers parse several
// extensions correctly even though 6.1 senders add only one.
func (h Header) AddExt(e Ext) error {
	l := ExtBodyLen(e.Type)
	if e.Type == ExtNone || l == 0 {
		return ErrExtType
	}
	area := h.ExtArea()
	off := 0
	for off < ExtSpace && area[off] != byte(ExtNone) {
		t := ExtType(area[off])
		if t >= ExtMax || ExtBodyLen(t) == 0 {
			return ErrExtType
		}
		off += 1 + ExtBodyLen(t)
	}
	if off+1+l > ExtSpace {
		return ErrExtNoSpace
	}
	area[off] = byte(e.Type)
	copy(area[off+1:], e.body[:l])
	if end := off + 1 + l; end < ExtSpace {
		area[end] = byte(ExtNone)
	}
	return nil
}
