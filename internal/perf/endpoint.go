package perf

import (
	"context"

	"github.com/godapl/godapl/verbs"
)

// endpoint is one side of a test connection: a QP with its own CQs and
// one registered buffer carved into slots.
type endpoint struct {
	dev  verbs.Device
	pd   verbs.PD
	scq  verbs.CQ
	rcq  verbs.CQ
	qp   verbs.QP
	mem  *verbs.Mem
	buf  []byte
	mr   verbs.MR
	conn verbs.Conn
	wcs  [64]verbs.WC

	// Receives queued to be posted in one call (queueRecv, postRecvs).
	// They live here because a work request handed to the QP interface
	// escapes: built on the stack it would cost two allocations a post.
	rwrs  [64]verbs.RecvWR
	rsges [64]verbs.SGE
	nrecv int
}

func newEndpoint(dev verbs.Device, bufSize, sqDepth, rqDepth int) (*endpoint, error) {
	e := &endpoint{dev: dev}
	var err error
	fail := func(err error) (*endpoint, error) { e.close(); return nil, err }
	if e.pd, err = dev.AllocPD(); err != nil {
		return fail(err)
	}
	if e.scq, err = dev.CreateCQ(verbs.CQAttr{Depth: sqDepth + 16}); err != nil {
		return fail(err)
	}
	if e.rcq, err = dev.CreateCQ(verbs.CQAttr{Depth: rqDepth + 16}); err != nil {
		return fail(err)
	}
	caps := verbs.QPCaps{MaxSendWR: sqDepth, MaxRecvWR: rqDepth, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: creditLen}
	if e.qp, err = e.pd.CreateQP(verbs.QPInitAttr{SendCQ: e.scq, RecvCQ: e.rcq, Caps: caps}); err != nil {
		return fail(err)
	}
	// INIT, as rdma_cm leaves a new QP, so receives can be posted before the
	// connection exists.
	if err = e.qp.Modify(verbs.QPStateInit); err != nil {
		return fail(err)
	}
	if e.mem, err = verbs.AllocMem(max(bufSize, 64)); err != nil {
		return fail(err)
	}
	e.buf = e.mem.Bytes()
	if e.mr, err = e.pd.RegMR(e.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		return fail(err)
	}
	return e, nil
}

func (e *endpoint) close() {
	if e.conn != nil {
		e.conn.Disconnect()
	}
	if e.qp != nil {
		e.qp.Destroy()
	}
	if e.mr != nil {
		e.mr.Dereg()
	}
	if e.mem != nil {
		e.mem.Free()
	}
	for _, cq := range []verbs.CQ{e.scq, e.rcq} {
		if cq != nil {
			cq.Destroy()
		}
	}
	if e.pd != nil {
		e.pd.Dealloc()
	}
}

// sge names n bytes at off of the endpoint's buffer.
func (e *endpoint) sge(off, n int) verbs.SGE { return verbs.SGEOf(e.mr, off, n) }

// postRecvSlot posts a receive of size bytes into slot i.
func (e *endpoint) postRecvSlot(i, size int) error {
	if err := e.queueRecv(uint64(i), i*size, size); err != nil {
		return err
	}
	return e.postRecvs()
}

// queueRecv queues a receive of n bytes at off of the buffer, posting
// the queue first if it is full.
func (e *endpoint) queueRecv(id uint64, off, n int) error {
	if e.nrecv == len(e.rwrs) {
		if err := e.postRecvs(); err != nil {
			return err
		}
	}
	i := e.nrecv
	e.rsges[i] = e.sge(off, n)
	e.rwrs[i] = verbs.RecvWR{ID: id, SGL: e.rsges[i : i+1]}
	e.nrecv++
	return nil
}

// postRecvs posts the queued receives in one call.
func (e *endpoint) postRecvs() error {
	n := e.nrecv
	e.nrecv = 0
	if n == 0 {
		return nil
	}
	_, err := e.qp.PostRecv(e.rwrs[:n])
	return err
}

// poll returns at least one completion from cq, sleeping in CQ.Wait
// when there is none. It does not spin first: a waiter blocked in
// CQ.Wait on a CQ that serves one QP reads that QP's stream itself (the
// soft engine's inline receive), so that a round trip costs one wakeup
// per message, as with TCP. A spinning poller never waits, leaves the
// receiving to the provider's goroutine (two wakeups per message) and
// takes a core from it: on two cores, with both ends in one process, a
// 50 µs spin made the 64 B round trip 121 µs where raw TCP took 17 µs.
func (e *endpoint) poll(ctx context.Context, cq verbs.CQ) (int, error) {
	for {
		if n := cq.Poll(e.wcs[:]); n > 0 {
			return n, nil
		}
		if err := cq.Wait(ctx, false); err != nil {
			return 0, err
		}
	}
}

// checkWCs fails on the first unsuccessful completion among the first n.
func (e *endpoint) checkWCs(n int) error {
	for i := 0; i < n; i++ {
		if e.wcs[i].Status != verbs.WCSuccess {
			return &WCError{WC: e.wcs[i]}
		}
	}
	return nil
}

// WCError reports a failed work completion.
type WCError struct{ WC verbs.WC }

func (e *WCError) Error() string {
	return "perf: " + e.WC.Opcode.String() + " completed with " + e.WC.Status.String()
}

// ctxUntilDone returns a context that ends with ctx or when c ends.
func ctxUntilDone(ctx context.Context, c verbs.Conn) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
