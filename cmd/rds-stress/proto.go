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
//	           (0: none), bit 31 set for an RDMA WRITE into the client's
//	           memory, clear for an RDMA READ from it (--rdma)
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

	stressMagic   = 0x52445374 // "RDSt"
	stressVersion = 1
)

type op uint8

const (
	opHello      op = 1 // client → server base port: bind task sockets
	opHelloReply op = 2 // server → client: status, number of tasks served
	opRequest    op = 3 // client task → server task socket
	opAck        op = 4 // server task socket → client task: the answer
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
	case h.Op() < opHello || h.Op() > opAck:
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
	return int(v &^ rdmaWriteBit), v&rdmaWriteBit != 0
}

// SetRDMA sets a request's RDMA length (< 1<<31) and direction.
func (h stressHdr) SetRDMA(n int, write bool) {
	v := uint32(n)
	if write {
		v |= rdmaWriteBit
	}
	binary.BigEndian.PutUint32(h[offRDMA:], v)
}
