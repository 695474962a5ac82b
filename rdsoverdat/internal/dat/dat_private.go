package dat

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// datPrivate is the connection private data of the dat transport in the
// layout of the kernel's struct rds_ib_connect_private for IPv4 (ib.h):
// both addresses, then rds_ib_conn_priv_cmn. Its be64 member makes the C
// struct 8-byte aligned, hence 4 bytes of tail padding (32 bytes in all).
// The connecting side sends it with the request, the accepting side with
// the accept.
//
// The padding carries one field of ours, ack_gen: the generation number
// (RDS_EXTHDR_GEN_NUM) of the peer whose sequence space ack_seq counts in.
// rds_ib trusts ack_seq blindly, so a node that restarted and sent a few
// messages before its peer heard of the restart could have them freed by
// the peer's ack of the previous incarnation's numbers, and lose them if
// the connection then failed. With ack_gen the receiver of the private
// data honours ack_seq only when it names its own generation. rds_ib
// writes zeros there, which names no generation: a zero ack_gen costs
// retransmissions (which the receiver drops as duplicates), never loss.
//
// Four bytes past rds_ib's struct carry my_gen, the sender's own
// generation (rds_ib reads the first 32 and ignores the rest), so that a
// node learns that its peer restarted when the connection is set up,
// before its first message. Until then it kept the previous incarnation's
// receive state: the new incarnation's first messages, retransmitted after
// a failed connection, carry numbers below that incarnation's last ones and
// were dropped as duplicates before the probe revealed the restart.
//
// Four more carry frag_max, the largest fragment the sender can receive
// (dat_frag.go): two godapl nodes use larger fragments than rds_ib's.
//
// The last four carry conn_id, the number the sender gave this connection
// (dat_race.go): it tells a request its sender abandoned in a connect
// race from one made after the connection it would replace. Only iWARP
// sends it: on the kernel's wire the kernel's race rule needs none, and
// the private data stays as long as it was before conn_id existed.
type datPrivate []byte

const (
	privSaddrOffset     = 0  // be32 dp_saddr: the sender's address
	privDaddrOffset     = 4  // be32 dp_daddr: the receiver's address
	privMajorOffset     = 8  // u8 ricpc_protocol_major
	privMinorOffset     = 9  // u8 ricpc_protocol_minor
	privMinorMaskOffset = 10 // be16 ricpc_protocol_minor_mask
	privToSOffset       = 12 // u8 ricpc_dp_toss
	privAckSeqOffset    = 16 // be64 ricpc_ack_seq: last sequence received
	privCreditOffset    = 24 // be32 ricpc_credit: receives granted (non-zero: flow control on)
	privAckGenOffset    = 28 // be32 in the tail padding: ack_gen (ours, see above)
	privMyGenOffset     = 32 // be32 past the struct: my_gen (ours, see above)
	privFragOffset      = 36 // be32: frag_max, the largest fragment the sender takes (ours, dat_frag.go)
	privConnIDOffset    = 40 // be32: conn_id, the sender's number for the connection (ours, dat_race.go)
	datPrivateLen       = 44

	// datPrivateLenNoID is what a node sends on the kernel's wire, and
	// what godapl nodes sent before conn_id.
	datPrivateLenNoID = privConnIDOffset

	// datMinorMask is RDS_IB_SUPPORTED_PROTOCOLS: 3.0 and 3.1.
	datMinorMask = 0x0003
)

var (
	errPrivShort   = errors.New("rds dat: connection private data shorter than rds_ib_connect_private")
	errPrivVersion = errors.New("rds dat: peer speaks no RDS protocol version 3.0 or 3.1")
	errPrivCredit  = errors.New("rds dat: peer grants fewer than 2 receive credits")
)

// encodeDatPrivate fills b (datPrivateLen bytes) for a connection from
// saddr, of generation myGen, to daddr; ack counts in the sequence space
// of the peer's generation ackGen (0: unknown). conn_id is left 0 (none)
// for putConnID.
func encodeDatPrivate(b []byte, saddr, daddr netip.Addr, ack wire.Seq, ackGen, myGen, credit uint32) datPrivate {
	p := datPrivate(b[:datPrivateLen])
	clear(p)
	s, d := saddr.As4(), daddr.As4()
	copy(p[privSaddrOffset:], s[:])
	copy(p[privDaddrOffset:], d[:])
	p[privMajorOffset] = wire.ProtocolVersion >> 8
	p[privMinorOffset] = wire.ProtocolVersion & 0xff
	binary.BigEndian.PutUint16(p[privMinorMaskOffset:], datMinorMask)
	binary.BigEndian.PutUint64(p[privAckSeqOffset:], uint64(ack))
	binary.BigEndian.PutUint32(p[privCreditOffset:], credit)
	binary.BigEndian.PutUint32(p[privAckGenOffset:], ackGen)
	binary.BigEndian.PutUint32(p[privMyGenOffset:], myGen)
	putFragOffer(p)
	return p
}

// parseDatPrivate checks the private data a peer sent: long enough,
// protocol major 3 with a minor version both sides support, and flow
// control on (this transport has no RNR retry to fall back on).
func parseDatPrivate(b []byte) (datPrivate, error) {
	if len(b) < privCreditOffset+4 {
		return nil, errPrivShort
	}
	p := datPrivate(b)
	if p.Major() != wire.ProtocolVersion>>8 || p.MinorMask()&datMinorMask == 0 {
		return nil, errPrivVersion
	}
	if p.Credit() < 2 {
		return nil, errPrivCredit
	}
	return p, nil
}

func (p datPrivate) Saddr() netip.Addr { return netip.AddrFrom4([4]byte(p[privSaddrOffset:])) }
func (p datPrivate) Daddr() netip.Addr { return netip.AddrFrom4([4]byte(p[privDaddrOffset:])) }
func (p datPrivate) Major() uint8      { return p[privMajorOffset] }
func (p datPrivate) Minor() uint8      { return p[privMinorOffset] }
func (p datPrivate) MinorMask() uint16 { return binary.BigEndian.Uint16(p[privMinorMaskOffset:]) }
func (p datPrivate) AckSeq() wire.Seq  { return wire.Seq(binary.BigEndian.Uint64(p[privAckSeqOffset:])) }
func (p datPrivate) Credit() uint32    { return binary.BigEndian.Uint32(p[privCreditOffset:]) }

// AckGen is ack_gen, 0 when the peer sent only rds_ib's 28 meaningful bytes.
func (p datPrivate) AckGen() uint32 {
	if len(p) < privAckGenOffset+4 {
		return 0
	}
	return binary.BigEndian.Uint32(p[privAckGenOffset:])
}

// MyGen is my_gen, 0 (none) when the peer sent only rds_ib's struct.
func (p datPrivate) MyGen() uint32 {
	if len(p) < privMyGenOffset+4 {
		return 0
	}
	return binary.BigEndian.Uint32(p[privMyGenOffset:])
}

// ConnID is conn_id, 0 (none) when the peer sent no more than frag_max.
func (p datPrivate) ConnID() uint32 {
	if len(p) < privConnIDOffset+4 {
		return 0
	}
	return binary.BigEndian.Uint32(p[privConnIDOffset:])
}

// putConnID writes conn_id into p (datPrivateLen bytes).
func putConnID(p datPrivate, id uint32) {
	binary.BigEndian.PutUint32(p[privConnIDOffset:], id)
}
