package wire

import (
	"encoding/binary"
	"errors"
)

// RDMA checks: rdsoverdat's own in-band validation of RDMA ops on the
// dat transport (no kernel counterpart). Over iWARP a peer that gets an
// RDMA op on a bad R_Key, outside a mapping's range or against its
// rights terminates the connection, and an RDMA WRITE's own completion
// cannot even report it. So before posting an op, the node that runs it
// asks the node that owns the memory: a check frame carries a request
// record naming the R_Key, address range and direction; the owner checks
// its mapping, holds it for the op if the op may proceed, and answers
// with a status. A bad op then fails with a status while the connection
// stays up. A release record ends the hold of an op that sends no
// message (a silent op, or one that failed locally after its check).
//
// An answer may grant a lease (CheckLease): the whole mapping, named by
// its address and length, in the directions the answer's flags give,
// for every op until the owner revokes it. Ops inside a lease go
// without a check. The owner revokes a lease before it frees the mapping
// (a revoke record); the runner stops using it and answers with a
// revoked record sent after every op it posted under the lease.
//
// A check frame is an RDS header with h_sequence 0, both ports 0,
// h_flags 0, h_len the records' total length and ExtRDMACheck as its
// first extension, followed by whole RDMACheck records. It is no RDS
// message: receivers handle it before reassembly.

// ExtRDMACheck marks a check frame; its body is the check version
// (RDMACheckVersion). rdsoverdat's own, like ExtRDMAAddr.
const ExtRDMACheck ExtType = 14

// RDMACheckVersion is the only version of the check records.
const RDMACheckVersion = 1

// RDMACheckExt is the extension that marks a check frame.
func RDMACheckExt() Ext {
	e := Ext{Type: ExtRDMACheck}
	e.body[0] = RDMACheckVersion
	return e
}

// RDMACheckVersionOf returns the version of an RDMA_CHECK extension.
func (e Ext) RDMACheckVersionOf() (v uint8, ok bool) {
	if e.Type != ExtRDMACheck {
		return 0, false
	}
	return e.body[0], true
}

// RDMACheck is one check record, big-endian:
//
//	 0  kind     u8    a CheckKind
//	 1  flags    u8    CheckWrite: a request's op writes the memory, a
//	                   lease lets ops write; CheckLease: the answer grants one
//	 2  status   u16   an answer's RDS_RDMA_* status (0: go ahead)
//	 4  id       u32   the op's check id, chosen by the node running it
//	 8  rkey     u32   request, lease, revoke, revoked: the mapping's R_Key
//	12  length   u32   request: bytes the op moves; lease: the mapping's
//	16  address  u64   request: address of the first byte, as the op
//	                   names it; lease: the mapping's first byte
//
// Releases use kind and id only, revokes and revokeds kind and rkey.
type RDMACheck []byte

// Record layout.
const (
	CheckKindOffset    = 0
	CheckFlagsOffset   = 1
	CheckStatusOffset  = 2
	CheckIDOffset      = 4
	CheckRKeyOffset    = 8
	CheckLengthOffset  = 12
	CheckAddressOffset = 16
	// RDMACheckLen is the size of one record.
	RDMACheckLen = 24
	// MaxRDMAChecks is the most records one frame carries (one fragment).
	MaxRDMAChecks = FragSize / RDMACheckLen
)

// CheckKind is the kind of a check record.
type CheckKind uint8

// Check record kinds.
const (
	CheckRequest CheckKind = 1 // may this op run? (runner to owner)
	CheckAnswer  CheckKind = 2 // the owner's status for a request
	CheckRelease CheckKind = 3 // the op that was let through is over (runner to owner)
	CheckRevoke  CheckKind = 4 // stop using this lease (owner to runner)
	CheckRevoked CheckKind = 5 // the lease is no longer used (runner to owner)
)

// Record flags.
const (
	CheckWrite = 0x01 // a request's op writes; a lease allows writes
	CheckLease = 0x02 // an answer grants a lease on the whole mapping
)

// CheckFields are the fields of one record.
type CheckFields struct {
	Kind    CheckKind
	Write   bool
	Lease   bool
	Status  uint16
	ID      uint32
	RKey    uint32
	Length  uint32
	Address uint64
}

