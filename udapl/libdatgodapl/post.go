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
)

// The DTO posts: the consumer's iov is read in place (see lmrIOV) and
// nothing is allocated on the way to the EP.

func postArgs(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET) (*ep.EP, []dat.LMRTriplet, C.DAT_RETURN) {
	_, e, r := epOf(h)
	if r != 0 {
		return nil, nil, r
	}
	if n < 0 || (n > 0 && iov == nil) {
		return nil, nil, code(dat.InvalidParameter, dat.InvalidArg2)
	}
	return e, lmrIOV(iov, n), 0
}

//export gd_ep_post_send
func gd_ep_post_send(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	e, v, r := postArgs(h, n, iov)
	if r != 0 {
		return r
	}
	return ret(e.PostSend(v, dat.DTOCookie(cookie), dat.CompletionFlags(flags)))
}

//export gd_ep_post_send_inv
func gd_ep_post_send_inv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS,
	inv C.DAT_BOOLEAN, ctx C.DAT_RMR_CONTEXT) C.DAT_RETURN {
	e, v, r := postArgs(h, n, iov)
	if r != 0 {
		return r
	}
	if inv == C.DAT_FALSE {
		return ret(e.PostSend(v, dat.DTOCookie(cookie), dat.CompletionFlags(flags)))
	}
	return ret(e.PostSendWithInvalidate(v, dat.DTOCookie(cookie), dat.CompletionFlags(flags), dat.RMRContext(ctx)))
}

//export gd_ep_post_recv
func gd_ep_post_recv(h unsafe.Pointer, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t, flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	e, v, r := postArgs(h, n, iov)
	if r != 0 {
		return r
	}
	return ret(e.PostRecv(v, dat.DTOCookie(cookie), dat.CompletionFlags(flags)))
}

//export gd_ep_post_rdma
func gd_ep_post_rdma(h unsafe.Pointer, write C.int, n C.DAT_COUNT, iov *C.DAT_LMR_TRIPLET, cookie C.uint64_t,
	remote *C.DAT_RMR_TRIPLET, flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	e, v, r := postArgs(h, n, iov)
	if r != 0 {
		return r
	}
	if remote == nil {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	if write != 0 {
		return ret(e.PostRDMAWrite(v, dat.DTOCookie(cookie), *rmrTriplet(remote), dat.CompletionFlags(flags)))
	}
	return ret(e.PostRDMARead(v, dat.DTOCookie(cookie), *rmrTriplet(remote), dat.CompletionFlags(flags)))
}

//export gd_ep_post_rdma_read_to_rmr
func gd_ep_post_rdma_read_to_rmr(h unsafe.Pointer, local *C.DAT_RMR_TRIPLET, cookie C.uint64_t, remote *C.DAT_RMR_TRIPLET,
	flags C.DAT_COMPLETION_FLAGS) C.DAT_RETURN {
	_, e, r := epOf(h)
	if r != 0 {
		return r
	}
	if local == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	if remote == nil {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	return ret(e.PostRDMAReadToRMR(*rmrTriplet(local), dat.DTOCookie(cookie), *rmrTriplet(remote), dat.CompletionFlags(flags)))
}
