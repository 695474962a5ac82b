package rdsdproto

import (
	"encoding/binary"
	"fmt"
)

// Control messages travel in a body as a sequence of entries: type
// (u32, the SOL_RDS cmsg type), length of the value (u32), the value.
// Values:
//   - CongUpdate, RDMADest: u64;
//   - RDMANotify: token u64, status u32;
//   - RDMAMap: flags u64, one Mem;
//   - RDMAArgs: cookie, remote address, remote bytes, flags, token (u64
//     each), then Mems of the local buffers;
//   - any other type: empty (the daemon refuses it as unknown).
//
// A Mem names memory: a shared region (ID, offset, length) or, with
// region 0, memory the daemon cannot see, of which only the length
// travels (so that the daemon checks everything else first, then
// refuses it).
const (
	cmsgHdrLen = 8
	// MemLen is the size of an encoded Mem.
	MemLen = 24
)

// Mem is a range of a shared region (Region 0: not shared).
type Mem struct {
	Region uint64
	Off    uint64
	Len    uint64
}

// PutMem encodes m at b[0:MemLen].
func PutMem(b []byte, m Mem) {
	binary.LittleEndian.PutUint64(b, m.Region)
	binary.LittleEndian.PutUint64(b[8:], m.Off)
	binary.LittleEndian.PutUint64(b[16:], m.Len)
}

// GetMem decodes a Mem.
func GetMem(b []byte) (Mem, error) {
	if len(b) < MemLen {
		return Mem{}, ErrBody
	}
	m := Mem{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])}
	if m.Len > MaxMessage || m.Off > 1<<48 {
		return Mem{}, fmt.Errorf("%w: memory range %d+%d", ErrBody, m.Off, m.Len)
	}
	return m, nil
}

// AppendCmsg appends one control message entry.
func AppendCmsg(b []byte, typ uint32, value []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(value)))
	return append(b, value...)
}

// Cmsgs iterates over encoded control messages.
type Cmsgs []byte

// Next returns the first entry and the rest; ok false at the end. A
// malformed sequence returns ErrBody.
func (c Cmsgs) Next() (typ uint32, value []byte, rest Cmsgs, ok bool, err error) {
	if len(c) == 0 {
		return 0, nil, nil, false, nil
	}
	if len(c) < cmsgHdrLen {
		return 0, nil, nil, false, ErrBody
	}
	typ = binary.LittleEndian.Uint32(c)
	n := binary.LittleEndian.Uint32(c[4:])
	if uint64(n) > uint64(len(c)-cmsgHdrLen) {
		return 0, nil, nil, false, ErrBody
	}
	return typ, c[cmsgHdrLen : cmsgHdrLen+int(n)], c[cmsgHdrLen+int(n):], true, nil
}

// U64 reads the i-th u64 of a value.
func U64(v []byte, i int) (uint64, error) {
	if len(v) < 8*(i+1) {
		return 0, ErrBody
	}
	return binary.LittleEndian.Uint64(v[8*i:]), nil
}

// Args is the fixed part of an RDMAArgs value; Mems of the local
// buffers follow it.
type Args struct {
	Cookie, RemoteAddr, RemoteBytes, Flags, Token uint64
}

// ArgsLen is the size of an encoded Args.
const ArgsLen = 40

// AppendArgs appends a's encoding and the Mems of its local buffers.
func AppendArgs(b []byte, a Args, local []Mem) []byte {
	for _, v := range []uint64{a.Cookie, a.RemoteAddr, a.RemoteBytes, a.Flags, a.Token} {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	for _, m := range local {
		var e [MemLen]byte
		PutMem(e[:], m)
		b = append(b, e[:]...)
	}
	return b
}

// MaxLocal bounds the local buffers of one RDMAArgs (UIO_MAXIOV).
const MaxLocal = 1024

// DecodeArgs decodes an RDMAArgs value.
func DecodeArgs(v []byte) (Args, []Mem, error) {
	if len(v) < ArgsLen || (len(v)-ArgsLen)%MemLen != 0 || (len(v)-ArgsLen)/MemLen > MaxLocal {
		return Args{}, nil, ErrBody
	}
	le := binary.LittleEndian
	a := Args{le.Uint64(v), le.Uint64(v[8:]), le.Uint64(v[16:]), le.Uint64(v[24:]), le.Uint64(v[32:])}
	var ms []Mem
	for p := v[ArgsLen:]; len(p) > 0; p = p[MemLen:] {
		m, err := GetMem(p)
		if err != nil {
			return Args{}, nil, err
		}
		ms = append(ms, m)
	}
	return a, ms, nil
}