func (c RDMACheck) Kind() CheckKind { return CheckKind(c[CheckKindOffset]) }
func (c RDMACheck) Write() bool     { return c[CheckFlagsOffset]&CheckWrite != 0 }
func (c RDMACheck) Lease() bool     { return c[CheckFlagsOffset]&CheckLease != 0 }
func (c RDMACheck) Status() uint16  { return binary.BigEndian.Uint16(c[CheckStatusOffset:]) }
func (c RDMACheck) ID() uint32      { return binary.BigEndian.Uint32(c[CheckIDOffset:]) }
func (c RDMACheck) RKey() uint32    { return binary.BigEndian.Uint32(c[CheckRKeyOffset:]) }
func (c RDMACheck) Length() uint32  { return binary.BigEndian.Uint32(c[CheckLengthOffset:]) }
func (c RDMACheck) Address() uint64 { return binary.BigEndian.Uint64(c[CheckAddressOffset:]) }

// Encode writes f into the record's 24 bytes.
func (c RDMACheck) Encode(f *CheckFields) {
	c[CheckKindOffset] = byte(f.Kind)
	c[CheckFlagsOffset] = 0
	if f.Write {
		c[CheckFlagsOffset] |= CheckWrite
	}
	if f.Lease {
		c[CheckFlagsOffset] |= CheckLease
	}
	binary.BigEndian.PutUint16(c[CheckStatusOffset:], f.Status)
	binary.BigEndian.PutUint32(c[CheckIDOffset:], f.ID)
	binary.BigEndian.PutUint32(c[CheckRKeyOffset:], f.RKey)
	binary.BigEndian.PutUint32(c[CheckLengthOffset:], f.Length)
	binary.BigEndian.PutUint64(c[CheckAddressOffset:], f.Address)
}

// Decode returns the record's fields.
func (c RDMACheck) Decode() CheckFields {
	return CheckFields{Kind: c.Kind(), Write: c.Write(), Lease: c.Lease(), Status: c.Status(), ID: c.ID(),
		RKey: c.RKey(), Length: c.Length(), Address: c.Address()}
}

// Errors of ParseRDMAChecks.
var (
	ErrCheckLen     = errors.New("rds: check frame length is not whole records")
	ErrCheckKind    = errors.New("rds: unknown check record kind")
	ErrCheckFlags   = errors.New("rds: reserved check record flags set")
	ErrCheckVersion = errors.New("rds: unknown check frame version")
)

// IsRDMACheckFrame reports whether h heads a check frame: ports 0, no
// flags and ExtRDMACheck first.
func IsRDMACheckFrame(h Header) bool {
	return h.Sport() == 0 && h.Dport() == 0 && h.Flags() == 0 && h.ExtArea()[0] == byte(ExtRDMACheck)
}

// ParseRDMAChecks checks a check frame's header h and records b, which
// must hold exactly h.Len() bytes of whole, well-formed records, and
// returns how many there are; the i-th is b[i*RDMACheckLen:][:RDMACheckLen].
func ParseRDMAChecks(h Header, b []byte) (int, error) {
	it := h.Exts()
	if !it.Next() {
		return 0, ErrCheckVersion
	}
	if v, ok := it.Ext().RDMACheckVersionOf(); !ok || v != RDMACheckVersion {
		return 0, ErrCheckVersion
	}
	if int(h.Len()) != len(b) || len(b)%RDMACheckLen != 0 || len(b) == 0 || len(b) > MaxRDMAChecks*RDMACheckLen {
		return 0, ErrCheckLen
	}
	n := len(b) / RDMACheckLen
	for i := range n {
		c := RDMACheck(b[i*RDMACheckLen : (i+1)*RDMACheckLen])
		if k := c.Kind(); k < CheckRequest || k > CheckRevoked {
			return 0, ErrCheckKind
		}
		if c[CheckFlagsOffset]&^(CheckWrite|CheckLease) != 0 {
			return 0, ErrCheckFlags
		}
	}
	return n, nil
}

// EncodeRDMACheckHeader writes the header of a check frame carrying n
// records into h (h_ack and h_credit as given; the caller checksums).
func EncodeRDMACheckHeader(h Header, n int, ack Seq, credit uint8) {
	h.Encode(&Fields{Ack: ack, Len: uint32(n * RDMACheckLen), Credit: credit})
	_ = h.AddExt(RDMACheckExt()) // 2 bytes into an empty area: always fits
}
