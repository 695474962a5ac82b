package rping

import (
	"encoding/binary"
	"strconv"
)

// Protocol constants of rping.c.
const (
	// DefaultPort is rping's rdma_cm port.
	DefaultPort = 7174
	// DefaultSize is the ping size without -S (the man page says 100; the
	// code says 64).
	DefaultSize = 64
	// MinSize is sizeof "2147483647" + sizeof "rdma-ping-%d: " (11 + 15):
	// room for the longest prefix and its terminating zero.
	MinSize = 26
	// MaxSize is RPING_BUFSIZE - 1.
	MaxSize = 65535
	// Backlog is rping's rdma_listen backlog.
	Backlog = 3
	// SQDepth, RQDepth and CQDepth are rping's queue sizes: 16 sends, 2
	// receives, a CQ of twice the send queue.
	SQDepth = 16
	RQDepth = 2
	CQDepth = 2 * SQDepth
)

// Info is struct rping_rdma_info, the only message rping peers send: a
// buffer's address (used as the tagged offset of RDMA requests), its STag
// and the sender's -S size, all big-endian. The server's go-ahead messages
// have the same length and are all zeros.
type Info []byte

// Offsets and length of Info.
const (
	InfoBufOffset  = 0  // 8 bytes: buffer address
	InfoRKeyOffset = 8  // 4 bytes: STag of the buffer's MR
	InfoSizeOffset = 12 // 4 bytes: the sender's -S
	InfoLen        = 16
)

// Buf returns the advertised buffer address.
func (i Info) Buf() uint64 { return binary.BigEndian.Uint64(i[InfoBufOffset:]) }

// RKey returns the advertised STag.
func (i Info) RKey() uint32 { return binary.BigEndian.Uint32(i[InfoRKeyOffset:]) }

// Size returns the advertised size.
func (i Info) Size() uint32 { return binary.BigEndian.Uint32(i[InfoSizeOffset:]) }

// SetBuf sets the advertised buffer address.
func (i Info) SetBuf(v uint64) { binary.BigEndian.PutUint64(i[InfoBufOffset:], v) }

// SetRKey sets the advertised STag.
func (i Info) SetRKey(v uint32) { binary.BigEndian.PutUint32(i[InfoRKeyOffset:], v) }

// SetSize sets the advertised size.
func (i Info) SetSize(v uint32) { binary.BigEndian.PutUint32(i[InfoSizeOffset:], v) }

// The client's fill pattern: printable bytes from 'A' to 'z', wrapping.
const (
	patternFirst = 'A' // 65
	patternLast  = 'z' // 122
)

// FirstStart is the pattern byte of ping 0.
const FirstStart byte = patternFirst

// NextStart returns the pattern byte of the ping after one that started
// with start: each ping starts one further, wrapping from 'z' to 'A'.
func NextStart(start byte) byte {
	if start >= patternLast {
		return patternFirst
	}
	return start + 1
}

// FillPing writes ping number n into buf the way rping's client does: the
// text "rdma-ping-<n>: ", then pattern bytes counting up from start and
// wrapping from 'z' to 'A', and a zero in the last byte, so that the
// buffer is one C string. buf must hold at least MinSize bytes. It does
// not allocate.
func FillPing(buf []byte, n int, start byte) {
	var num [20]byte
	i := copy(buf, "rdma-ping-")
	i += copy(buf[i:], strconv.AppendInt(num[:0], int64(n), 10))
	i += copy(buf[i:], ": ")
	for c := start; i < len(buf); i++ {
		buf[i] = c
		if c++; c > patternLast {
			c = patternFirst
		}
	}
	buf[len(buf)-1] = 0
}

// cString returns b up to its first zero byte, as printf("%s") shows a
// buffer; all of b when it has none.
func cString(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}
