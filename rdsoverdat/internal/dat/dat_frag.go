package dat

import (
	"encoding/binary"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Fragment size negotiation. rds_ib moves a message as Sends of at most
// RDS_FRAG_SIZE (4096) payload bytes, each with its own header, work
// request, FPDU and completion on both sides: a 64 KiB message costs 16
// of each. Between two godapl nodes larger fragments cut that cost, so
// each offers the largest fragment it takes, frag_max, in its connection
// private data past my_gen (dat_private.go), and both use the smaller of
// the two offers. A peer that offers none (rds_ib sends 32 bytes, and
// names no generation) gets 4096, and so does one that offers less.
// The sender picks the size when the connection comes up
// (onEstablished); the receiver takes a message's first fragment as its
// size (datFirstFragOK), so it never depends on when it learns the
// peer's private data.

// datFragMax is the largest fragment this transport receives and sends:
// the payload room of its receive buffers and send slots (datSlot).
// Beyond 16 KiB the soft-iWARP provider gained nothing more per 64 KiB
// message while every buffer grows.
const datFragMax = 16 << 10

// putFragOffer writes our frag_max into p.
func putFragOffer(p datPrivate) {
	binary.BigEndian.PutUint32(p[privFragOffset:], datFragMax)
}

// FragOffer is the peer's frag_max, 0 when its private data has none.
func (p datPrivate) FragOffer() uint32 {
	if len(p) < privFragOffset+4 {
		return 0
	}
	return binary.BigEndian.Uint32(p[privFragOffset:])
}

// datFragFor is the fragment size of a connection whose peer sent p.
func datFragFor(p datPrivate) int {
	o := p.FragOffer()
	if p.MyGen() == 0 || o <= wire.FragSize {
		return wire.FragSize
	}
	return int(min(o, datFragMax))
}

// datFirstFragOK reports whether n payload bytes may start a message of
// l bytes: all of it if it fits one fragment of the sender's size, else
// one full fragment of a size the sender may have chosen.
func datFirstFragOK(n, l int) bool {
	if n == l {
		return l <= datFragMax
	}
	return n < l && n >= wire.FragSize && n <= datFragMax
}

// fragOr4K is frag, or RDS_FRAG_SIZE for 0 (an EP that never learnt its
// peer's offer).
func fragOr4K(frag int) int {
	if frag == 0 {
		return wire.FragSize
	}
	return frag
}
