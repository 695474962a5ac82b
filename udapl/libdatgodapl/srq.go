//go:build udapl && cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/srq"
)

//export gd_srq_create
func gd_srq_create(h, pzH unsafe.Pointer, attr *C.DAT_SRQ_ATTR, out *C.DAT_SRQ_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	pzo, r := get(pzH, dat.HandleTypePZ)
	if r != 0 {
		return r
	}
	if attr == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	s, err := srq.Create(o.ia.ia, pzo.h.(*ia.PZ), srq.Attr{MaxRecvDTOs: int(attr.max_recv_dtos),
		MaxRecvIOV: int(attr.max_recv_iov), LowWatermark: int(attr.low_watermark)})
	if err != nil {
		return ret(err)
	}
	sh, r := registerObject(&object{typ: dat.HandleTypeSRQ, ia: o.ia, h: s}, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_SRQ_HANDLE(sh)
	return 0
}

func srqOf(h unsafe.Pointer) (*object, *srq.SRQ, C.DAT_RETURN) {
	return getAs[*srq.SRQ](h, dat.HandleTypeSRQ)
}

//export gd_srq_free
func gd_srq_free(h unsafe.Pointer) C.DAT_RETURN {
	o, s, r := srqOf(h)
	if r != 0 {
		return r
	}
	if err := s.Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_srq_post_recv
func gd_srq_post_recv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t) C.DAT_RETURN {
	_, s, r := srqOf(h)
	if r != 0 {
		return r
	}
	if n < 0 || (n > 0 && iov == nil) {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	return ret(s.PostRecv(lmrIOV(iov, n), dat.DTOCookie(cookie)))
}

//export gd_srq_query
func gd_srq_query(h unsafe.Pointer, mask C.DAT_SRQ_PARAM_MASK, p *C.DAT_SRQ_PARAM) C.DAT_RETURN {
	o, s, r := srqOf(h)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := s.Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.srq_state = C.DAT_SRQ_STATE(q.State)
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(objectOf(q.PZ)))
	p.max_recv_dtos = C.DAT_COUNT(q.MaxRecvDTOs)
	p.max_recv_iov = C.DAT_COUNT(q.MaxRecvIOV)
	p.low_watermark = C.DAT_COUNT(q.LowWatermark)
	p.available_dto_count = C.DAT_COUNT(q.Available)
	p.outstanding_dto_count = C.DAT_COUNT(q.Outstanding)
	return 0
}

//export gd_srq_resize
func gd_srq_resize(h unsafe.Pointer, n C.DAT_COUNT) C.DAT_RETURN {
	_, s, r := srqOf(h)
	if r != 0 {
		return r
	}
	return ret(s.Resize(int(n)))
}

//export gd_srq_set_lw
func gd_srq_set_lw(h unsafe.Pointer, lw C.DAT_COUNT) C.DAT_RETURN {
	_, s, r := srqOf(h)
	if r != 0 {
		return r
	}
	return ret(s.SetLW(int(lw)))
}
