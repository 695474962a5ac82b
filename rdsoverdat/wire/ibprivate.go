package wire

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Connection private data of the Linux kernel's RDS over InfiniBand/RoCE
// (rds_rdma, net/rds/ib.h): struct rds_ib_connect_private for IPv4 and
// struct rds6_ib_connect_private for IPv6. The connecting side puts it in
// its rdma_cm connect request, the accepting side in its accept (REP).
// Both forms are the two addresses followed by the same 24-byte common
// part, all big-endian:
//
//	IPv4 (32 bytes)     IPv6 (56 bytes)
//	 0  dp_saddr  be32   0  dp_saddr  [16]  the sender's address
//	 4  dp_daddr  be32  16  dp_daddr  [16]  the receiver's address
//	 8  common          32  common
//
//	common +0   protocol major    u8    3 (4 is accepted, see IBNegotiate)
//	       +1   protocol minor    u8    1
//	       +2   minor mask        be16  IBMinorMask: minors the sender speaks
//	       +4   dp_toss           u8    type of service of the connection
//	       +5   reserved          u8    0
//	       +6   reserved          be16  0
//	       +8   dp_ack_seq        be64  last sequence the sender received
//	       +16  dp_credit         be32  receive credits granted; 0 turns
//	                                    flow control off on both sides
//	       +20  tail padding      [4]   the be64 aligns the C struct to 8
//
// The family is not in the bytes: a receiver knows it from the rdma_cm
// port the request came to (IBPort for IPv4, IB6Port for IPv6). rdma_cm
// hands over its whole private-data area (56 bytes of a REQ after its own
// 36-byte header, 196 of a REP) without the sender's length, so the bytes
// past the struct are not the peer's and the parser ignores them. The
// kernel creates the RDS connection from dp_saddr and dp_daddr, not from
// the addresses rdma_cm saw.
type IBPrivate []byte

// Private data sizes, offsets and values.
const (
	// IBPrivateLen is sizeof(struct rds_ib_connect_private).
	IBPrivateLen = 32
	// IB6PrivateLen is sizeof(struct rds6_ib_connect_private); it fills
	// a REQ's private data completely once rdma_cm's header is in.
	IB6PrivateLen = 56
	// IBPrivateCommonLen is sizeof(struct rds_ib_conn_priv_cmn).
	IBPrivateCommonLen = 24

	ibMajorOffset     = 0
	ibMinorOffset     = 1
	ibMinorMaskOffset = 2
	ibToSOffset       = 4
	ibReservedOffset  = 5 // u8 and be16 reserved: 5..7
	ibAckSeqOffset    = 8
	ibCreditOffset    = 16
	ibPaddingOffset   = 20

	// IBMinorMask is RDS_IB_SUPPORTED_PROTOCOLS, the minor mask every
	// Linux sender puts in: bits 0 and 1.
	IBMinorMask = 0x0003

	// IBPort is the rdma_cm port of IPv4 connections (RDS_PORT); the
	// ServiceID of the request is 0x0106<<16 | port (RDMA_PS_TCP).
	IBPort = RDMAPort
	// IB6Port is RDS_CM_PORT, the rdma_cm port of IPv6 connections (the
	// number RDS/TCP also uses). 18635, registered for RDS too, is unused.
	IB6Port = 16385

	// IBRejectIncompat is RDS_RDMA_REJ_INCOMPAT: the value of the host
	// int a kernel puts in a consumer-defined reject when the protocol
	// version does not fit; a connector that gets a reject value of at
	// most 1 (or none) retries with version 3.1.
	IBRejectIncompat = 1
)

// Protocol versions (RDS_PROTOCOL(major, minor)).
const (
	ProtocolVersion30 = 0x0300
	ProtocolVersion31 = ProtocolVersion // the only one Linux proposes
	ProtocolVersion40 = 0x0400
	ProtocolVersion41 = 0x0401
)

// Errors of ParseIBPrivate, IBNegotiate and EncodeIBPrivate.
var (
	ErrIBPrivateShort   = errors.New("rds ib: connection private data shorter than struct rds_ib_connect_private")
	ErrIBPrivateEmpty   = errors.New("rds ib: connection private data carries no protocol version (major 0)")
	ErrIBPrivateVersion = errors.New("rds ib: peer's RDS protocol version is neither 3.1 nor 4.x with a common minor")
	ErrIBPrivateAddr    = errors.New("rds ib: connection private data names an unspecified or mixed-family address")
)

// ParseIBPrivate returns the private data at the start of b in the IPv4
// form, or the IPv6 form when v6 is set: a view of exactly IBPrivateLen
// or IB6PrivateLen bytes. It refuses data shorter than the struct, a zero
// protocol major (the kernel's mark of empty data) and unspecified
// addresses; the protocol version itself is IBNegotiate's business.
func ParseIBPrivate(b []byte, v6 bool) (IBPrivate, error) {
	n := IBPrivateLen
	if v6 {
		n = IB6PrivateLen
	}
	if len(b) < n {
		return nil, ErrIBPrivateShort
	}
	p := IBPrivate(b[:n])
	if p.Major() == 0 {
		return nil, ErrIBPrivateEmpty
	}
	if p.Saddr().IsUnspecified() || p.Daddr().IsUnspecified() {
		return nil, ErrIBPrivateAddr
	}
	return p, nil
}

// IsV6 reports whether p is the IPv6 form.
func (p IBPrivate) IsV6() bool { return len(p) == IB6PrivateLen }

