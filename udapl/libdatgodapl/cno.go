//go:build udapl && cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
)

// agent is a DAT_OS_WAIT_PROXY_AGENT kept for cno_query: godapl never
// calls it (its CNO waits are thread waits), it only reports it back.
type agent struct {
	data unsafe.Pointer
	fn   unsafe.Pointer
}

//export gd_cno_create
func gd_cno_create(h unsafe.Pointer, data, fn unsafe.Pointer, out *C.DAT_CNO_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	c, err := evd.CreateCNO(o.ia.ia, agent{data, fn})
	if err != nil {
		return ret(err)
	}
	ch, r := registerObject(&object{typ: dat.HandleTypeCNO, ia: o.ia, h: c}, false)
	if r != 0 {
		return r
	}
	*out = C.DAT_CNO_HANDLE(ch)
	return 0
}

func cnoOf(h unsafe.Pointer) (*object, *evd.CNO, C.DAT_RETURN) {
	return getAs[*evd.CNO](h, dat.HandleTypeCNO)
}

//export gd_cno_modify_agent
func gd_cno_modify_agent(h, data, fn unsafe.Pointer) C.DAT_RETURN {
	_, c, r := cnoOf(h)
	if r != 0 {
		return r
	}
	return ret(c.ModifyAgent(agent{data, fn}))
}

//export gd_cno_query
func gd_cno_query(h unsafe.Pointer, mask C.DAT_CNO_PARAM_MASK, p *C.DAT_CNO_PARAM) C.DAT_RETURN {
	o, c, r := cnoOf(h)
	if r != 0 {
		return r
	}
	if p == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	_, a, err := c.Query()
	if err != nil {
		return ret(err)
	}
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.proxy_type = C.DAT_PROXY_TYPE_AGENT
	ag, _ := a.(agent)
	pa := (*C.DAT_OS_WAIT_PROXY_AGENT)(unsafe.Pointer(&p.proxy))
	pa.instance_data = C.DAT_PVOID(ag.data)
	pa.proxy_agent_func = C.DAT_AGENT_FUNC(ag.fn)
	return 0
}

//export gd_cno_free
func gd_cno_free(h unsafe.Pointer) C.DAT_RETURN {
	o, c, r := cnoOf(h)
	if r != 0 {
		return r
	}
	if err := c.Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

//export gd_cno_wait
func gd_cno_wait(h unsafe.Pointer, timeout C.DAT_TIMEOUT, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	_, c, r := cnoOf(h)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg3)
	}
	ctx, cancel := waitCtx(timeout)
	e, err := c.Wait(ctx)
	if cancel != nil {
		cancel()
	}
	if err != nil {
		return ret(err)
	}
	*out = nil
	if e != nil {
		*out = C.DAT_EVD_HANDLE(handleOf(objectOf(e)))
	}
	return 0
}

//export gd_cno_trigger
func gd_cno_trigger(h unsafe.Pointer, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	_, c, r := cnoOf(h)
	if r != 0 {
		return r
	}
	if err := c.Trigger(); err != nil {
		return ret(err)
	}
	if out != nil {
		*out = nil
	}
	return 0
}
