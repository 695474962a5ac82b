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
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/srq"
)

func epAttrFromC(a *C.DAT_EP_ATTR) dat.EPAttr {
	return dat.EPAttr{
		ServiceType: dat.ServiceType(a.service_type), MaxMessageSize: uint64(a.max_message_size),
		MaxRDMASize: uint64(a.max_rdma_size), QoS: dat.QoS(a.qos),
		RecvCompletionFlags: dat.CompletionFlags(a.recv_completion_flags), RequestCompletionFlags: dat.CompletionFlags(a.request_completion_flags),
		MaxRecvDTOs: int(a.max_recv_dtos), MaxRequestDTOs: int(a.max_request_dtos),
		MaxRecvIOV: int(a.max_recv_iov), MaxRequestIOV: int(a.max_request_iov),
		MaxRDMAReadIn: int(a.max_rdma_read_in), MaxRDMAReadOut: int(a.max_rdma_read_out),
		SRQSoftHW: int(a.srq_soft_hw), MaxRDMAReadIOV: int(a.max_rdma_read_iov), MaxRDMAWriteIOV: int(a.max_rdma_write_iov),
	}
}

func epAttrToC(a *C.DAT_EP_ATTR, g *dat.EPAttr) {
	*a = C.DAT_EP_ATTR{}
	a.service_type = C.DAT_SERVICE_TYPE(g.ServiceType)
	a.max_message_size = C.DAT_SEG_LENGTH(min(g.MaxMessageSize, 0xffffffff))
	a.max_rdma_size = C.DAT_SEG_LENGTH(min(g.MaxRDMASize, 0xffffffff))
	a.qos = C.DAT_QOS(g.QoS)
	a.recv_completion_flags = C.DAT_COMPLETION_FLAGS(g.RecvCompletionFlags)
	a.request_completion_flags = C.DAT_COMPLETION_FLAGS(g.RequestCompletionFlags)
	a.max_recv_dtos = C.DAT_COUNT(g.MaxRecvDTOs)
	a.max_request_dtos = C.DAT_COUNT(g.MaxRequestDTOs)
	a.max_recv_iov = C.DAT_COUNT(g.MaxRecvIOV)
	a.max_request_iov = C.DAT_COUNT(g.MaxRequestIOV)
	a.max_rdma_read_in = C.DAT_COUNT(g.MaxRDMAReadIn)
	a.max_rdma_read_out = C.DAT_COUNT(g.MaxRDMAReadOut)
	a.srq_soft_hw = C.DAT_COUNT(g.SRQSoftHW)
	a.max_rdma_read_iov = C.DAT_COUNT(g.MaxRDMAReadIOV)
	a.max_rdma_write_iov = C.DAT_COUNT(g.MaxRDMAWriteIOV)
}

// defaultReadIOV is the local segments of an RDMA Read of an EP created
// without attributes: godapl's default number of request segments.
const defaultReadIOV = 4

// epArgs resolves ep_create's handles: the PZ and EVDs may be NULL.
type epArgs struct {
	pz              *ia.PZ
	recv, req, conn *evd.EVD
}

func resolveEPArgs(pzH, recvH, reqH, connH unsafe.Pointer) (epArgs, C.DAT_RETURN) {
	var a epArgs
	pzo, r := optional(pzH, dat.HandleTypePZ, dat.InvalidHandlePZ)
	if r != 0 {
		return a, r
	}
	if pzo != nil {
		a.pz = pzo.h.(*ia.PZ)
	}
	for _, x := range [...]struct {
		h   unsafe.Pointer
		sub dat.Subtype
		dst **evd.EVD
	}{{recvH, dat.InvalidHandleEVDRecv, &a.recv}, {reqH, dat.InvalidHandleEVDRequest, &a.req}, {connH, dat.InvalidHandleEVDConn, &a.conn}} {
		o, r := optional(x.h, dat.HandleTypeEVD, x.sub)
		if r != 0 {
			return a, r
		}
		if o != nil {
			*x.dst = o.h.(*evd.EVD)
		}
	}
	return a, 0
}