// Common returns the 24-byte common part (aliasing p).
func (p IBPrivate) Common() []byte { return p[len(p)-IBPrivateCommonLen:] }

func (p IBPrivate) addr(i int) netip.Addr {
	if p.IsV6() {
		return netip.AddrFrom16([16]byte(p[i*16:]))
	}
	return netip.AddrFrom4([4]byte(p[i*4:]))
}

// Saddr is dp_saddr, the sender's address.
func (p IBPrivate) Saddr() netip.Addr { return p.addr(0) }

// Daddr is dp_daddr, the receiver's address.
func (p IBPrivate) Daddr() netip.Addr { return p.addr(1) }

func (p IBPrivate) Major() uint8 { return p.Common()[ibMajorOffset] }
func (p IBPrivate) Minor() uint8 { return p.Common()[ibMinorOffset] }

// Version is RDS_PROTOCOL(major, minor) as the sender proposed it.
func (p IBPrivate) Version() uint16 { return uint16(p.Major())<<8 | uint16(p.Minor()) }

func (p IBPrivate) MinorMask() uint16 {
	return binary.BigEndian.Uint16(p.Common()[ibMinorMaskOffset:])
}

// ToS is dp_toss, the connection's type of service (0 for plain sockets).
func (p IBPrivate) ToS() uint8 { return p.Common()[ibToSOffset] }

// AckSeq is dp_ack_seq: the last sequence number the sender received on
// the previous incarnation of the connection (0: none). The receiver
// frees its sent messages up to it, as if an ack had come.
func (p IBPrivate) AckSeq() Seq { return Seq(binary.BigEndian.Uint64(p.Common()[ibAckSeqOffset:])) }

// Credit is dp_credit: receive buffers the sender has posted for the
// receiver to use. Zero turns credit flow control off for the connection.
func (p IBPrivate) Credit() uint32 { return binary.BigEndian.Uint32(p.Common()[ibCreditOffset:]) }

// Padding returns the 4 bytes of tail padding (aliasing p), which Linux
// sends as zeros and never reads.
func (p IBPrivate) Padding() []byte { return p.Common()[ibPaddingOffset:] }

// IBPrivateFields is a whole private data for EncodeIBPrivate. The
// family of the addresses picks the form: IPv4 and IPv4-mapped IPv6
// addresses give the IPv4 form, as the kernel does.
type IBPrivateFields struct {
	Saddr, Daddr netip.Addr
	Version      uint16 // RDS_PROTOCOL(major, minor): ProtocolVersion31 to talk to Linux
	MinorMask    uint16 // IBMinorMask to talk to Linux
	ToS          uint8
	AckSeq       Seq
	Credit       uint32
}

// EncodeIBPrivate writes f into the start of b and returns the view. b
// must hold IBPrivateLen bytes (IB6PrivateLen for IPv6); reserved bytes
// and padding are zeroed, as rds_ib_cm_fill_conn_param leaves them.
func EncodeIBPrivate(b []byte, f *IBPrivateFields) (IBPrivate, error) {
	s, d := f.Saddr.Unmap(), f.Daddr.Unmap()
	if !s.IsValid() || !d.IsValid() || s.Is4() != d.Is4() || s.IsUnspecified() || d.IsUnspecified() {
		return nil, ErrIBPrivateAddr
	}
	n := IBPrivateLen
	if s.Is6() {
		n = IB6PrivateLen
	}
	if len(b) < n {
		return nil, ErrIBPrivateShort
	}
	p := IBPrivate(b[:n])
	clear(p)
	if s.Is4() {
		a, z := s.As4(), d.As4()
		copy(p[0:], a[:])
		copy(p[4:], z[:])
	} else {
		a, z := s.As16(), d.As16()
		copy(p[0:], a[:])
		copy(p[16:], z[:])
	}
	c := p.Common()
	c[ibMajorOffset] = uint8(f.Version >> 8)
	c[ibMinorOffset] = uint8(f.Version)
	binary.BigEndian.PutUint16(c[ibMinorMaskOffset:], f.MinorMask)
	c[ibToSOffset] = f.ToS
	binary.BigEndian.PutUint64(c[ibAckSeqOffset:], uint64(f.AckSeq))
	binary.BigEndian.PutUint32(c[ibCreditOffset:], f.Credit)
	return p, nil
}

// Decode returns p's fields.
func (p IBPrivate) Decode() IBPrivateFields {
	return IBPrivateFields{Saddr: p.Saddr(), Daddr: p.Daddr(), Version: p.Version(), MinorMask: p.MinorMask(),
		ToS: p.ToS(), AckSeq: p.AckSeq(), Credit: p.Credit()}
}

// IBNegotiate returns the protocol version an accepting Linux 6.1 node
// runs a connection at, given the connector's private data
// (rds_ib_protocol_compatible): major 4 with a minor mask sharing bits
// with IBMinorMask gives 4.0 plus the index of the highest common bit
// (4.1 for Linux's mask), exactly 3.1 gives 3.1, anything else is
// refused with a consumer reject. Linux proposes 3.1 and then runs 3.1,
// whose header-plus-fragment layout is the one rds_rdma implements.
func IBNegotiate(p IBPrivate) (uint16, error) {
	common := p.MinorMask() & IBMinorMask
	switch {
	case p.Major() == 4 && common != 0:
		v := uint16(ProtocolVersion40)
		for common >>= 1; common != 0; common >>= 1 {
			v++
		}
		return v, nil
	case p.Version() == ProtocolVersion31:
		return ProtocolVersion31, nil
	}
	return 0, ErrIBPrivateVersion
}
