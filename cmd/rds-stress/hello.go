package main

import (
	"encoding/binary"
	"errors"
)

// A hello carries, after its header, the workload both instances run, as
// the real tool's active instance sends its options to the passive one
// ("from this point on both instances exhibit the exact same
// behaviour"). Big-endian:
//
//	0  ack    uint32  answer size of every request (>= hdrLen)
//	4  depth  uint32  requests each task keeps outstanding (1-4096)
//	8  flags  uint32  helloOneWay: the passive side sends no requests;
//	                  helloVerify: payloads carry the -v pattern
//	12 nsizes uint16  request sizes that follow (1-maxTasks); task i uses size i mod nsizes
//	14 (reserved, 0)
//	16 sizes  [nsizes]uint32
type helloParams struct {
	ack    int
	depth  int
	oneway bool
	verify bool
	sizes  []int
}

const (
	helloFixed  = 16
	helloOneWay = 1 << 0
	helloVerify = 1 << 1
	maxDepth    = 4096
)

var errHello = errors.New("rds-stress hello parameters out of range")

// appendHello appends p's encoding to b.
func (p helloParams) append(b []byte) []byte {
	var flags uint32
	if p.oneway {
		flags |= helloOneWay
	}
	if p.verify {
		flags |= helloVerify
	}
	b = binary.BigEndian.AppendUint32(b, uint32(p.ack))
	b = binary.BigEndian.AppendUint32(b, uint32(p.depth))
	b = binary.BigEndian.AppendUint32(b, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(len(p.sizes)))
	b = binary.BigEndian.AppendUint16(b, 0)
	for _, s := range p.sizes {
		b = binary.BigEndian.AppendUint32(b, uint32(s))
	}
	return b
}

// parseHello decodes the parameters after a hello's header: remote
// input, so every field is checked.
func parseHello(b []byte) (helloParams, error) {
	var p helloParams
	if len(b) < helloFixed {
		return p, errHello
	}
	ack, depth := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	flags, n := binary.BigEndian.Uint32(b[8:]), int(binary.BigEndian.Uint16(b[12:]))
	if ack < hdrLen || ack > maxMsg || depth < 1 || depth > maxDepth || flags&^(helloOneWay|helloVerify) != 0 ||
		n < 1 || n > maxTasks || len(b) < helloFixed+4*n {
		return p, errHello
	}
	p = helloParams{ack: int(ack), depth: int(depth), oneway: flags&helloOneWay != 0, verify: flags&helloVerify != 0}
	for i := range n {
		s := binary.BigEndian.Uint32(b[helloFixed+4*i:])
		if s < hdrLen || s > maxMsg {
			return helloParams{}, errHello
		}
		p.sizes = append(p.sizes, int(s))
	}
	return p, nil
}
