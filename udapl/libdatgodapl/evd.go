//go:build udapl && cgo

package main

/*
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"time"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/evd"
)

// waitCtx turns a DAT_TIMEOUT (microseconds, all ones for ever) into the
// context a godapl wait takes; cancel is nil for an infinite wait.
func waitCtx(t C.DAT_TIMEOUT) (context.Context, context.CancelFunc) {
	if t == C.DAT_TIMEOUT_INFINITE {
		return context.Background(), nil
	}
	return context.WithTimeout(context.Background(), time.Duration(t)*time.Microsecond)
}

// connTimeout is a DAT_TIMEOUT as the godapl connect calls take it.
func connTimeout(t C.DAT_TIMEOUT) time.Duration {
	if t == C.DAT_TIMEOUT_INFINITE {
		return 0
	}
	return max(time.Duration(t)*time.Microsecond, time.Microsecond)
}

//export gd_evd_create
func gd_evd_create(h unsafe.Pointer, qlen C.DAT_COUNT, cnoH unsafe.Pointer, flags C.DAT_EVD_FLAGS, out *C.DAT_EVD_HANDLE) C.DAT_RETURN {
	o, r := get(h, dat.HandleTypeIA)
	if r != 0 {
		return r
	}
	cno, r := optional(cnoH, dat.HandleTypeCNO, dat.InvalidHandleCNO)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg5)
	}
	var c *evd.CNO
	if cno != nil {
		c = cno.h.(*evd.CNO)
	}
	e, err := evd.Create(o.ia.ia, int(qlen), c, dat.EVDFlags(flags))
	if err != nil {
		return ret(err)
	}
	eh, r := registerObject(&object{typ: dat.HandleTypeEVD, ia: o.ia, h: e}, false)
	if r != 0 {
		return r
	}
	e.SetWaitSpin(waitSpin)
	*out = C.DAT_EVD_HANDLE(eh)
	return 0
}

// waitSpin is how long dat_evd_wait polls before its C thread sleeps in
// Go: waking that thread is a futex wake and a thread switch, several
// microseconds, where the next completion of a stream of small DTOs is
// mostly nearer (see evd.SetWaitSpin).
const waitSpin = 10 * time.Microsecond

func evdOf(h unsafe.Pointer) (*object, *evd.EVD, C.DAT_RETURN) {
	return getAs[*evd.EVD](h, dat.HandleTypeEVD)
}

//export gd_evd_query
func gd_evd_query(h unsafe.Pointer, mask C.DAT_EVD_PARAM_MASK, p *C.DAT_EVD_PARAM) C.DAT_RETURN {
	o, e, r := evdOf(h)
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
	p.ia_handle = C.DAT_IA_HANDLE(handleOf(o.ia.obj))
	p.evd_qlen = C.DAT_COUNT(q.QLen)
	p.evd_state = C.DAT_EVD_STATE(q.State)
	p.cno_handle = nil
	if q.CNO != nil {
		p.cno_handle = C.DAT_CNO_HANDLE(handleOf(objectOf(q.CNO)))
	}
	p.evd_flags = C.DAT_EVD_FLAGS(q.Flags)
	return 0
}

//export gd_evd_modify_cno
func gd_evd_modify_cno(h, cnoH unsafe.Pointer) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	cno, r := optional(cnoH, dat.HandleTypeCNO, dat.InvalidHandleCNO)
	if r != 0 {
		return r
	}
	var c *evd.CNO
	if cno != nil {
		c = cno.h.(*evd.CNO)
	}
	return ret(e.ModifyCNO(c))
}

//export gd_evd_enable
func gd_evd_enable(h unsafe.Pointer) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	return ret(e.Enable())
}

//export gd_evd_disable
func gd_evd_disable(h unsafe.Pointer) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	return ret(e.Disable())
}

//export gd_evd_set_unwaitable
func gd_evd_set_unwaitable(h unsafe.Pointer) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	return ret(e.SetUnwaitable())
}

//export gd_evd_clear_unwaitable
func gd_evd_clear_unwaitable(h unsafe.Pointer) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	return ret(e.ClearUnwaitable())
}

//export gd_evd_resize
func gd_evd_resize(h unsafe.Pointer, qlen C.DAT_COUNT) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	return ret(e.Resize(int(qlen)))
}

//export gd_evd_free
func gd_evd_free(h unsafe.Pointer) C.DAT_RETURN {
	o, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	if o == o.ia.async {
		// The IA's own async EVD goes with the IA.
		return code(dat.InvalidState, dat.NoSubtype)
	}
	if err := e.Free(); err != nil {
		return ret(err)
	}
	release(o)
	return 0
}

// seData is what a software event carries: the consumer's pointer.
type seData struct{ p unsafe.Pointer }

//export gd_evd_post_se
func gd_evd_post_se(h unsafe.Pointer, ev *C.DAT_EVENT) C.DAT_RETURN {
	_, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	if ev == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	if ev.event_number != C.DAT_SOFTWARE_EVENT {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	return ret(e.PostSE(seData{C.gd_event_se_pointer(ev)}))
}

//export gd_evd_dequeue
func gd_evd_dequeue(h unsafe.Pointer, out *C.DAT_EVENT) C.DAT_RETURN {
	o, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg2)
	}
	var ev dat.Event
	if err := e.DequeueInto(&ev); err != nil {
		return ret(err)
	}
	putEvent(out, &ev, o)
	return 0
}

//export gd_evd_wait
func gd_evd_wait(h unsafe.Pointer, timeout C.DAT_TIMEOUT, threshold C.DAT_COUNT, out *C.DAT_EVENT, nmore *C.DAT_COUNT) C.DAT_RETURN {
	o, e, r := evdOf(h)
	if r != 0 {
		return r
	}
	if out == nil {
		return code(dat.InvalidParameter, dat.InvalidArg4)
	}
	var ev dat.Event
	n, err := waitInto(e, timeout, int(threshold), &ev)
	if err != nil {
		return ret(err)
	}
	putEvent(out, &ev, o)
	if nmore != nil {
		*nmore = C.DAT_COUNT(n)
	}
	return 0
}

// expired is a context that has ended: a wait on it takes what is there
// (or comes within the EVD's spin) and never sleeps.
var expired = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// waitInto is dat_evd_wait. A finite timeout needs a context with a
// deadline, which allocates and starts a timer: it is made only when the
// wait must sleep. A first wait on expired takes an event that is there
// already, as most are in a stream of DTOs, for nothing; one that finds
// none ends with DAT_INTERRUPTED_CALL and nothing taken.
func waitInto(e *evd.EVD, timeout C.DAT_TIMEOUT, threshold int, ev *dat.Event) (int, error) {
	if timeout != C.DAT_TIMEOUT_INFINITE {
		n, err := e.WaitInto(expired, threshold, ev)
		if !errors.Is(err, dat.ErrInterruptedCall) {
			return n, err
		}
	}
	ctx, cancel := waitCtx(timeout)
	n, err := e.WaitInto(ctx, threshold, ev)
	if cancel != nil {
		cancel()
	}
	return n, err
}

// putEvent writes a godapl event into the consumer's DAT_EVENT.
func putEvent(out *C.DAT_EVENT, ev *dat.Event, eo *object) {
	evdH := C.DAT_HANDLE(handleOf(eo))
	ia := eo.ia
	switch ev.Number {
	case dat.DTOCompletionEvent:
		d := &ev.DTO
		C.gd_event_dto(out, C.DAT_DTO_COMPLETION_EVENT, evdH, C.DAT_HANDLE(adopt(d.EP, ia)), C.uint64_t(d.Cookie),
			C.uint32_t(d.Status), C.uint32_t(d.Length), C.uint32_t(d.Op), C.uint32_t(d.RMRContext))
	case dat.RMRBindCompletionEvent:
		d := &ev.RMRBind
		C.gd_event_rmr(out, evdH, C.DAT_HANDLE(adopt(d.RMR, ia)), C.uint64_t(d.Cookie), C.uint32_t(d.Status))
	case dat.ConnectionRequestEvent:
		d := &ev.CR
		sp := adopt(d.SP, ia)
		qual := uint64(d.ConnQual)
		if o := find(sp); o != nil {
			qual = o.qual // as the consumer named it, before portQual
		}
		C.gd_event_cr(out, evdH, C.DAT_HANDLE(sp), &ia.obj.box.local, C.uint64_t(qual), C.DAT_HANDLE(adopt(d.CR, ia)))
	case dat.SoftwareEvent:
		var p unsafe.Pointer
		if s, ok := ev.Software.(seData); ok {
			p = s.p
		}
		C.gd_event_se(out, evdH, p)
	default:
		if ev.Number.Stream() == dat.EVDConnection {
			eh := adopt(ev.Conn.EP, ia)
			var pd unsafe.Pointer
			n := 0
			if o := find(eh); o != nil && o.box != nil && len(ev.Conn.PrivateData) > 0 {
				n = min(len(ev.Conn.PrivateData), C.GD_PRIVATE_DATA_MAX)
				b := unsafe.Slice((*byte)(unsafe.Pointer(&o.box.pd[0])), n)
				copy(b, ev.Conn.PrivateData)
				pd = unsafe.Pointer(&o.box.pd[0])
			}
			C.gd_event_conn(out, C.DAT_EVENT_NUMBER(ev.Number), evdH, C.DAT_HANDLE(eh), C.DAT_COUNT(n), pd)
			return
		}
		C.gd_event_async(out, C.DAT_EVENT_NUMBER(ev.Number), evdH, C.DAT_HANDLE(adopt(ev.Async.Handle, ia)),
			C.DAT_COUNT(ev.Async.Reason))
	}
}
