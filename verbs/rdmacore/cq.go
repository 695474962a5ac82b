//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/godapl/godapl/internal/fastpath"
	"github.com/godapl/godapl/verbs"
)

// pollBatch is how many completions one cgo call takes from the device.
const pollBatch = C.GD_POLL_BATCH

// fixedCQDepth is the device depth of a CQ on a device that cannot
// resize them (siw): DAT grows an EVD's CQ as it adds endpoints.
const fixedCQDepth = 1 << 16

// cq is a device CQ with a ring in front of it: Wait must look at what
// the device holds without losing it, so what it polls waits in the ring
// for the next Poll.
type cq struct {
	d     *Device
	c     *C.struct_ibv_cq
	x     *C.struct_gd_cq // C memory: c and the records a poll fills
	depth int

	mu       sync.Mutex
	ring     fastpath.CQRing
	dead     bool
	overflow bool
	users    int    // QPs using it
	lastQPN  uint32 // the QP of the last completion, looked up
	lastQP   *qp
	spin     yielder     // how long pollers have spun on it (yield.go)
	yieldDue atomic.Bool // a PollLocked found a yield due (YieldDue)

	w cqWait // the waiters (cq_wait.go)
}

var _ verbs.CQ = (*cq)(nil)

// CreateCQ creates a CQ with a completion channel of its own, which its
// waiters park on (cq_wait.go).
func (d *Device) CreateCQ(attr verbs.CQAttr) (verbs.CQ, error) {
	if attr.Depth <= 0 || attr.Depth > d.attr.MaxCQE {
		return nil, fmt.Errorf("rdmacore: CQ depth %d (device maximum %d): %w", attr.Depth, d.attr.MaxCQE, verbs.ErrInvalidArgument)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, verbs.ErrClosed
	}
	hw := attr.Depth
	if d.cqFixed {
		hw = min(max(hw, fixedCQDepth), d.attr.MaxCQE)
	}
	ch := C.ibv_create_comp_channel(d.ctx)
	if ch == nil {
		return nil, errnoErr("ibv_create_comp_channel", errnoOf())
	}
	c := C.ibv_create_cq(d.ctx, C.int(hw), nil, ch, 0)
	if c == nil {
		err := errnoErr("ibv_create_cq", errnoOf())
		C.ibv_destroy_comp_channel(ch)
		return nil, err
	}
	fd, err := newPollFD(int(ch.fd), d.name+" completion channel")
	if err != nil {
		C.ibv_destroy_cq(c)
		C.ibv_destroy_comp_channel(ch)
		return nil, err
	}
	depth := int(c.cqe)
	if d.cqFixed {
		depth = attr.Depth
	}
	q := &cq{
		d: d, c: c, depth: depth,
		x:    (*C.struct_gd_cq)(C.calloc(1, C.sizeof_struct_gd_cq)),
		ring: fastpath.NewCQRing(depth),
	}
	q.x.cq = c
	q.w.init(ch, fd)
	d.cqs[c] = q
	return q, nil
}

// pollDevice moves up to len(wcs) completions from the device into wcs
// with one cgo call per pollBatch. An empty device is polled up to spins
// more times inside that call before it counts as empty.
func (q *cq) pollDevice(wcs []verbs.WC, spins int) int {
	got := 0
	for got < len(wcs) {
		n := min(len(wcs)-got, pollBatch)
		k := int(C.gd_poll_cq(cAddr(q.x), C.int(n), C.int(spins)))
		spins = 0
		if k <= 0 {
			break
		}
		for i := range k {
			o := &q.x.out[i]
			w := &wcs[got+i]
			*w = verbs.WC{
				ID: uint64(o.id), Status: verbs.WCStatus(o.status), Opcode: verbs.WCOpcode(o.opcode),
				Flags: verbs.WCFlags(o.flags), ByteLen: uint32(o.byte_len), QPN: uint32(o.qpn),
				InvalidatedRKey: uint32(o.inv_rkey),
			}
			if w.Opcode == verbs.WCRecv {
				q.d.st.bytesReceived.Add(uint64(w.ByteLen))
			}
			if qp := q.qpOf(w.QPN); qp != nil {
				qp.completed(w)
			}
		}
		got += k
		if k < n {
			break
		}
	}
	return got
}

// qpOf finds the QP a completion belongs to; q.mu is held.
func (q *cq) qpOf(qpn uint32) *qp {
	if q.lastQP != nil && q.lastQPN == qpn {
		return q.lastQP
	}
	q.d.mu.Lock()
	p := q.d.qps[qpn]
	q.d.mu.Unlock()
	if p != nil {
		q.lastQPN, q.lastQP = qpn, p
	}
	return p
}

// forget drops a destroyed QP from the lookup cache.
func (q *cq) forget(p *qp) {
	q.mu.Lock()
	if q.lastQP == p {
		q.lastQP = nil
	}
	q.mu.Unlock()
}

// Poll takes completions from the ring first, then from the device,
// which it busy-polls as the provider's BusyPoll option says when nothing
// else is there. A caller that never blocks yields now and then, with the
// lock released (yield.go).
func (q *cq) Poll(wcs []verbs.WC) int {
	q.mu.Lock()
	n := q.PollLocked(wcs)
	q.mu.Unlock()
	q.YieldDue()
	return n
}

