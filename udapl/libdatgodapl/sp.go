//go:build udapl && cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"net/netip"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
)

// A CSP (DAT 2.0's common service point) is a PSP whose connection
// qualifier is the port of the address it was created on; its handle
// has the CSP type and remembers the consumer's communicator.
type csp struct {
	*ep.PSP
	comm unsafe.Pointer
}

func (c *csp) HandleType() dat.HandleType { return dat.HandleTypeCSP }

func pspCreate(h unsafe.Pointer, qual C.DAT_CONN_QUAL, any bool, evdH unsafe.Pointer, flags C.DAT_PSP_FLAGS,
	outQual *C.DAT_CONN_QUAL, out *C.DAT_PSP_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	eo, r := get(evdH, dat.HandleTypeEVD)
	if r != 0 {
		return code(dat.InvalidHandle, dat.InvalidHandleEVDCR)
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	if flags != C.DAT_PSP_CONSUMER_FLAG && flags != C.DAT_PSP_PROVIDER_FLAG {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	var p *ep.PSP
	var err error
	if any {
		var q dat.ConnQual
		p, q, err = ep.CreatePSPAny(o.ia.ia, eo.h.(*evd.EVD), dat.PSPFlags(flags))
		if err == nil {
			*outQual = C.DAT_CONN_QUAL(q)
		}
	} else {
		p, err = ep.CreatePSP(o.ia.ia, portQual(qual), eo.h.(*evd.EVD), dat.PSPFlags(flags))
	}
	if err != nil {
		return ret(err)
	}
	po := &object{typ: dat.HandleTypePSP, ia: o.ia, h: p, qual: uint64(qual)}
	if any {
		po.qual = uint64(*outQual)
	}
	ph, r := registerObject(po, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_PSP_HANDLE(ph)
	return 0
}

//export gd_psp_create
func gd_psp_create(h unsafe.Pointer, qual C.DAT_CONN_QUAL, evdH unsafe.Pointer, flags C.DAT_PSP_FLAGS, out *C.DAT_PSP_HANDLE) C.DAT_RETURN {
	return pspCreate(h, qual, false, evdH, flags, nil, out)
}

//export gd_psp_create_any
func gd_psp_create_any(h unsafe.Pointer, qual *C.DAT_CONN_QUAL, evdH unsafe.Pointer, flags C.DAT_PSP_FLAGS, out *C.DAT_PSP_HANDLE) C.DAT_RETURN {
	if qual == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	return pspCreate(h, 0, true, evdH, flags, qual, out)
}

//export gd_psp_query
func gd_psp_query(h unsafe.Pointer, mask C.DAT_PSP_PARAM_MASK, p *C.DAT_PSP_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypePSP)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := o.h.(*ep.PSP).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.conn_qual = C.DAT_CONN_QUAL(o.qual)
	p.evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.EVD)))
	p.psp_flags = C.DAT_PSP_FLAGS(q.Flags)
	return 0
}

//export gd_psp_free
func gd_psp_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypePSP)
	if r != 0 {
		return r
	}
	if err := o.h.(*ep.PSP).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_rsp_create
func gd_rsp_create(h unsafe.Pointer, qual C.DAT_CONN_QUAL, epH, evdH unsafe.Pointer, out *C.DAT_RSP_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	e, r := get(epH, dat.HandleTypeEP)
	if r != 0 {
		return r
	}
	eo, r := get(evdH, dat.HandleTypeEVD)
	if r != 0 {
		return code(dat.InvalidHandle, dat.InvalidHandleEVDCR)
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	s, err := ep.CreateRSP(o.ia.ia, portQual(qual), e.h.(*ep.EP), eo.h.(*evd.EVD))
	if err != nil {
		return ret(err)
	}
	so := &object{typ: dat.HandleTypeRSP, ia: o.ia, h: s, qual: uint64(qual)}
	sh, r := registerObject(so, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_RSP_HANDLE(sh)
	return 0
}

//export gd_rsp_query
func gd_rsp_query(h unsafe.Pointer, mask C.DAT_RSP_PARAM_MASK, p *C.DAT_RSP_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeRSP)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := o.h.(*ep.RSP).Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.conn_qual = C.DAT_CONN_QUAL(o.qual)
	p.evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.EVD)))
	p.ep_handle = C.DAT_EP_HANDLE(handleOf(objectOf(q.EP)))
	return 0
}

//export gd_rsp_free
func gd_rsp_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeRSP)
	if r != 0 {
		return r
	}
	if err := o.h.(*ep.RSP).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_csp_create
