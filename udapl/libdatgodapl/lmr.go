//go:build udapl && cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// Triplets cross as they are: DAT_LMR_TRIPLET and DAT_RMR_TRIPLET have
// the layout of dat.LMRTriplet and dat.RMRTriplet (checked in init), so
// a consumer's iov is read in place.
func init() {
	var c C.DAT_LMR_TRIPLET
	var g dat.LMRTriplet
	if unsafe.Sizeof(c) != unsafe.Sizeof(g) || unsafe.Offsetof(c.segment_length) != unsafe.Offsetof(g.SegmentLength) ||
		unsafe.Offsetof(c.lmr_context) != unsafe.Offsetof(g.LMRContext) {
		panic("libdatgodapl: DAT_LMR_TRIPLET layout differs from dat.LMRTriplet")
	}
	var cr C.DAT_RMR_TRIPLET
	var gr dat.RMRTriplet
	if unsafe.Sizeof(cr) != unsafe.Sizeof(gr) || unsafe.Offsetof(cr.segment_length) != unsafe.Offsetof(gr.SegmentLength) ||
		unsafe.Offsetof(cr.rmr_context) != unsafe.Offsetof(gr.RMRContext) {
		panic("libdatgodapl: DAT_RMR_TRIPLET layout differs from dat.RMRTriplet")
	}
}

func lmrIOV(p *C.DAT_LMR_TRIPLET, n C.DAT_COUNT) []dat.LMRTriplet {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*dat.LMRTriplet)(unsafe.Pointer(p)), int(n))
}

func rmrTriplet(p *C.DAT_RMR_TRIPLET) *dat.RMRTriplet { return (*dat.RMRTriplet)(unsafe.Pointer(p)) }

//export gd_lmr_create
func gd_lmr_create(h unsafe.Pointer, mt C.DAT_MEM_TYPE, region unsafe.Pointer, length C.DAT_VLEN, pzH unsafe.Pointer,
	priv C.DAT_MEM_PRIV_FLAGS, va C.DAT_VA_TYPE, out *C.DAT_LMR_HANDLE, lctx *C.DAT_LMR_CONTEXT,
	rctx *C.DAT_RMR_CONTEXT, rlen *C.DAT_VLEN, raddr *C.DAT_VADDR) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	pzo, r := get(pzH, dat.HandleTypePZ)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg8)
	}
	pz := pzo.h.(*ia.PZ)
	// Local read is always granted, as the reference provider over verbs
	// grants it: C consumers (dtest among them) send from buffers they
	// registered for local write only.
	if priv&^C.DAT_MEM_PRIV_ALL_FLAG == 0 {
		priv |= C.DAT_MEM_PRIV_LOCAL_READ_FLAG
	}
	var l *lmr.LMR
	var err error
	switch mt {
	case C.DAT_MEM_TYPE_VIRTUAL:
		if length == 0 || length > C.DAT_VLEN(maxInt) {
			// An empty or unaddressable region is a length error, the
			// code dapltest's memory tests expect of every provider.
			return code(dat.LengthError, dat.NoSubtype)
		}
		if region == nil {
			return code(dat.InvalidParameter, dat.InvalidArg3)
		}
		// The consumer's memory, registered in place: the soft provider
		// reads and writes it through this slice, which Go never frees.
		buf := unsafe.Slice((*byte)(region), int(length))
		l, err = lmr.Create(o.ia.ia, pz, buf, dat.MemPriv(priv), dat.VAType(va))
	case C.DAT_MEM_TYPE_LMR:
		from, r := get(region, dat.HandleTypeLMR)
		if r != 0 {
			return code(dat.InvalidParameter, dat.InvalidArg3)
		}
		l, err = lmr.CreateFromLMR(o.ia.ia, pz, from.h.(*lmr.LMR), dat.MemPriv(priv))
	default:
		// Shared virtual memory needs memory shared between processes,
		// which the soft providers do not register.
		return code(dat.ModelNotSupported, dat.InvalidArg2)
	}
	if err != nil {
		return ret(err)
	}
	lh, r := registerObject(&object{typ: dat.HandleTypeLMR, ia: o.ia, h: l}, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_LMR_HANDLE(lh)
	if lctx != nil {
		*lctx = C.DAT_LMR_CONTEXT(l.Context())
	}
	if rctx != nil {
		*rctx = C.DAT_RMR_CONTEXT(l.RMRContext())
	}
	if rlen != nil {
		*rlen = C.DAT_VLEN(len(l.Bytes()))
	}
	if raddr != nil {
		*raddr = C.DAT_VADDR(l.Addr())
	}
	return 0
}

const maxInt = int(^uint(0) >> 1)