func createEP(h, pzH, recvH, reqH, connH, srqH unsafe.Pointer, attr *C.DAT_EP_ATTR, out *C.DAT_EP_HANDLE, withSRQ bool) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	a, r := resolveEPArgs(pzH, recvH, reqH, connH)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg7)
	}
	// Without attributes an EP reads into as many local segments as it
	// sends from, as the reference provider's EPs do: consumers (dapltest
	// among them) query a default EP and post multi-segment reads.
	ga := &dat.EPAttr{MaxRDMAReadIOV: defaultReadIOV}
	if attr != nil {
		v := epAttrFromC(attr)
		ga = &v
	}
	var e *ep.EP
	var err error
	if withSRQ {
		so, r := get(srqH, dat.HandleTypeSRQ)
		if r != 0 {
			return r
		}
		e, err = ep.CreateWithSRQ(o.ia.ia, a.pz, a.recv, a.req, a.conn, so.h.(*srq.SRQ), ga)
	} else {
		e, err = ep.Create(o.ia.ia, a.pz, a.recv, a.req, a.conn, ga)
	}
	if err != nil {
		return ret(err)
	}
	eh, r := registerObject(&object{typ: dat.HandleTypeEP, ia: o.ia, h: e}, true)
	if r != 0 {
		return r
	}
	*out = C.DAT_EP_HANDLE(eh)
	return 0
}

//export gd_ep_create
func gd_ep_create(h, pzH, recvH, reqH, connH unsafe.Pointer, attr *C.DAT_EP_ATTR, out *C.DAT_EP_HANDLE) C.DAT_RETURN {
	return createEP(h, pzH, recvH, reqH, connH, nil, attr, out, false)
}

//export gd_ep_create_with_srq
func gd_ep_create_with_srq(h, pzH, recvH, reqH, connH, srqH unsafe.Pointer, attr *C.DAT_EP_ATTR, out *C.DAT_EP_HANDLE) C.DAT_RETURN {
	return createEP(h, pzH, recvH, reqH, connH, srqH, attr, out, true)
}

func epOf(h unsafe.Pointer) (*object, *ep.EP, C.DAT_RETURN) {
	return getAs[*ep.EP](h, dat.HandleTypeEP)
}

//export gd_ep_query
func gd_ep_query(h unsafe.Pointer, mask C.DAT_EP_PARAM_MASK, p *C.DAT_EP_PARAM) C.DAT_RETURN {
	o, e, r := epOf(h)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	q, err := e.Query()
	if err != nil {
		return ret(err)
	}
	*p = C.DAT_EP_PARAM{}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.ep_state = C.DAT_EP_STATE(q.State)
	local := q.Local
	if !local.Addr().IsValid() {
		local = netip.AddrPortFrom(o.ia.ia.Addr(), 0)
	}
	putAddr(&o.box.local, local)
	p.local_ia_address_ptr = (*C.struct_sockaddr)(unsafe.Pointer(&o.box.local))
	p.local_port_qual = C.DAT_PORT_QUAL(local.Port())
	if q.Remote.Addr().IsValid() {
		putAddr(&o.box.remote, q.Remote)
		p.remote_ia_address_ptr = (*C.struct_sockaddr)(unsafe.Pointer(&o.box.remote))
		p.remote_port_qual = C.DAT_PORT_QUAL(q.Remote.Port())
	}
	p.pz_handle = C.DAT_PZ_HANDLE(handleOf(objectOf(q.PZ)))
	p.recv_evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.RecvEVD)))
	p.request_evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.RequestEVD)))
	p.connect_evd_handle = C.DAT_EVD_HANDLE(handleOf(objectOf(q.ConnectEVD)))
	if s := e.SRQ(); s != nil {
		p.srq_handle = C.DAT_SRQ_HANDLE(handleOf(objectOf(s)))
	}
	epAttrToC(&p.ep_attr, &q.Attr)
	return 0
}

