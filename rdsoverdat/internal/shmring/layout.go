package shmring

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// The ring's memfd: one header page, then the data area of Capacity
// bytes (a power of two).
//
// The header words sit on cache lines of their own, each written by one
// side only, so that the producer's stores of wpos and the consumer's of
// rpos do not bounce one line between the cores; the waiting flags
// change only when a side goes to sleep, so reading them on every commit
// or release costs a shared, unmodified line.
//
//	0    magic u32, version u32, capacity u64   (creator, before sharing)
//	64   wpos u64: bytes ever committed          (producer)
//	128  rpos u64: bytes ever released           (consumer)
//	192  consumer waiting u32                    (consumer sets, producer clears)
//	256  producer waiting u32: bytes it needs    (producer sets, consumer clears)
//	320  closed u32                              (either side, once)
//	384  ack u64: the consumer's own count       (consumer; ack.go)
//	448  ack wanted u32                          (producer sets, consumer clears)
//
// wpos and rpos only grow; their difference is the bytes in use and an
// index into the data area is pos & (capacity-1).
const (
	offMagic    = 0
	offVersion  = 4
	offCapacity = 8
	offWpos     = 64
	offRpos     = 128
	offConsWait = 192
	offProdWait = 256
	offClosed   = 320
	offAck      = 384
	offAckWant  = 448
	headerSize  = 4096

	ringMagic   = 0x47525348 // "HSRG" in little-endian memory
	ringVersion = 1

	// MinCapacity and MaxCapacity bound Create's capacity.
	MinCapacity = 4 << 10
	MaxCapacity = 1 << 30
)

// Records are 8-byte aligned and start with an 8-byte header: the
// payload length (u32) and the kind (u32). A record that would run past
// the end of the data area is preceded by a padding record filling the
// rest of it, and starts at index 0; a record never wraps, so a consumer
// hands it out as one slice. A padding record never starts at index 0
// (nothing needs padding there), which bounds a consumer's walk.
const (
	recHeader = 8
	kindData  = 1
	kindPad   = 2
)

// recHdr is a record header in the data area.
type recHdr []byte

func (h recHdr) length() uint32 { return binary.NativeEndian.Uint32(h[0:4]) }
func (h recHdr) kind() uint32   { return binary.NativeEndian.Uint32(h[4:8]) }
func (h recHdr) set(length, kind uint32) {
	binary.NativeEndian.PutUint32(h[0:4], length)
	binary.NativeEndian.PutUint32(h[4:8], kind)
}

// recSize is the bytes a record of n payload bytes occupies.
func recSize(n int) int { return (recHeader + n + 7) &^ 7 }

// shared is the header page as seen by one side.
type shared struct {
	wpos     *atomic.Uint64
	rpos     *atomic.Uint64
	consWait *atomic.Uint32
	prodWait *atomic.Uint32
	closed   *atomic.Uint32
	ack      *atomic.Uint64
	ackWant  *atomic.Uint32
}

func sharedAt(mem []byte) shared {
	return shared{
		wpos:     (*atomic.Uint64)(unsafe.Pointer(&mem[offWpos])),
		rpos:     (*atomic.Uint64)(unsafe.Pointer(&mem[offRpos])),
		consWait: (*atomic.Uint32)(unsafe.Pointer(&mem[offConsWait])),
		prodWait: (*atomic.Uint32)(unsafe.Pointer(&mem[offProdWait])),
		closed:   (*atomic.Uint32)(unsafe.Pointer(&mem[offClosed])),
		ack:      (*atomic.Uint64)(unsafe.Pointer(&mem[offAck])),
		ackWant:  (*atomic.Uint32)(unsafe.Pointer(&mem[offAckWant])),
	}
}
