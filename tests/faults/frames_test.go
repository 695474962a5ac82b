package faults

// Hand-built iWARP bytes for the hostile peers: MPA frames (RFC 5044 §7.1,
// with the RFC 6581 IRD/ORD block), FPDUs (§4: length, ULPDU, pad, CRC32c)
// and DDP/RDMAP headers (RFC 5041 §4, RFC 5040 §4), written from the RFCs
// so that what the attacker sends does not come from the library's own
// encoder.

import (
	"encoding/binary"
	"hash/crc32"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

const (
	mpaReqKey = "MPA ID Req Frame"
	mpaHdrLen = 20 // key 16, flags, rev, PD_Length 2
	ddpV1     = 0x01
	rdmapV1   = 0x40 // RV = 1 in the top two bits
)

// RDMAP opcodes (RFC 5040 §4.2).
const (
	opWrite   = 0x0
	opReadReq = 0x1
	opReadRsp = 0x2
	opSend    = 0x3
	opTerm    = 0x7
)

// mpaRequest is an MPA v2 Request: flags, revision and private data.
func mpaRequest(flags, rev byte, pd []byte) []byte {
	b := append([]byte(mpaReqKey), flags, rev, 0, 0)
	binary.BigEndian.PutUint16(b[18:], uint16(len(pd)))
	return append(b, pd...)
}

// goodRequest is a rev 2 Request with enhanced setup and IRD = ORD = 1,
// no CRC, no markers: what the kernel's siw sends.
func goodRequest() []byte {
	return mpaRequest(0x10, 2, []byte{0, 1, 0, 1})
}

// fpdu frames a ULPDU (DDP header onwards) with a zero CRC field (CRC not
// negotiated).
func fpdu(ulpdu []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, 0)
}

// fpduCRC is fpdu with a correct CRC32c.
func fpduCRC(ulpdu []byte) []byte {
	b := fpdu(ulpdu)
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crc32c))
	return b
}

// untagged is an untagged DDP segment carrying an RDMAP message.
func untagged(op byte, qn, msn, mo uint32, payload []byte) []byte {
	b := []byte{0x40 | ddpV1, rdmapV1 | op, 0, 0, 0, 0}
	b = binary.BigEndian.AppendUint32(b, qn)
	b = binary.BigEndian.AppendUint32(b, msn)
	b = binary.BigEndian.AppendUint32(b, mo)
	return append(b, payload...)
}

// tagged is a tagged DDP segment (an RDMA Write or Read Response).
func tagged(op byte, stag uint32, to uint64, payload []byte) []byte {
	b := []byte{0xC0 | ddpV1, rdmapV1 | op}
	b = binary.BigEndian.AppendUint32(b, stag)
	b = binary.BigEndian.AppendUint64(b, to)
	return append(b, payload...)
}

// readRequest is an RDMA Read Request for size bytes of (srcSTag, srcTO).
func readRequest(msn uint32, size uint32, srcSTag uint32, srcTO uint64) []byte {
	p := binary.BigEndian.AppendUint32(nil, 0x1234) // sink STag
	p = binary.BigEndian.AppendUint64(p, 0)         // sink TO
	p = binary.BigEndian.AppendUint32(p, size)
	p = binary.BigEndian.AppendUint32(p, srcSTag)
	p = binary.BigEndian.AppendUint64(p, srcTO)
	return untagged(opReadReq, 1, msn, 0, p)
}