//export gd_ep_modify
func gd_ep_modify(h unsafe.Pointer, mask C.DAT_EP_PARAM_MASK, p *C.DAT_EP_PARAM) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	const fixed = C.DAT_EP_FIELD_IA_HANDLE | C.DAT_EP_FIELD_EP_STATE | C.DAT_EP_FIELD_COMM |
		C.DAT_EP_FIELD_LOCAL_IA_ADDRESS_PTR | C.DAT_EP_FIELD_LOCAL_PORT_QUAL |
		C.DAT_EP_FIELD_REMOTE_IA_ADDRESS_PTR | C.DAT_EP_FIELD_REMOTE_PORT_QUAL | C.DAT_EP_FIELD_SRQ_HANDLE
	if mask == 0 || mask&fixed != 0 || mask&^C.DAT_EP_FIELD_ALL != 0 {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	q, err := e.Query()
	if err != nil {
		return ret(err)
	}
	pz, recv, req, conn := q.PZ, q.RecvEVD, q.RequestEVD, q.ConnectEVD
	a, r := resolveEPArgs(unsafe.Pointer(p.pz_handle), unsafe.Pointer(p.recv_evd_handle),
		unsafe.Pointer(p.request_evd_handle), unsafe.Pointer(p.connect_evd_handle))
	if mask&C.DAT_EP_FIELD_PZ_HANDLE != 0 {
		if r != 0 || a.pz == nil {
			return code(dat.InvalidHandle, dat.InvalidHandlePZ)
		}
		pz = a.pz
	}
	for _, x := range [...]struct {
		bit C.DAT_EP_PARAM_MASK
		src *evd.EVD
		dst **evd.EVD
		h   C.DAT_EVD_HANDLE
		sub dat.Subtype
	}{{C.DAT_EP_FIELD_RECV_EVD_HANDLE, a.recv, &recv, p.recv_evd_handle, dat.InvalidHandleEVDRecv},
		{C.DAT_EP_FIELD_REQUEST_EVD_HANDLE, a.req, &req, p.request_evd_handle, dat.InvalidHandleEVDRequest},
		{C.DAT_EP_FIELD_CONNECT_EVD_HANDLE, a.conn, &conn, p.connect_evd_handle, dat.InvalidHandleEVDConn}} {
		if mask&x.bit == 0 {
			continue
		}
		if x.h != nil && x.src == nil {
			return code(dat.InvalidHandle, x.sub)
		}
		*x.dst = x.src
	}
	attr := q.Attr
	if mask&C.DAT_EP_FIELD_EP_ATTR_ALL != 0 {
		n := epAttrFromC(&p.ep_attr)
		set := func(bit C.DAT_EP_PARAM_MASK, f func()) {
			if mask&bit != 0 {
				f()
			}
		}
		set(C.DAT_EP_FIELD_EP_ATTR_SERVICE_TYPE, func() { attr.ServiceType = n.ServiceType })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE, func() { attr.MaxMessageSize = n.MaxMessageSize })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE, func() { attr.MaxRDMASize = n.MaxRDMASize })
		set(C.DAT_EP_FIELD_EP_ATTR_QOS, func() { attr.QoS = n.QoS })
		set(C.DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS, func() { attr.RecvCompletionFlags = n.RecvCompletionFlags })
		set(C.DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS, func() { attr.RequestCompletionFlags = n.RequestCompletionFlags })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS, func() { attr.MaxRecvDTOs = n.MaxRecvDTOs })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS, func() { attr.MaxRequestDTOs = n.MaxRequestDTOs })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV, func() { attr.MaxRecvIOV = n.MaxRecvIOV })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV, func() { attr.MaxRequestIOV = n.MaxRequestIOV })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN, func() { attr.MaxRDMAReadIn = n.MaxRDMAReadIn })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT, func() { attr.MaxRDMAReadOut = n.MaxRDMAReadOut })
		set(C.DAT_EP_FIELD_EP_ATTR_SRQ_SOFT_HW, func() { attr.SRQSoftHW = n.SRQSoftHW })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV, func() { attr.MaxRDMAReadIOV = n.MaxRDMAReadIOV })
		set(C.DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV, func() { attr.MaxRDMAWriteIOV = n.MaxRDMAWriteIOV })
	}
	return ret(e.Modify(pz, recv, req, conn, &attr))
}