//export gd_lmr_query
func gd_lmr_query(h unsafe.Pointer, mask C.DAT_LMR_PARAM_MASK, p *C.DAT_LMR_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeLMR)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	l := o.h.(*lmr.LMR)
	q, err := l.Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.mem_type = C.DAT_MEM_TYPE(q.MemType)
	*(*uintptr)(unsafe.Pointer(&p.region_desc)) = uintptr(l.Addr())
	p.length = C.DAT_VLEN(q.Length)
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(objectOf(q.PZ)))
	p.mem_priv = C.DAT_MEM_PRIV_FLAGS(q.Privileges)
	p.va_type = C.DAT_VA_TYPE(q.VAType)
	p.lmr_context = C.DAT_LMR_CONTEXT(q.LMRContext)
	p.rmr_context = C.DAT_RMR_CONTEXT(q.RMRContext)
	p.registered_size = C.DAT_VLEN(q.RegisteredSize)
	p.registered_address = C.DAT_VADDR(q.RegisteredAddress)
	return 0
}

//export gd_lmr_free
func gd_lmr_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeLMR)
	if r != 0 {
		return r
	}
	if err := o.h.(*lmr.LMR).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

func lmrSync(h unsafe.Pointer, iov *C.DAT_LMR_TRIPLET, n C.DAT_VLEN, f func(*ia.IA, []dat.LMRTriplet) error) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if iov == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	if n > 1<<20 {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	return ret(f(o.ia.ia, lmrIOV(iov, C.DAT_COUNT(n))))
}

//export gd_lmr_sync_rdma_read
func gd_lmr_sync_rdma_read(h unsafe.Pointer, iov *C.DAT_LMR_TRIPLET, n C.DAT_VLEN) C.DAT_RETURN {
	return lmrSync(h, iov, n, lmr.SyncRDMARead)
}

//export gd_lmr_sync_rdma_write
func gd_lmr_sync_rdma_write(h unsafe.Pointer, iov *C.DAT_LMR_TRIPLET, n C.DAT_VLEN) C.DAT_RETURN {
	return lmrSync(h, iov, n, lmr.SyncRDMAWrite)
}

//export gd_rmr_create
func gd_rmr_create(pzH unsafe.Pointer, out *C.DAT_RMR_HANDLE) C.DAT_RETURN {
	pzo, r := get(pzH, dat.HandleTypePZ)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	rm, err := lmr.CreateRMR(pzo.h.(*ia.PZ))
	if err != nil {
		return ret(err)
	}
	rh, r := registerObject(&object{typ: dat.HandleTypeRMR, ia: pzo.ia, h: rm}, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_RMR_HANDLE(rh)
	return 0
}

//export gd_rmr_query
func gd_rmr_query(h unsafe.Pointer, mask C.DAT_RMR_PARAM_MASK, p *C.DAT_RMR_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeRMR)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := o.h.(*lmr.RMR).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(objectOf(q.PZ)))
	*(*dat.LMRTriplet)(unsafe.Pointer(&p.lmr_triplet)) = q.LMRTriplet
	p.mem_priv = C.DAT_MEM_PRIV_FLAGS(q.Privileges)
	p.rmr_context = C.DAT_RMR_CONTEXT(q.RMRContext)
	p.rmr_scope = C.DAT_RMR_SCOPE_EP
	p.va_type = C.DAT_VA_TYPE(q.VAType)
	return 0
}

//export gd_rmr_bind
func gd_rmr_bind(h, lmrH unsafe.Pointer, t *C.DAT_LMR_TRIPLET, priv C.DAT_MEM_PRIV_FLAGS, va C.DAT_VA_TYPE,
	epH unsafe.Pointer, cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS, out *C.DAT_RMR_CONTEXT) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeRMR)
	if r != 0 {
		return r
	}
	lo, r := optional(lmrH, dat.HandleTypeLMR, dat.InvalidHandleLMR)
	if r != 0 {
		return r
	}
	eo, r := get(epH, dat.HandleTypeEP)
	if r != 0 {
		return r
	}
	if va != C.DAT_VA_TYPE_VA {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	rm := o.h.(*lmr.RMR)
	e := eo.h.(*ep.EP)
	if lo == nil {
		return ret(rm.Unbind(e, dat.DTOCookie(cookie), dat.CompletionFlags(flags)))
	}
	if t == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	ctx, err := rm.Bind(lo.h.(*lmr.LMR), *(*dat.LMRTriplet)(unsafe.Pointer(t)), dat.MemPriv(priv), e,
		dat.DTOCookie(cookie), dat.CompletionFlags(flags))
	if err != nil {
		return ret(err)
	}
	if out != nil {
		*out = C.DAT_RMR_CONTEXT(ctx)
	}
	return 0
}

//export gd_rmr_free
func gd_rmr_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeRMR)
	if r != 0 {
		return r
	}
	if err := o.h.(*lmr.RMR).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}
