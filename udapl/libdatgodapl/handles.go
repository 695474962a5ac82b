//go:build udapl && cgo

package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/dat"
)

// The handle slots: C sees the address of a slot, never a Go pointer.
// Their region is mapped once and never unmapped, and a freed slot keeps
// its provider word, so that libdat2 can still dispatch a stale handle to
// us and we answer DAT_INVALID_HANDLE instead of the process crashing. A
// freed slot is reused only after quarantineSlots later frees, so a
// freed handle is recognised as freed for that long.
const (
	slotSize        = int(unsafe.Sizeof(C.struct_gd_slot{}))
	maxSlots        = 1 << 18
	quarantineSlots = 1 << 12
)

// object is the Go side of one C handle.
type object struct {
	typ  dat.HandleType
	idx  uint32
	ia   *iaObj     // the IA it belongs to (itself for an IA)
	h    dat.Handle // the godapl object
	ctx  atomic.Uint64
	box  *C.struct_gd_box // C memory lent to the consumer, or nil
	qual uint64           // a service point's qualifier as the consumer gave it
	kids sync.Map         // for an IA: its live objects (*object -> struct{})
}

var slots struct {
	once   sync.Once
	err    error
	region []byte
	base   uintptr
	table  [maxSlots]atomic.Pointer[object]
	mu     sync.Mutex
	next   uint32
	free   []uint32 // FIFO of released indexes
}

func mapSlots() error {
	slots.once.Do(func() {
		r, err := syscall.Mmap(-1, 0, maxSlots*slotSize, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
		if err != nil {
			slots.err = err
			return
		}
		slots.region, slots.base = r, uintptr(unsafe.Pointer(&r[0]))
	})
	return slots.err
}

// newObject gives o a slot (and a box if withBox) and returns its handle.
func newObject(o *object, withBox bool) (unsafe.Pointer, error) {
	if err := mapSlots(); err != nil {
		return nil, dat.Wrap("handle", dat.InsufficientResources, dat.ResourceMemory, err)
	}
	if withBox {
		o.box = (*C.struct_gd_box)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_gd_box{}))))
		if o.box == nil {
			return nil, dat.NewError("handle", dat.InsufficientResources, dat.ResourceMemory)
		}
	}
	slots.mu.Lock()
	var idx uint32
	switch {
	case len(slots.free) > quarantineSlots:
		idx = slots.free[0]
		slots.free = slots.free[1:]
	case slots.next < maxSlots:
		idx = slots.next
		slots.next++
	case len(slots.free) > 0:
		idx = slots.free[0]
		slots.free = slots.free[1:]
	default:
		slots.mu.Unlock()
		if o.box != nil {
			C.free(unsafe.Pointer(o.box))
			o.box = nil
		}
		return nil, dat.NewError("handle", dat.InsufficientResources, dat.ResourceMemory)
	}
	slots.mu.Unlock()
	o.idx = idx
	s := slotAt(idx)
	s.provider = o.ia.prov
	s.index = C.uint64_t(idx)
	slots.table[idx].Store(o)
	if o.ia != nil && o.ia.obj != o {
		o.ia.obj.kids.Store(o, struct{}{})
	}
	return unsafe.Pointer(s), nil
}

// registerObject gives o, whose godapl object was just created, its
// handle (and a box if withBox) and makes o that object's consumer
// context, by which events and queries find the handle. When no handle
// can be had, the godapl object is freed again: the create fails with
// nothing left behind.
func registerObject(o *object, withBox bool) (unsafe.Pointer, C.DAT_RETURN) {
	p, err := newObject(o, withBox)
	if err != nil {
		if f, ok := o.h.(interface{ Free() error }); ok {
			f.Free()
		}
		return nil, ret(err)
	}
	o.h.SetConsumerContext(o)
	return p, 0
}

func slotAt(idx uint32) *C.struct_gd_slot {
	return (*C.struct_gd_slot)(unsafe.Pointer(&slots.region[int(idx)*slotSize]))
}

// handleOf is the C handle of o (nil for none).
func handleOf(o *object) unsafe.Pointer {
	if o == nil {
		return nil
	}
	return unsafe.Pointer(slotAt(o.idx))
}

// release retires o's slot: later calls with its handle fail as freed.
func release(o *object) {
	if slots.table[o.idx].CompareAndSwap(o, nil) {
		if o.ia != nil && o.ia.obj != o {
			o.ia.obj.kids.Delete(o)
		}
		if o.box != nil {
			C.free(unsafe.Pointer(o.box))
			o.box = nil
		}
		slots.mu.Lock()
		slots.free = append(slots.free, o.idx)
		slots.mu.Unlock()
	}
}