//export gd_ep_connect
func gd_ep_connect(h unsafe.Pointer, addr *C.struct_sockaddr, qual C.DAT_CONN_QUAL, timeout C.DAT_TIMEOUT,
	pdLen C.DAT_COUNT, pd unsafe.Pointer, qos C.DAT_QOS, flags C.DAT_CONNECT_FLAGS) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	ap, ok := getAddr(addr)
	if !ok {
		return code(dat.InvalidAddress, dat.InvalidAddressUnsupported)
	}
	data, r := privateData(pdLen, pd, dat.InvalidArg5)
	if r != 0 {
		return r
	}
	return ret(e.Connect(ap.Addr(), portQual(qual), connTimeout(timeout), data, dat.QoS(qos), dat.ConnectFlags(flags)))
}

//export gd_ep_common_connect
func gd_ep_common_connect(h unsafe.Pointer, addr *C.struct_sockaddr, timeout C.DAT_TIMEOUT, pdLen C.DAT_COUNT, pd unsafe.Pointer) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	// The common connect names the peer by its socket address: its port
	// is the connection qualifier of the peer's CSP.
	ap, ok := getAddr(addr)
	if !ok || ap.Port() == 0 {
		return code(dat.InvalidAddress, dat.InvalidAddressUnsupported)
	}
	data, r := privateData(pdLen, pd, dat.InvalidArg4)
	if r != 0 {
		return r
	}
	return ret(e.Connect(ap.Addr(), dat.ConnQual(ap.Port()), connTimeout(timeout), data, dat.QoSBestEffort, dat.ConnectDefault))
}

// privateData copies the consumer's private data (godapl keeps it past
// the call).
func privateData(n C.DAT_COUNT, p unsafe.Pointer, sub dat.Subtype) ([]byte, C.DAT_RETURN) {
	if n < 0 || (n > 0 && p == nil) {
		return nil, code(dat.InvalidParameter, sub)
	}
	if n == 0 {
		return nil, 0
	}
	return C.GoBytes(p, C.int(n)), 0
}

//export gd_ep_dup_connect
func gd_ep_dup_connect(h, dupH unsafe.Pointer, timeout C.DAT_TIMEOUT, pdLen C.DAT_COUNT, pd unsafe.Pointer, qos C.DAT_QOS) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	_, d, r := epOf(dupH)
	if r != 0 {
		return code(dat.InvalidHandle, dat.InvalidHandle2)
	}
	data, r := privateData(pdLen, pd, dat.InvalidArg4)
	if r != 0 {
		return r
	}
	return ret(e.DupConnect(d, connTimeout(timeout), data, dat.QoS(qos)))
}

//export gd_ep_disconnect
func gd_ep_disconnect(h unsafe.Pointer, flags C.DAT_CLOSE_FLAGS) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	if flags != C.DAT_CLOSE_ABRUPT_FLAG && flags != C.DAT_CLOSE_GRACEFUL_FLAG {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	return ret(e.Disconnect(dat.CloseFlags(flags)))
}

//export gd_ep_get_status
func gd_ep_get_status(h unsafe.Pointer, state *C.DAT_EP_STATE, recvIdle, reqIdle *C.DAT_BOOLEAN) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	s, ri, qi, err := e.Status()
	if err != nil {
		return ret(err)
	}
	if state != nil {
		*state = C.DAT_EP_STATE(s)
	}
	if recvIdle != nil {
		*recvIdle = boolC(ri)
	}
	if reqIdle != nil {
		*reqIdle = boolC(qi)
	}
	return 0
}

//export gd_ep_free
func gd_ep_free(h unsafe.Pointer) C.DAT_RETURN {
	o, e, r := epOf(h)
	if r != 0 {
		return r
	}
	if err := e.Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_ep_reset
func gd_ep_reset(h unsafe.Pointer) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	return ret(e.Reset())
}

//export gd_ep_recv_query
func gd_ep_recv_query(h unsafe.Pointer, nbufs, span *C.DAT_COUNT) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	n, s, err := e.RecvQuery()
	if err != nil {
		return ret(err)
	}
	if nbufs != nil {
		*nbufs = C.DAT_COUNT(n)
	}
	if span != nil {
		*span = C.DAT_COUNT(s)
	}
	return 0
}

//export gd_ep_set_watermark
func gd_ep_set_watermark(h unsafe.Pointer, soft, hard C.DAT_COUNT) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	return ret(e.SetWatermark(int(soft), int(hard)))
}