func (q *cq) pollLocked(wcs []verbs.WC) int {
	if q.dead {
		return 0
	}
	n := q.ring.Poll(wcs)
	if n < len(wcs) {
		spins := 0
		if n == 0 {
			spins = q.d.busyPoll
		}
		n += q.pollDevice(wcs[n:], spins)
	}
	return n
}

// fill moves what the device holds into the ring; q.mu is held.
func (q *cq) fill() { q.fillSpin(0) }

// fillSpin is fill busy-polling an empty device up to spins more times
// first.
func (q *cq) fillSpin(spins int) {
	var buf [pollBatch]verbs.WC
	for q.ring.Len() < q.ring.Cap() {
		n := q.pollDevice(buf[:min(pollBatch, q.ring.Cap()-q.ring.Len())], spins)
		spins = 0
		for i := range n {
			q.ring.Push(&buf[i])
		}
		if n == 0 {
			return
		}
	}
}

// pushFlushed queues a completion made here, behind what the device
// holds, and wakes the waiters.
func (q *cq) pushFlushed(wc verbs.WC) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return
	}
	q.fill()
	if q.ring.Len() >= q.ring.Cap() {
		q.overflow = true
		q.d.st.cqOverflows.Add(1)
	} else {
		q.ring.Push(&wc)
	}
	q.kickLocked(true)
}

// drain moves what the device holds into the ring, which also accounts
// the completions to their QPs.
func (q *cq) drain() {
	q.mu.Lock()
	if !q.dead {
		q.fill()
	}
	q.mu.Unlock()
}

// Len moves what the device holds into the ring and counts it.
func (q *cq) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return 0
	}
	q.fill()
	return q.ring.Len()
}

func (q *cq) Depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.depth
}

func (q *cq) Resize(depth int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dead {
		return verbs.ErrClosed
	}
	q.fill()
	if depth <= 0 || depth < q.ring.Len() || depth > q.d.attr.MaxCQE {
		return fmt.Errorf("rdmacore: resize CQ to %d with %d queued: %w", depth, q.ring.Len(), verbs.ErrInvalidArgument)
	}
	if q.d.cqFixed {
		if depth > int(q.c.cqe) {
			return fmt.Errorf("rdmacore: resize CQ to %d: %s cannot resize CQs beyond %d: %w", depth, q.d.name, int(q.c.cqe), verbs.ErrNoResources)
		}
		q.depth = depth
		if depth > q.ring.Cap() {
			q.ring.Resize(depth)
		}
		return nil
	}
	if rc := C.ibv_resize_cq(q.c, C.int(depth)); rc != 0 {
		return errnoErr("ibv_resize_cq", syscall.Errno(rc))
	}
	q.depth = depth
	if int(q.c.cqe) > q.ring.Cap() {
		q.ring.Resize(int(q.c.cqe))
	}
	return nil
}

func (q *cq) Destroy() error {
	q.mu.Lock()
	if q.dead {
		q.mu.Unlock()
		return verbs.ErrClosed
	}
	if q.users > 0 {
		q.mu.Unlock()
		return fmt.Errorf("rdmacore: destroy CQ: %d QPs use it: %w", q.users, verbs.ErrInUse)
	}
	q.mu.Unlock()
	return q.destroy(false)
}

func (q *cq) destroy(force bool) error {
	q.mu.Lock()
	if q.dead {
		q.mu.Unlock()
		return verbs.ErrClosed
	}
	q.dead = true
	q.kickLocked(false)
	q.w.unwatchLocked()
	q.mu.Unlock()
	q.d.mu.Lock()
	delete(q.d.cqs, q.c)
	q.d.mu.Unlock()
	// Closing the poller's descriptor waits for a waiter inside it to
	// leave, so that no one takes events from the channel any more: the
	// ones taken are acknowledged, as ibv_destroy_cq requires.
	q.w.fd.close()
	rc := C.ibv_destroy_cq(q.c)
	C.free(unsafe.Pointer(q.x))
	if rc != 0 {
		return errnoErr("ibv_destroy_cq", syscall.Errno(rc))
	}
	if rc := C.ibv_destroy_comp_channel(q.w.ch); rc != 0 {
		return errnoErr("ibv_destroy_comp_channel", syscall.Errno(rc))
	}
	return nil
}

// CQMutex, Lock, Unlock, PollLocked make the CQ a verbs.CQMutexer.
func (q *cq) CQMutex() *sync.Mutex { return &q.mu }
func (q *cq) Lock()                { q.mu.Lock() }
func (q *cq) Unlock()              { q.mu.Unlock() }

// PollLocked is Poll for a consumer holding the lock, which cannot yield
// there: a yield that falls due is left for YieldDue.
func (q *cq) PollLocked(wcs []verbs.WC) int {
	n := q.pollLocked(wcs)
	if len(wcs) > 0 && q.spin.polled(n, q.d.busyPoll, monoNow) {
		q.yieldDue.Store(true)
	}
	return n
}

// YieldDue yields when a PollLocked found a yield due (fastpath.CQYielder).
func (q *cq) YieldDue() {
	if q.yieldDue.Load() && q.yieldDue.Swap(false) {
		runtime.Gosched()
	}
}
