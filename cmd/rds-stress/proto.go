package main

import (
	"encoding/binary"
	"errors"
)

// The rds-stress message header, at the start of every datagram the two
// ends exchange (this tool's own format, big-endian; both ends must run
// the same version). The client says in each request how long the answer
// must be, so the server keeps no per-client state beyond the sockets a
// hello asked for.
//
//	0  magic   uint32  "RDSt"
//	4  version uint8   1
//	5  op      uint8   opHello, opHelloReply, opRequest, opAck
//	6  task    uint16  requests and acks: the client task; hello: the number of tasks
//	8  seq     uint64  request number within its task (echoed); hello: a nonce
//	16 stamp   int64   client's send time in ns since its start (echoed)
//	24 reply   uint32  length the answer must have (>= hdrLen)
//	28 status  uint32  hello reply: 0 ok, else a failure;
//	           request: bytes the server moves by RDMA before answering
//	           (0: none, at most 1 MiB), bit 31 set for an RDMA WRITE into
//	           the client's memory, clear for an RDMA READ from it (-D);
//	           bit 30 set when the payload carries the -v pattern;
//	           answer: the request's field, bit 29 set when the server
//	           found the request's pattern damaged
//
// A hello's seq is a nonce that names the run; the client's goodbye
// (opBye, same nonce) ends it, and the passive instance with it.
type stressHdr []byte

const (
	offMagic   = 0
	offVersion = 4
	offOp      = 5
	offTask    = 6
	offSeq     = 8
	offStamp   = 16
	offReply   = 24
	offStatus  = 28
	offRDMA    = 28 // the status field of a request
	hdrLen     = 32

	rdmaWriteBit = 1 << 31
	verifyBit    = 1 << 30
	corruptBit   = 1 << 29
	rdmaLenMask  = corruptBit - 1

	stressMagic   = 0x52445374 // "RDSt"
	stressVersion = 1
)

type op uint8

const (
	opHello      op = 1 // client → server base port: bind task sockets
	opHelloReply op = 2 // server → client: status, number of tasks served
	opRequest    op = 3 // client task → server task socket
	opAck        op = 4 // server task socket → client task: the answer
	opBye        op = 5 // client → server base port: the run is over
)

var (
	errShort   = errors.New("rds-stress message shorter than its header")
	errMagic   = errors.New("not an rds-stress message (bad magic)")
	errVersion = errors.New("rds-stress protocol version mismatch")
	errOp      = errors.New("unknown rds-stress operation")
	errReply   = errors.New("rds-stress answer length out of range")
)

// parseHdr checks that b starts with a valid header: remote input, so
// every field a receiver acts on is validated here.
func parseHdr(b []byte) (stressHdr, error) {
	if len(b) < hdrLen {
		return nil, errShort
	}
	h := stressHdr(b[:hdrLen])
	switch {
	case binary.BigEndian.Uint32(h[offMagic:]) != stressMagic:
		return nil, errMagic
	case h[offVersion] != stressVersion:
		return nil, errVersion
	case h.Op() < opHello || h.Op() > opBye:
		return nil, errOp
	case h.Reply() < hdrLen || h.Reply() > maxMsg:
		return nil, errReply
	}
	return h, nil
}

// encode writes a full header into h (len >= hdrLen).
func (h stressHdr) encode(o op, task uint16, seq uint64, stamp int64, reply uint32) {
	binary.BigEndian.PutUint32(h[offMagic:], stressMagic)
	h[offVersion] = stressVersion
	h[offOp] = byte(o)
	binary.BigEndian.PutUint16(h[offTask:], task)
	binary.BigEndian.PutUint64(h[offSeq:], seq)
	binary.BigEndian.PutUint64(h[offStamp:], uint64(stamp))
	binary.BigEndian.PutUint32(h[offReply:], reply)
	binary.BigEndian.PutUint32(h[offStatus:], 0)
}

func (h stressHdr) Op() op             { return op(h[offOp]) }
func (h stressHdr) Task() uint16       { return binary.BigEndian.Uint16(h[offTask:]) }
func (h stressHdr) Seq() uint64        { return binary.BigEndian.Uint64(h[offSeq:]) }
func (h stressHdr) Stamp() int64       { return int64(binary.BigEndian.Uint64(h[offStamp:])) }
func (h stressHdr) Reply() uint32      { return binary.BigEndian.Uint32(h[offReply:]) }
func (h stressHdr) Status() uint32     { return binary.BigEndian.Uint32(h[offStatus:]) }
func (h stressHdr) SetOp(o op)         { h[offOp] = byte(o) }
func (h stressHdr) SetStatus(s uint32) { binary.BigEndian.PutUint32(h[offStatus:], s) }

// RDMA returns a request's RDMA length and direction.
func (h stressHdr) RDMA() (n int, write bool) {
	v := binary.BigEndian.Uint32(h[offRDMA:])
	return int(v & rdmaLenMask), v&rdmaWriteBit != 0
}

// SetRDMA sets a request's RDMA length (<= rdmaLenMask) and direction,
// keeping the other bits of the field.
func (h stressHdr) SetRDMA(n int, write bool) {
	v := binary.BigEndian.Uint32(h[offRDMA:])&^(rdmaWriteBit|rdmaLenMask) | uint32(n)&rdmaLenMask
	if write {
		v |= rdmaWriteBit
	}
	binary.BigEndian.PutUint32(h[offRDMA:], v)
}

// flag reports whether bit is set in the status field.
func (h stressHdr) flag(bit uint32) bool { return binary.BigEndian.Uint32(h[offStatus:])&bit != 0 }

// setFlag sets bit in the status field.
func (h stressHdr) setFlag(bit uint32) {
	binary.BigEndian.PutUint32(h[offStatus:], binary.BigEndian.Uint32(h[offStatus:])|bit)
}

// The -v pattern: byte i of a payload (after the header) of message seq.
func patternByte(seq uint64, i int) byte { return byte(uint64(i)*7 + seq) }

// fillPattern writes the -v pattern of message seq into b.
func fillPattern(b []byte, seq uint64) {
	for i := range b {
		b[i] = patternByte(seq, i)
	}
}

// checkPattern returns the offset of the first byte of b that breaks the
// pattern of message seq, or -1.
func checkPattern(b []byte, seq uint64) int {
	for i := range b {
		if b[i] != patternByte(seq, i) {
			return i
		}
	}
	return -1
}
