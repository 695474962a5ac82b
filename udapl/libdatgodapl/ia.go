//go:build udapl && cgo

package main

/*
#include <string.h>
#include <sys/socket.h>
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"net/netip"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
)

// iaObj is one open IA with the C table its handles dispatch through.
type iaObj struct {
	obj   *object
	ia    *ia.IA
	prov  *C.DAT_PROVIDER
	name  string
	async *object
	// threadSafe is what ia_query reports (see registered).
	threadSafe bool
}

// putAddr writes ap into a sockaddr_in of C memory.
func putAddr(sa *C.struct_sockaddr_in, ap netip.AddrPort) {
	C.memset(unsafe.Pointer(sa), 0, C.size_t(unsafe.Sizeof(*sa)))
	sa.sin_family = C.AF_INET
	b := (*[16]byte)(unsafe.Pointer(sa))
	binary.BigEndian.PutUint16(b[2:4], ap.Port())
	a := ap.Addr().Unmap().As4()
	copy(b[4:8], a[:])
}

// getAddr reads an IPv4 (or v4-mapped IPv6) socket address from C.
func getAddr(sa *C.struct_sockaddr) (netip.AddrPort, bool) {
	if sa == nil {
		return netip.AddrPort{}, false
	}
	switch sa.sa_family {
	case C.AF_INET:
		b := (*[8]byte)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4])), true
	case C.AF_INET6:
		b := (*[24]byte)(unsafe.Pointer(sa))
		a := netip.AddrFrom16([16]byte(b[8:24])).Unmap()
		return netip.AddrPortFrom(a, binary.BigEndian.Uint16(b[2:4])), a.Is4()
	}
	return netip.AddrPort{}, false
}

//export gd_ia_open
func gd_ia_open(name *C.char, qlen C.DAT_COUNT, asyncH *C.DAT_EVD_HANDLE, iaH *C.DAT_IA_HANDLE) C.DAT_RETURN {
	if name == nil {
		return code(dat.InvalidParameter, dat.InvalidArg1)
	}
	if iaH == nil {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	if qlen < 0 {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	n := C.GoString(name)
	rg, r, err := lookup(n)
	if err != nil {
		return ret(err)
	}
	i, err := ia.OpenIn(rg, n, int(qlen))
	if err != nil {
		return ret(err)
	}
	io := &iaObj{ia: i, prov: r.prov, name: n, threadSafe: r.threadSafe}
	o := &object{typ: dat.HandleTypeIA, ia: io, h: i}
	io.obj = o
	h, err := newObject(o, true)
	if err != nil {
		i.Close(dat.CloseAbrupt)
		return ret(err)
	}
	putAddr(&o.box.local, netip.AddrPortFrom(i.Addr(), 0))
	a := evd.Async(i)
	io.async = &object{typ: dat.HandleTypeEVD, ia: io, h: a}
	ah, err := newObject(io.async, false)
	if err != nil {
		release(o)
		i.Close(dat.CloseAbrupt)
		return ret(err)
	}
	a.SetConsumerContext(io.async)
	i.SetConsumerContext(o)
	if asyncH != nil {
		*asyncH = C.DAT_EVD_HANDLE(ah)
	}
	*iaH = C.DAT_IA_HANDLE(h)
	return 0
}

//export gd_ia_close
func gd_ia_close(h unsafe.Pointer, flags C.DAT_CLOSE_FLAGS) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if flags != C.DAT_CLOSE_ABRUPT_FLAG && flags != C.DAT_CLOSE_GRACEFUL_FLAG {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	if err := o.ia.ia.Close(dat.CloseFlags(flags)); err != nil {
		return ret(err)
	}
	o.kids.Range(func(k, _ any) bool {
		release(k.(*object))
		return true
	})
	release(o)
	return 0
}

//export gd_ia_query
func gd_ia_query(h unsafe.Pointer, asyncH *C.DAT_EVD_HANDLE, iaMask C.DAT_IA_ATTR_MASK, a *C.DAT_IA_ATTR,
	provMask C.DAT_PROVIDER_ATTR_MASK, p *C.DAT_PROVIDER_ATTR) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if iaMask != 0 && a == nil {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	if provMask != 0 && p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg6)
	}
	ga, gp, err := o.ia.ia.Query()
	if err != nil {
		return ret(err)
	}
	if asyncH != nil {
		*asyncH = C.DAT_EVD_HANDLE(handleOf(o.ia.async))
	}
	if a != nil && iaMask != 0 {
		fillIAAttr(a, &ga, o)
	}
	if p != nil && provMask != 0 {
		fillProviderAttr(p, &gp, o.ia.threadSafe)
	}
	return 0
}

func putName(dst []C.char, s string) {
	n := min(len(s), len(dst)-1)
	for i := 0; i < n; i++ {
		dst[i] = C.char(s[i])
	}
	dst[n] = 0
}

func fillIAAttr(a *C.DAT_IA_ATTR, g *dat.IAAttr, o *object) {
	C.memset(unsafe.Pointer(a), 0, C.size_t(unsafe.Sizeof(*a)))
	putName(a.adapter_name[:], g.AdapterName)
	putName(a.vendor_name[:], g.VendorName)
	a.ia_address_ptr = (*C.struct_sockaddr)(unsafe.Pointer(&o.box.local))
	a.max_eps = C.DAT_COUNT(g.MaxEPs)
	a.max_dto_per_ep = C.DAT_COUNT(g.MaxDTOPerEP)
	a.max_rdma_read_per_ep_in = C.DAT_COUNT(g.MaxRDMAReadPerEPIn)
	a.max_rdma_read_per_ep_out = C.DAT_COUNT(g.MaxRDMAReadPerEPOut)
	a.max_evds = C.DAT_COUNT(g.MaxEVDs)
	a.max_evd_qlen = C.DAT_COUNT(g.MaxEVDQLen)
	a.max_iov_segments_per_dto = C.DAT_COUNT(g.MaxIOVSegmentsPerDTO)
	a.max_lmrs = C.DAT_COUNT(g.MaxLMRs)
	a.max_lmr_block_size = C.DAT_SEG_LENGTH(min(g.MaxLMRBlockSize, 0xffffffff))
	a.max_lmr_virtual_address = C.DAT_VADDR(g.MaxLMRVirtualAddress)
	a.max_pzs = C.DAT_COUNT(g.MaxPZs)
	a.max_message_size = C.DAT_SEG_LENGTH(min(g.MaxMessageSize, 0xffffffff))
	a.max_rdma_size = C.DAT_SEG_LENGTH(min(g.MaxRDMASize, 0xffffffff))
	a.max_rmrs = C.DAT_COUNT(g.MaxRMRs)
	a.max_rmr_target_address = C.DAT_VADDR(g.MaxRMRTargetAddress)
	a.max_srqs = C.DAT_COUNT(g.MaxSRQs)
	a.max_ep_per_srq = C.DAT_COUNT(g.MaxEPPerSRQ)
	a.max_recv_per_srq = C.DAT_COUNT(g.MaxRecvPerSRQ)
	a.max_iov_segments_per_rdma_read = C.DAT_COUNT(g.MaxIOVSegmentsPerRead)
	a.max_iov_segments_per_rdma_write = C.DAT_COUNT(g.MaxIOVSegmentsPerWrite)
	a.max_rdma_read_in = C.DAT_COUNT(g.MaxRDMAReadIn)
	a.max_rdma_read_out = C.DAT_COUNT(g.MaxRDMAReadOut)
	a.max_rdma_read_per_ep_in_guaranteed = C.DAT_TRUE
	a.max_rdma_read_per_ep_out_guaranteed = C.DAT_TRUE
	a.zb_supported = boolC(g.ZBSupported)
	a.extension_supported = C.DAT_EXTENSION_NONE
}

func boolC(b bool) C.DAT_BOOLEAN {
	if b {
		return C.DAT_TRUE
	}
	return C.DAT_FALSE
}

func fillProviderAttr(p *C.DAT_PROVIDER_ATTR, g *dat.ProviderAttr, threadSafe bool) {
	C.memset(unsafe.Pointer(p), 0, C.size_t(unsafe.Sizeof(*p)))
	putName(p.provider_name[:], g.ProviderName)
	p.provider_version_major = C.DAT_UINT32(g.ProviderVersionMajor)
	p.provider_version_minor = C.DAT_UINT32(g.ProviderVersionMinor)
	p.dapl_version_major = C.DAT_UINT32(g.DAPLVersionMajor)
	p.dapl_version_minor = C.DAT_UINT32(g.DAPLVersionMinor)
	p.lmr_mem_types_supported = C.DAT_MEM_TYPE_VIRTUAL | C.DAT_MEM_TYPE_LMR
	p.iov_ownership_on_return = C.DAT_IOV_CONSUMER
	p.dat_qos_supported = C.DAT_QOS_BEST_EFFORT
	p.completion_flags_supported = C.DAT_COMPLETION_FLAGS(g.CompletionFlagsSupported)
	p.is_thread_safe = boolC(threadSafe)
	p.max_private_data_size = C.DAT_COUNT(g.MaxPrivateDataSize)
	p.supports_multipath = boolC(g.SupportsMultipath)
	p.ep_creator = C.DAT_PSP_CREATES_EP_NEVER
	if g.PSPCreatesEP {
		p.ep_creator = C.DAT_PSP_CREATES_EP_IFASKED
	}
	p.pz_support = C.DAT_PZ_UNIQUE
	p.optimal_buffer_alignment = C.DAT_UINT32(g.OptimalBufferAlignment)
	m := (*[36]C.DAT_BOOLEAN)(unsafe.Pointer(&p.evd_stream_merging_supported))
	for i := range m {
		m[i] = C.DAT_TRUE
	}
	p.srq_supported = boolC(g.SRQSupported)
	p.srq_ep_pz_difference_supported = C.DAT_FALSE
	p.lmr_sync_req = boolC(g.LMRSyncRequired)
	p.dto_async_return_guaranteed = C.DAT_FALSE
	p.rdma_write_for_rdma_read_req = C.DAT_FALSE
	p.rdma_read_lmr_rmr_context_exposure = boolC(g.RDMAReadLMRRMRContextExposure)
	p.rmr_scope_supported = C.DAT_RMR_SCOPE_EP
	p.is_signal_safe = C.DAT_FALSE
	p.ha_supported = C.DAT_FALSE
	p.ha_loadbalancing = C.DAT_HA_LB_NONE
	C.gd_fill_provider_specific(p)
}

//export gd_ia_ha_related
func gd_ia_ha_related(h unsafe.Pointer, name *C.char, answer *C.DAT_BOOLEAN) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if name == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	if answer == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	// godapl has no high availability: an IA is related to itself only.
	*answer = boolC(C.GoString(name) == o.ia.name)
	return 0
}

//export gd_pz_create
func gd_pz_create(h unsafe.Pointer, out *C.DAT_PZ_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	pz, err := o.ia.ia.CreatePZ()
	if err != nil {
		return ret(err)
	}
	ph, r := registerObject(&object{typ: dat.HandleTypePZ, ia: o.ia, h: pz}, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_PZ_HANDLE(ph)
	return 0
}

//export gd_pz_query
func gd_pz_query(h unsafe.Pointer, mask C.DAT_PZ_PARAM_MASK, p *C.DAT_PZ_PARAM) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypePZ)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	if _, err := o.h.(*ia.PZ).Query(); err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	return 0
}

//export gd_pz_free
func gd_pz_free(h unsafe.Pointer) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypePZ)
	if r != 0 {
		return r
	}
	if err := o.h.(*ia.PZ).Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_get_handle_type
func gd_get_handle_type(h unsafe.Pointer, t *C.DAT_HANDLE_TYPE) C.DAT_RETURN {
	o := find(h)
	if o == nil {
		return code(dat.InvalidHandle, dat.NoSubtype)
	}
	if t == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	*t = C.DAT_HANDLE_TYPE(o.typ)
	return 0
}

//export gd_set_consumer_context
func gd_set_consumer_context(h unsafe.Pointer, ctx C.uint64_t) C.DAT_RETURN {
	o := find(h)
	if o == nil {
		return code(dat.InvalidHandle, dat.NoSubtype)
	}
	o.ctx.Store(uint64(ctx))
	return 0
}

//export gd_get_consumer_context
func gd_get_consumer_context(h unsafe.Pointer, ctx *C.uint64_t) C.DAT_RETURN {
	o := find(h)
	if o == nil {
		return code(dat.InvalidHandle, dat.NoSubtype)
	}
	if ctx == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	*ctx = C.uint64_t(o.ctx.Load())
	return 0
}