func gd_csp_create(h unsafe.Pointer, comm unsafe.Pointer, addr *C.struct_sockaddr, evdH unsafe.Pointer, out *C.DAT_CSP_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	ap, ok := getAddr(addr)
	if !ok || (ap.Addr() != o.ia.ia.Addr() && !ap.Addr().IsUnspecified()) {
		return code(dat.InvalidAddress, dat.InvalidAddressUnsupported)
	}
	eo, r := get(evdH, dat.HandleTypeEVD)
	if r != 0 {
		return code(dat.InvalidHandle, dat.InvalidHandleEVDCR)
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	var p *ep.PSP
	var err error
	port := ap.Port()
	if port == 0 {
		var q dat.ConnQual
		p, q, err = ep.CreatePSPAny(o.ia.ia, eo.h.(*evd.EVD), dat.PSPConsumer)
		port = uint16(q)
	} else {
		p, err = ep.CreatePSP(o.ia.ia, dat.ConnQual(port), eo.h.(*evd.EVD), dat.PSPConsumer)
	}
	if err != nil {
		return ret(err)
	}
	c := &csp{PSP: p, comm: comm}
	co := &object{typ: dat.HandleTypeCSP, ia: o.ia, h: c, qual: uint64(port)}
	ch, r := registerObject(co, true)
	if r != 0 {
		return r
	}
	putAddr(&co.box.local, netip.AddrPortFrom(o.ia.ia.Addr(), port))
	*out = C.DAT_CSP_HANDLE(ch)
	return 0
}

//export gd_csp_query
func gd_csp_query(h unsafe.Pointer, mask C.DAT_CSP_PARAM_MASK, p *C.DAT_CSP_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeCSP)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	c := o.h.(*csp)
	q, err := c.Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.comm = (*C.DAT_COMM)(c.comm)
	p.address_ptr = (*C.struct_sockaddr)(unsafe.Pointer(&o.box.local))
	p.evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.EVD)))
	return 0
}

//export gd_csp_free
func gd_csp_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeCSP)
	if r != 0 {
		return r
	}
	if err := o.h.(*csp).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

func crOf(h unsafe.Pointer) (*object, *ep.CR, C.DAT_RETURN) {
	return getAs[*ep.CR](h, dat.HandleTypeCR)
}

//export gd_cr_query
func gd_cr_query(h unsafe.Pointer, mask C.DAT_CR_PARAM_MASK, p *C.DAT_CR_PARAM) C.DAT_RETURN {
	o, c, r := crOf(h)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := c.Query()
	if err != nil {
		return ret(err)
	}
	putAddr(&o.box.remote, q.RemoteAddr)
	n := min(len(q.PrivateData), C.GD_PRIVATE_DATA_MAX)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&o.box.pd[0])), n), q.PrivateData)
	p.remote_ia_address_ptr = (*C.struct_sockaddr)(unsafe.Pointer(&o.box.remote))
	p.remote_port_qual = C.DAT_PORT_QUAL(q.RemoteAddr.Port())
	p.private_data_size = C.DAT_COUNT(n)
	p.private_data = C.DAT_PVOID(unsafe.Pointer(&o.box.pd[0]))
	p.local_ep_handle = nil
	if q.LocalEP != nil {
		p.local_ep_handle = C.DAT_EP_HANDLE(adopt(q.LocalEP, o.ia))
	}
	return 0
}

//export gd_cr_accept
func gd_cr_accept(h, epH unsafe.Pointer, pdLen C.DAT_COUNT, pd unsafe.Pointer) C.DAT_RETURN {
	o, c, r := crOf(h)
	if r != 0 {
		return r
	}
	eo, r := optional(epH, dat.HandleTypeEP, dat.InvalidHandleEP)
	if r != 0 {
		return r
	}
	data, r := privateData(pdLen, pd, dat.InvalidArg4)
	if r != 0 {
		return r
	}
	var e *ep.EP
	if eo != nil {
		e = eo.h.(*ep.EP)
	}
	if err := c.Accept(e, data); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_cr_reject
func gd_cr_reject(h unsafe.Pointer, pdLen C.DAT_COUNT, pd unsafe.Pointer) C.DAT_RETURN {
	o, c, r := crOf(h)
	if r != 0 {
		return r
	}
	data, r := privateData(pdLen, pd, dat.InvalidArg3)
	if r != 0 {
		return r
	}
	if err := c.Reject(data); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_cr_handoff
func gd_cr_handoff(h unsafe.Pointer, qual C.DAT_CONN_QUAL) C.DAT_RETURN {
	o, c, r := crOf(h)
	if r != 0 {
		return r
	}
	if err := c.Handoff(portQual(qual)); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

// portQual folds a connection qualifier into the 16-bit port godapl
// listens on and connects to, the way the reference provider over
// rdma_cm folds it, so that a C program's qualifiers above 0xffff reach
// the same port on either provider.
func portQual(q C.DAT_CONN_QUAL) dat.ConnQual {
	const mod, base = 32001, 65535 - 32001
	if q > 0xffff {
		return dat.ConnQual(q%mod + base)
	}
	return dat.ConnQual(q)
}
