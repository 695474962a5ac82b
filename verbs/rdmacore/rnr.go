//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import "syscall"

// The minimum RNR timer of connected QPs: what a peer's Send that finds
// no receive waits before its retry. rdma_cm would leave it at 655 ms
// (shim.h, GD_MIN_RNR_TIMER); gd_cm_modify sets minRNRTimer when the QP
// enters RTR.

// minRNRTimer is the IB encoding of 0.32 ms.
const minRNRTimer = C.GD_MIN_RNR_TIMER

// qpPath is a connected QP's path and transport timers (gd_qp_path).
type qpPath struct {
	MTU, Timeout, RetryCnt, RNRRetry, MinRNRTimer, MaxRDAtomic, MaxDestRDAtomic int
}

// queryPath reads the QP's path attributes from the device.
func (q *qp) queryPath() (qpPath, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return qpPath{}, errnoErr("ibv_query_qp", syscall.EINVAL)
	}
	var o C.struct_gd_qp_path
	if rc := C.gd_query_path(q.q, &o); rc != 0 {
		return qpPath{}, errnoErr("ibv_query_qp", syscall.Errno(rc))
	}
	return qpPath{
		MTU: int(o.path_mtu), Timeout: int(o.timeout), RetryCnt: int(o.retry_cnt), RNRRetry: int(o.rnr_retry),
		MinRNRTimer: int(o.min_rnr_timer), MaxRDAtomic: int(o.max_rd_atomic), MaxDestRDAtomic: int(o.max_dest_rd_atomic),
	}, nil
}