// invalidSub is the DAT_INVALID_HANDLE subtype for a bad handle where one
// of type t was wanted.
var invalidSub = map[dat.HandleType]dat.Subtype{
	dat.HandleTypeIA: dat.InvalidHandleIA, dat.HandleTypeEP: dat.InvalidHandleEP,
	dat.HandleTypeLMR: dat.InvalidHandleLMR, dat.HandleTypeRMR: dat.InvalidHandleRMR,
	dat.HandleTypePZ: dat.InvalidHandlePZ, dat.HandleTypePSP: dat.InvalidHandlePSP,
	dat.HandleTypeRSP: dat.InvalidHandleRSP, dat.HandleTypeCR: dat.InvalidHandleCR,
	dat.HandleTypeCNO: dat.InvalidHandleCNO, dat.HandleTypeEVD: dat.InvalidHandleEVDRequest,
	dat.HandleTypeSRQ: dat.InvalidHandleSRQ, dat.HandleTypeCSP: dat.InvalidHandleCSP,
}

// find resolves a handle from C: anything outside the slot region,
// misaligned, freed or never issued is refused without being read.
func find(h unsafe.Pointer) *object {
	if h == nil || slots.base == 0 {
		return nil
	}
	off := uintptr(h) - slots.base
	if off >= uintptr(maxSlots*slotSize) || off%uintptr(slotSize) != 0 {
		return nil
	}
	return slots.table[off/uintptr(slotSize)].Load()
}

// get resolves h as a handle of type t, or returns the DAT error for it.
func get(h unsafe.Pointer, t dat.HandleType) (*object, C.DAT_RETURN) {
	o := find(h)
	if o == nil || o.typ != t {
		return nil, code(dat.InvalidHandle, invalidSub[t])
	}
	return o, 0
}

// getAs is get for a handle whose Go object is a T: the object and its
// DAT object, or a zero T and the return code.
func getAs[T any](h unsafe.Pointer, t dat.HandleType) (*object, T, C.DAT_RETURN) {
	o, r := get(h, t)
	if r != 0 {
		var zero T
		return nil, zero, r
	}
	return o, o.h.(T), 0
}

// optional resolves h as a handle of type t that may be NULL.
func optional(h unsafe.Pointer, t dat.HandleType, sub dat.Subtype) (*object, C.DAT_RETURN) {
	if h == nil {
		return nil, 0
	}
	o := find(h)
	if o == nil || o.typ != t {
		return nil, code(dat.InvalidHandle, sub)
	}
	return o, 0
}

func code(c dat.Code, s dat.Subtype) C.DAT_RETURN {
	return C.DAT_RETURN((&dat.Error{Code: c, Sub: s}).Return())
}

// ret is the DAT_RETURN of a godapl error.
func ret(err error) C.DAT_RETURN {
	if err == nil {
		return 0
	}
	// godapl returns *dat.Error itself; errors.As, whose target escapes,
	// would allocate on every failed poll of an empty EVD.
	if de, ok := err.(*dat.Error); ok {
		return C.DAT_RETURN(de.Return())
	}
	var de *dat.Error
	if errors.As(err, &de) {
		return C.DAT_RETURN(de.Return())
	}
	return code(dat.InternalError, dat.NoSubtype)
}

// adopt returns the C handle of a godapl object the provider created
// itself (a connection request, an EP a PSP made), giving it a slot the
// first time it reaches C.
var adoptMu sync.Mutex

func adopt(h dat.Handle, ia *iaObj) unsafe.Pointer {
	if h == nil || ia == nil {
		return nil
	}
	if c, _ := h.ConsumerContext(); c != nil {
		if o, ok := c.(*object); ok {
			return handleOf(o)
		}
	}
	adoptMu.Lock()
	defer adoptMu.Unlock()
	if c, _ := h.ConsumerContext(); c != nil {
		if o, ok := c.(*object); ok {
			return handleOf(o)
		}
	}
	t := h.HandleType()
	o := &object{typ: t, ia: ia, h: h}
	p, err := newObject(o, t == dat.HandleTypeCR || t == dat.HandleTypeEP)
	if err != nil {
		return nil
	}
	if h.SetConsumerContext(o) != nil {
		release(o)
		return nil
	}
	return p
}

// objectOf is the object behind a godapl object that reached C; a nil
// pointer has none.
func objectOf[P interface {
	comparable
	dat.Handle
}](h P) *object {
	var none P
	if h == none {
		return nil
	}
	c, _ := h.ConsumerContext()
	o, _ := c.(*object)
	return o
}
