package rdsdproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Record is one control record: HeaderLen bytes of header, then the
// body. The fields' meaning per Op is in ops.go.
type Record []byte

// Header layout.
const (
	offOp    = 0  // u8
	offFlags = 1  // u8
	offVer   = 2  // u16, Version
	offID    = 4  // u32
	offErr   = 8  // u32, Code
	offAddr  = 12 // [4]byte IPv4
	offPort  = 16 // u16
	offRsvd  = 18 // u16, zero
	offN     = 20 // u32
	offA     = 24 // u64
	offB     = 32 // u64
	offC     = 40 // u64

	// HeaderLen is the size of a record's header.
	HeaderLen = 48
	// MaxBody is the largest body of one record; longer bodies continue
	// in FlagMore records. It keeps each datagram well inside a unix
	// socket's default send buffer.
	MaxBody = 64 << 10
	// MaxRecord is the largest record on the socket.
	MaxRecord = HeaderLen + MaxBody
	// MaxRingRecord is the largest record in a ring, where a message
	// travels in as few records as the ring's own limit allows.
	MaxRingRecord = HeaderLen + MaxMessage
	// MaxMessage bounds the reassembled body of one request or reply:
	// an RDS message (1 MiB) plus its control messages.
	MaxMessage = 1<<20 + 64<<10

	// Version is the protocol version every record carries; 2 hands
	// messages ahead in batches (ahead.go), 3 pushes them (a receive's
	// push flag, the ask, the ack word of the daemon's ring).
	Version = 3
)

// Flags of a record.
const (
	// FlagReply marks the daemon's answer to the request of the same ID.
	FlagReply = 1 << 0
	// FlagMore says the body continues in the next record of this ID.
	FlagMore = 1 << 1

	knownFlags = FlagReply | FlagMore
)

// Errors of Parse and the decoders.
var (
	ErrShort   = errors.New("rdsdproto: record shorter than its header")
	ErrLong    = errors.New("rdsdproto: record longer than MaxRingRecord")
	ErrVersion = errors.New("rdsdproto: unknown protocol version")
	ErrOp      = errors.New("rdsdproto: unknown op")
	ErrFlags   = errors.New("rdsdproto: unknown flags or reserved bits set")
	ErrBody    = errors.New("rdsdproto: malformed body")
)

// Parse checks b as a record and returns it.
func Parse(b []byte) (Record, error) {
	if len(b) < HeaderLen {
		return nil, ErrShort
	}
	if len(b) > MaxRingRecord {
		return nil, ErrLong
	}
	r := Record(b)
	if r.version() != Version {
		return nil, ErrVersion
	}
	if r.Op() == 0 || r.Op() >= opEnd {
		return nil, fmt.Errorf("%w %d", ErrOp, r.Op())
	}
	if r.Flags()&^knownFlags != 0 || binary.LittleEndian.Uint16(r[offRsvd:]) != 0 {
		return nil, ErrFlags
	}
	return r, nil
}

// New returns a record of op and id with a body of n bytes (zeroed
// header), in buf if it has the room.
func New(buf []byte, op Op, id uint32, n int) Record {
	size := HeaderLen + n
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	r := Record(buf[:size])
	clear(r[:HeaderLen])
	r[offOp] = byte(op)
	binary.LittleEndian.PutUint16(r[offVer:], Version)
	binary.LittleEndian.PutUint32(r[offID:], id)
	return r
}

func (r Record) version() uint16 { return binary.LittleEndian.Uint16(r[offVer:]) }

// Op is the request's operation.
func (r Record) Op() Op { return Op(r[offOp]) }

// Flags are the record's flags (FlagReply, FlagMore).
func (r Record) Flags() uint8 { return r[offFlags] }

// SetFlags sets the record's flags.
func (r Record) SetFlags(f uint8) { r[offFlags] = f }

// ID names the request a reply answers.
func (r Record) ID() uint32 { return binary.LittleEndian.Uint32(r[offID:]) }

// Code is a reply's outcome (CodeOK, an errno, or a Code* constant).
func (r Record) Code() Code { return Code(binary.LittleEndian.Uint32(r[offErr:])) }

// SetCode sets the reply's outcome.
func (r Record) SetCode(c Code) { binary.LittleEndian.PutUint32(r[offErr:], uint32(c)) }

// AddrPort is the record's RDS address (bind, destination, sender).
func (r Record) AddrPort() netip.AddrPort {
	a := netip.AddrFrom4([4]byte(r[offAddr : offAddr+4]))
	return netip.AddrPortFrom(a, binary.LittleEndian.Uint16(r[offPort:]))
}

// SetAddrPort stores an IPv4 RDS address; any other address is stored
// as 0.0.0.0, which every user of the field refuses.
func (r Record) SetAddrPort(a netip.AddrPort) {
	var ip [4]byte
	if u := a.Addr().Unmap(); u.Is4() {
		ip = u.As4()
	}
	copy(r[offAddr:], ip[:])
	binary.LittleEndian.PutUint16(r[offPort:], a.Port())
}

// N, A, B and C are the op's integer arguments or results.
func (r Record) N() uint32 { return binary.LittleEndian.Uint32(r[offN:]) }
func (r Record) A() uint64 { return binary.LittleEndian.Uint64(r[offA:]) }
func (r Record) B() uint64 { return binary.LittleEndian.Uint64(r[offB:]) }
func (r Record) C() uint64 { return binary.LittleEndian.Uint64(r[offC:]) }

func (r Record) SetN(v uint32) { binary.LittleEndian.PutUint32(r[offN:], v) }
func (r Record) SetA(v uint64) { binary.LittleEndian.PutUint64(r[offA:], v) }
func (r Record) SetB(v uint64) { binary.LittleEndian.PutUint64(r[offB:], v) }
func (r Record) SetC(v uint64) { binary.LittleEndian.PutUint64(r[offC:], v) }

// Body is what follows the header.
func (r Record) Body() []byte { return r[HeaderLen:] }
