package siw

import "runtime"

// closeConn closes the stream's socket once no direct write is in flight
// on its file descriptor (directWriter). It sets stopping first (end may
// not have yet, when another goroutine's end is under way), so a direct
// write that starts after the wait goes through the RawConn,
// which the close handles itself; one that started before is seen here by
// its fdBusy flag (both are sequentially consistent atomics: the writer
// raises the flag and then checks stopping, the closer sets stopping and
// then checks the flag). A direct write never blocks, so the wait is
// short. orderly sends a FIN first (closeOrderly).
func (s *stream) closeConn(orderly bool) {
	s.stopping.Store(true)
	for s.fdBusy.Load() {
		runtime.Gosched()
	}
	if orderly {
		closeOrderly(s.nc)
	} else {
		s.nc.Close()
	}
}
