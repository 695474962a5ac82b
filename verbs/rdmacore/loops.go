//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"fmt"

	"github.com/godapl/godapl/verbs"
)

// A device runs two goroutines, each parked in the network poller on one
// file: its async event file and its rdma_cm event channel. Each takes
// what is pending with a non-blocking library call and hands it to the
// object it names. Completion events have no goroutine: each CQ's waiter
// parks on the CQ's own channel (cq_wait.go).

func (d *Device) startLoops() error {
	var err error
	if d.asyncF, err = newPollFD(int(d.ctx.async_fd), d.name+" async events"); err != nil {
		return err
	}
	d.cmCh = C.rdma_create_event_channel()
	if d.cmCh == nil {
		return fmt.Errorf("rdmacore: rdma_create_event_channel: %w", sentinelOf(errnoOf()))
	}
	if d.cmFD, err = newPollFD(int(d.cmCh.fd), d.name+" rdma_cm events"); err != nil {
		return err
	}
	d.loops.Add(2)
	go d.asyncLoop()
	go d.cmLoop()
	return nil
}

// stopLoops closes the files the loops wait on and waits for them to end.
func (d *Device) stopLoops() {
	for _, p := range []*pollFD{d.asyncF, d.cmFD} {
		if p != nil {
			p.close()
		}
	}
	d.loops.Wait()
}

func (d *Device) asyncLoop() {
	defer d.loops.Done()
	for {
		var ev C.struct_gd_async_event
		var rc C.int
		err := d.asyncF.wait(func() bool {
			rc = C.gd_get_async_event(d.ctx, &ev)
			return rc != 0
		})
		if err != nil || rc < 0 {
			return
		}
		d.asyncEvent(&ev)
	}
}

func (d *Device) asyncEvent(ev *C.struct_gd_async_event) {
	var out verbs.AsyncEvent
	switch ev._type {
	case C.IBV_EVENT_QP_FATAL:
		out.Type = verbs.EventQPFatal
	case C.IBV_EVENT_QP_REQ_ERR:
		out.Type = verbs.EventQPReqErr
	case C.IBV_EVENT_QP_ACCESS_ERR:
		out.Type = verbs.EventQPAccessErr
		d.st.protErrs.Add(1)
	case C.IBV_EVENT_COMM_EST:
		out.Type = verbs.EventCommEstablished
	case C.IBV_EVENT_SQ_DRAINED:
		out.Type = verbs.EventSQDrained
	case C.IBV_EVENT_QP_LAST_WQE_REACHED:
		out.Type = verbs.EventQPLastWQEReached
	case C.IBV_EVENT_CQ_ERR:
		out.Type = verbs.EventCQErr
		d.st.cqOverflows.Add(1)
	case C.IBV_EVENT_SRQ_LIMIT_REACHED:
		out.Type = verbs.EventSRQLimitReached
	case C.IBV_EVENT_SRQ_ERR:
		out.Type = verbs.EventSRQErr
	case C.IBV_EVENT_DEVICE_FATAL:
		out.Type = verbs.EventDeviceFatal
	case C.IBV_EVENT_PORT_ACTIVE:
		out.Type, out.Port = verbs.EventPortActive, int(ev.port)
		d.setPortState(out.Port, PortActive)
	case C.IBV_EVENT_PORT_ERR:
		out.Type, out.Port = verbs.EventPortErr, int(ev.port)
		d.setPortState(out.Port, PortDown)
	default:
		// GID, LID, P_Key and path migration changes have no verbs
		// event type.
		return
	}
	d.mu.Lock()
	switch {
	case ev.qp != nil:
		if q := d.qps[uint32(ev.qpn)]; q != nil {
			out.QP = q
		}
	case ev.cq != nil:
		if c := d.cqs[ev.cq]; c != nil {
			out.CQ = c
		}
	case ev.srq != nil:
		if s := d.srqs[ev.srq]; s != nil {
			out.SRQ = s
		}
	}
	d.mu.Unlock()
	switch out.Type {
	case verbs.EventQPFatal, verbs.EventQPReqErr, verbs.EventQPAccessErr:
		if q, ok := out.QP.(*qp); ok {
			q.setError()
			q.fault(fmt.Errorf("rdmacore: async event %v", out.Type))
		}
		out.Err = verbs.ErrDisconnected
	case verbs.EventCQErr:
		if c, ok := out.CQ.(*cq); ok {
			c.overflowed()
		}
		out.Err = verbs.ErrCQOverflow
	case verbs.EventSRQLimitReached:
		if s, ok := out.SRQ.(*srq); ok {
			s.limitReached()
		}
	}
	d.postEvent(out)
}

// cmOwner is what an rdma_cm id belongs to: a listener, a connection
// being set up or an established connection.
type cmOwner interface {
	cmEvent(ev *cmEvent)
	// shutdown ends the owner when the device closes.
	shutdown()
}

// cmEvent is an rdma_cm event, copied and acknowledged.
type cmEvent struct {
	id, listenID *C.struct_rdma_cm_id
	typ          int
	status       int
	privData     []byte
	respRes      int
	initDepth    int
}

func (d *Device) cmLoop() {
	defer d.loops.Done()
	for {
		var ev C.struct_gd_cm_event
		var rc C.int
		err := d.cmFD.wait(func() bool {
			rc = C.gd_get_cm_event(d.cmCh, &ev)
			return rc != 0
		})
		if err != nil || rc < 0 {
			return
		}
		e := &cmEvent{
			id: ev.id, listenID: ev.listen_id, typ: int(ev._type), status: int(ev.status),
			respRes: int(ev.resp_res), initDepth: int(ev.init_depth),
		}
		if ev.pd_len > 0 {
			// On IB and RoCE this is the CM's whole field, zero-padded
			// (privdata.go).
			e.privData = C.GoBytes(unsafePointer(&ev.pd[0]), ev.pd_len)
		}
		d.mu.Lock()
		o := d.cmIDs[uintptr(ev.handle)]
		d.mu.Unlock()
		if o != nil {
			o.cmEvent(e)
		} else if e.typ == C.RDMA_CM_EVENT_CONNECT_REQUEST {
			// The listener is gone: refuse the request.
			C.rdma_reject(e.id, nil, 0)
			C.rdma_destroy_id(e.id)
		}
	}
}

// register gives o a handle for the context of its rdma_cm ids.
func (d *Device) register(o cmOwner) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, verbs.ErrClosed
	}
	d.nextID++
	d.cmIDs[d.nextID] = o
	return d.nextID, nil
}

func (d *Device) unregister(h uintptr) {
	d.mu.Lock()
	delete(d.cmIDs, h)
	d.mu.Unlock()
}
