package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The only protocol of dattest beyond DAT itself is the private data of a
// connection request: the client tells the server how large and how deep
// the connection's buffers must be, and the server answers in its accept
// private data with the RMR triplet of the region the client may RDMA
// Read and Write (dat.RMRTriplet.Encode). A server that cannot serve the
// request rejects it with a one-line reason as private data.
//
// The setup header, big-endian:
//
//	0      4        5        6        8        12       16
//	| magic | version | reserved | size   | depth  |
const (
	setupMagicOffset   = 0
	setupVersionOffset = 4
	setupSizeOffset    = 8
	setupDepthOffset   = 12
	setupHeaderSize    = 16

	setupMagic   = 0x44545354 // "DTST"
	setupVersion = 1
)

// Bounds of a setup request a server accepts.
const (
	maxMsgSize = 64 << 20 // bytes per message
	maxDepth   = 1024     // messages in flight per connection
)

// setupHeader is the connection request's private data.
type setupHeader []byte

func (h setupHeader) magic() uint32  { return binary.BigEndian.Uint32(h[setupMagicOffset:]) }
func (h setupHeader) version() uint8 { return h[setupVersionOffset] }
func (h setupHeader) size() uint32   { return binary.BigEndian.Uint32(h[setupSizeOffset:]) }
func (h setupHeader) depth() uint32  { return binary.BigEndian.Uint32(h[setupDepthOffset:]) }

// setup is a decoded setup header.
type setup struct {
	Size  int // bytes per message and per RDMA slot
	Depth int // messages the client keeps in flight
}

// encode writes s as a setup header.
func (s setup) encode() []byte {
	h := setupHeader(make([]byte, setupHeaderSize))
	binary.BigEndian.PutUint32(h[setupMagicOffset:], setupMagic)
	h[setupVersionOffset] = setupVersion
	binary.BigEndian.PutUint32(h[setupSizeOffset:], uint32(s.Size))
	binary.BigEndian.PutUint32(h[setupDepthOffset:], uint32(s.Depth))
	return h
}

var errNotDattest = errors.New("not a dattest setup request")

// A quit request (dapltest -T Q) is a connection request whose private
// data is quitMagic alone: the server rejects it with quitReply as its
// private data and stops serving.
const (
	quitMagic = "DTSTQUIT"
	quitReply = "dattest server quitting"
)

// isQuit reports whether a connection request's private data asks the
// server to quit.
func isQuit(b []byte) bool {
	return len(b) >= len(quitMagic) && string(b[:len(quitMagic)]) == quitMagic
}

// parseSetup decodes and checks a connection request's private data; the
// error is the reason sent back in the reject.
func parseSetup(b []byte) (setup, error) {
	if len(b) < setupHeaderSize || setupHeader(b).magic() != setupMagic {
		return setup{}, errNotDattest
	}
	h := setupHeader(b)
	if v := h.version(); v != setupVersion {
		return setup{}, fmt.Errorf("setup version %d, server speaks %d", v, setupVersion)
	}
	s := setup{Size: int(h.size()), Depth: int(h.depth())}
	if h.size() == 0 || h.size() > maxMsgSize {
		return setup{}, fmt.Errorf("size %d outside 1..%d", h.size(), maxMsgSize)
	}
	if h.depth() == 0 || h.depth() > maxDepth {
		return setup{}, fmt.Errorf("depth %d outside 1..%d", h.depth(), maxDepth)
	}
	return s, nil
}
