package rdsdproto

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Messages handed ahead of a client's receives travel in batches: one
// OpRecv reply with ID 0 whose C counts the messages and whose body is
// that many entries, each an AheadHeaderLen-byte header (AheadEntry)
// and the payload. One record per batch rather than per message spares
// each message a ring record's bookkeeping on both sides.
//
//	0  length u32: payload bytes that follow the header
//	4  IPv4 sender [4]byte
//	8  sender port u16
//	10 reserved u16, zero
const AheadHeaderLen = 12

// AheadEntry is the header of one message of a batch.
type AheadEntry []byte

// Len returns the payload length.
func (e AheadEntry) Len() uint32 { return binary.LittleEndian.Uint32(e[0:4]) }

// From returns the sender.
func (e AheadEntry) From() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(e[4:8])), binary.LittleEndian.Uint16(e[8:10]))
}

// Set fills the header of a message of n bytes from from (an IPv4
// address; any other is stored as 0.0.0.0).
func (e AheadEntry) Set(n int, from netip.AddrPort) {
	binary.LittleEndian.PutUint32(e[0:4], uint32(n))
	var a [4]byte
	if ip := from.Addr().Unmap(); ip.Is4() {
		a = ip.As4()
	}
	copy(e[4:8], a[:])
	binary.LittleEndian.PutUint16(e[8:10], from.Port())
	binary.LittleEndian.PutUint16(e[10:12], 0)
}

// NextAhead splits the first message off a batch's body: its sender,
// its payload (a slice of body) and the rest of the body. A header cut
// short, a length past the body or a reserved field set is ErrBody.
func NextAhead(body []byte) (from netip.AddrPort, data, rest []byte, err error) {
	if len(body) < AheadHeaderLen {
		return netip.AddrPort{}, nil, nil, fmt.Errorf("%w: %d bytes left for a message header", ErrBody, len(body))
	}
	e := AheadEntry(body[:AheadHeaderLen])
	if binary.LittleEndian.Uint16(e[10:12]) != 0 {
		return netip.AddrPort{}, nil, nil, fmt.Errorf("%w: reserved bits of a message header", ErrBody)
	}
	n := uint64(e.Len())
	if n > uint64(len(body)-AheadHeaderLen) {
		return netip.AddrPort{}, nil, nil, fmt.Errorf("%w: message of %d bytes in %d", ErrBody, n, len(body)-AheadHeaderLen)
	}
	end := AheadHeaderLen + int(n)
	return e.From(), body[AheadHeaderLen:end:end], body[end:], nil
}
