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

// queryMinRNRTimer returns the QP's minimum RNR timer, IB encoded.
func (q *qp) queryMinRNRTimer() (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return 0, errnoErr("ibv_query_qp", syscall.EINVAL)
	}
	rc := int(C.gd_min_rnr_timer(q.q))
	if rc < 0 {
		return 0, errnoErr("ibv_query_qp", syscall.Errno(-rc))
	}
	return rc, nil
}
