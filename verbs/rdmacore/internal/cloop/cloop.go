//go:build rdmacore

// Package cloop runs the loops of perftest's ib_send_bw, sender and
// receiver, in C on queue pairs that package rdmacore created, for that
// package's benchmarks: a Send stream whose loops run in C on the same
// QPs, CQs and memory as the Go benchmark's tells the cost of the
// provider's Go half (the runtime, the cgo crossings, the Go code of each
// post and poll) apart from the cost of the queue pairs themselves. Either
// end may run here while the other runs in Go, and loops written in Go
// may take their steps here (PostOne, ReapOne, RecvOne), bypassing the
// provider's Go code; the counters the two ends share live in C memory
// and are read atomically on both sides.
//
// It is test support: nothing outside package rdmacore's tests uses it.
package cloop

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include "cloop.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Attr describes a run: the libibverbs objects (struct ibv_qp and struct
// ibv_cq, in C memory) of each end, the sender's buffer and the
// receiver's, and perftest's parameters.
type Attr struct {
	SendQP, SendCQ unsafe.Pointer
	SendAddr       uint64
	SendLKey       uint32
	RecvQP, RecvCQ unsafe.Pointer
	RecvAddr       uint64 // receive i lands at RecvAddr + i*Size
	RecvLKey       uint32
	Size           int
	N              int // Sends
	Depth          int // Sends in flight
	Every          int // one Send in Every is signalled
	RecvDepth      int // receives posted
	Gap            int // the sender stays RecvDepth-Gap ahead of the receiver at most
}

// Run is one Send stream's shared state, in C memory.
type Run struct {
	st *C.struct_cl_state
}

// New allocates a run; Free releases it.
func New(a Attr) *Run {
	st := (*C.struct_cl_state)(C.calloc(1, C.sizeof_struct_cl_state))
	st.sqp = (*C.struct_ibv_qp)(a.SendQP)
	st.scq = (*C.struct_ibv_cq)(a.SendCQ)
	st.saddr = C.uint64_t(a.SendAddr)
	st.slkey = C.uint32_t(a.SendLKey)
	st.size = C.uint32_t(a.Size)
	st.rqp = (*C.struct_ibv_qp)(a.RecvQP)
	st.rcq = (*C.struct_ibv_cq)(a.RecvCQ)
	st.raddr = C.uint64_t(a.RecvAddr)
	st.rlkey = C.uint32_t(a.RecvLKey)
	st.n = C.int64_t(a.N)
	st.depth = C.int(a.Depth)
	st.every = C.int(a.Every)
	st.rdepth = C.int(a.RecvDepth)
	st.gap = C.int(a.Gap)
	return &Run{st: st}
}

// Free releases the run's C memory; the loops must have returned.
func (r *Run) Free() { C.free(unsafe.Pointer(r.st)) }

func (r *Run) addr() C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(r.st))) }

// Send runs the sender loop in C, on a locked thread, until every Send
// completed or the run failed.
func (r *Run) Send() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.cl_send(r.addr())
}

// Recv runs the receiver loop in C, on a locked thread, until N receives
// completed or the run failed. The RecvDepth receives must be posted.
func (r *Run) Recv() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	C.cl_recv(r.addr())
}

// Received is the receiver's progress, for a sender in Go (and set by a
// receiver in Go).
func (r *Run) Received() *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&r.st.received))
}

// Stop makes both loops return: the Go end failed.
func (r *Run) Stop() { (*atomic.Int32)(unsafe.Pointer(&r.st.failed)).CompareAndSwap(0, 1) }

// Err reports why a C loop stopped, or nil.
func (r *Run) Err() error {
	if (*atomic.Int32)(unsafe.Pointer(&r.st.failed)).Load() == 0 {
		return nil
	}
	if r.st.err_where == 0 {
		return errors.New("cloop: the run was stopped")
	}
	what := map[C.int32_t]string{
		C.CL_ERR_POST_SEND: "ibv_post_send: errno",
		C.CL_ERR_SEND_WC:   "send completion: status",
		C.CL_ERR_POST_RECV: "ibv_post_recv: errno",
		C.CL_ERR_RECV_WC:   "receive completion: status",
	}[r.st.err_where]
	return fmt.Errorf("cloop: %s %d", what, r.st.err)
}

// Counts are what the C loops counted.
type Counts struct {
	TxPolls, RxPolls, RxEmpty, RxPosts int
}

// Counts reads the counts; the loops must have returned.
func (r *Run) Counts() Counts {
	return Counts{int(r.st.tx_polls), int(r.st.rx_polls), int(r.st.rx_empty), int(r.st.rx_posts)}
}

// PostOne posts Send id, signalled or not, with one cgo call and no Go
// code of the provider's: for a sender loop written in Go.
func (r *Run) PostOne(id uint64, signaled bool) error {
	sig := C.int(0)
	if signaled {
		sig = 1
	}
	if rc := C.cl_post_one(r.addr(), C.uint64_t(id), sig); rc != 0 {
		return fmt.Errorf("cloop: ibv_post_send: errno %d", int(rc))
	}
	return nil
}

// ReapOne polls the send CQ once and returns how many Sends are retired,
// given retired before; -1 when the run failed.
func (r *Run) ReapOne(retired int) int { return int(C.cl_reap_one(r.addr(), C.int64_t(retired))) }

// RecvOne polls the receive CQ once, reposts what completed and returns
// how many; -1 when the run failed.
func (r *Run) RecvOne() int { return int(C.cl_recv_one(r.addr())) }
