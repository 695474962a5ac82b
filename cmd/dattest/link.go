package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
)

// link is one client EP connected to a dattest server, with its own EVD
// (every stream) and one registered buffer laid out as
//
//	[ out: depth slots ][ in: depth slots ]
//
// "out" holds what is sent or RDMA Written, "in" what is received or RDMA
// Read. remote is the server's RDMA region: depth slots of size bytes.
type link struct {
	ep     *ep.EP
	evd    *evd.EVD
	buf    *lmr.LMR
	remote dat.RMRTriplet
	size   int
	depth  int
	segs   int  // most IOV entries an operation uses
	poll   bool // reap completions by polling the EVD (dapltest -P, -m p)
}

// dial connects a link to the server at addr:qual. timeout bounds the
// connection setup.
func dial(ctx context.Context, i *ia.IA, pz *ia.PZ, addr netip.Addr, qual dat.ConnQual, s setup, segs int, timeout time.Duration) (_ *link, err error) {
	l := &link{size: s.Size, depth: s.Depth, segs: max(segs, 1)}
	defer func() {
		if err != nil {
			l.free()
		}
	}()
	if l.evd, err = evd.Create(i, 4*s.Depth+8, nil, dat.EVDDefault); err != nil {
		return nil, err
	}
	if l.buf, err = lmr.Alloc(i, pz, 2*s.Depth*s.Size, dat.MemPrivAll); err != nil {
		return nil, err
	}
	attr := dat.EPAttr{MaxRecvDTOs: s.Depth, MaxRequestDTOs: 2 * s.Depth, MaxRecvIOV: l.segs, MaxRequestIOV: l.segs,
		MaxRDMAReadIOV: l.segs, MaxRDMAWriteIOV: l.segs}
	if l.ep, err = ep.Create(i, pz, l.evd, l.evd, l.evd, &attr); err != nil {
		return nil, err
	}
	if err = l.ep.Connect(addr, qual, timeout, s.encode(), dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, timeout+time.Second) // the EP reports its own timeout first
	defer cancel()
	ev, _, err := l.evd.Wait(wctx, 1)
	if err != nil {
		return nil, fmt.Errorf("waiting for the connection: %w", err)
	}
	switch ev.Number {
	case dat.ConnectionEventEstablished:
	case dat.ConnectionEventPeerRejected:
		// Over IB and RoCE the reject data comes zero-padded.
		if why := strings.TrimRight(string(ev.Conn.PrivateData), "\x00"); why != "" {
			return nil, fmt.Errorf("server rejected the connection: %s", why)
		}
		return nil, errors.New("server rejected the connection")
	case dat.ConnectionEventNonPeerRejected:
		return nil, errors.New("connection refused (no dattest server reachable at that address and port)")
	case dat.ConnectionEventUnreachable:
		return nil, errors.New("server unreachable")
	case dat.ConnectionEventTimedOut:
		return nil, fmt.Errorf("no answer from the server within %v", timeout)
	default:
		return nil, fmt.Errorf("connection setup ended with %v", ev.Number)
	}
	if l.remote, err = dat.DecodeRMRTriplet(ev.Conn.PrivateData); err != nil {
		return nil, fmt.Errorf("server's accept: %w", err)
	}
	if int(l.remote.SegmentLength) < s.Depth*s.Size {
		return nil, fmt.Errorf("server's RDMA region is %d bytes, need %d", l.remote.SegmentLength, s.Depth*s.Size)
	}
	return l, nil
}

// out and in return slot k of the two halves of the buffer.
func (l *link) out(k int) []byte { return l.buf.Bytes()[k*l.size : (k+1)*l.size] }
func (l *link) in(k int) []byte {
	off := (l.depth + k) * l.size
	return l.buf.Bytes()[off : off+l.size]
}

// outIOV and inIOV name the same slots as LMR triplets.
func (l *link) outIOV(k int) []dat.LMRTriplet {
	return []dat.LMRTriplet{l.buf.Triplet(k*l.size, l.size)}
}
func (l *link) inIOV(k int) []dat.LMRTriplet {
	return []dat.LMRTriplet{l.buf.Triplet((l.depth+k)*l.size, l.size)}
}

// segIOV names the first n bytes at off of the buffer as segs LMR
// triplets of equal size (the last takes the remainder), as dapltest's
// num_segs splits an operation.
func (l *link) segIOV(off, n, segs int) []dat.LMRTriplet {
	segs = max(1, min(segs, n))
	iov := make([]dat.LMRTriplet, 0, segs)
	each := n / segs
	for j := range segs {
		m := each
		if j == segs-1 {
			m = n - each*(segs-1)
		}
		iov = append(iov, l.buf.Triplet(off+j*each, m))
	}
	return iov
}

// wait returns the next event of the link's EVD, by blocking or, with
// poll, by dequeuing until one is there.
func (l *link) wait(ctx context.Context) (dat.Event, error) {
	if !l.poll {
		ev, _, err := l.evd.Wait(ctx, 1)
		return ev, err
	}
	for {
		ev, err := l.evd.Dequeue()
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, dat.ErrQueueEmpty) {
			return ev, err
		}
		if ctx.Err() != nil {
			return ev, context.Cause(ctx)
		}
		runtime.Gosched()
	}
}

// remoteAt names n bytes at off of the server's RDMA region.
func (l *link) remoteAt(off, n int) dat.RMRTriplet {
	r := l.remote
	r.VirtualAddress += dat.VAddr(off)
	r.SegmentLength = uint32(n)
	return r
}

// remoteSlot is slot k of the server's RDMA region.
func (l *link) remoteSlot(k int) dat.RMRTriplet {
	r := l.remote
	r.VirtualAddress += dat.VAddr(k * l.size)
	r.SegmentLength = uint32(l.size)
	return r
}

// close disconnects gracefully, waits (bounded) for the DISCONNECTED
// event behind the flushed DTOs, and frees everything.
func (l *link) close(timeout time.Duration) {
	if l.ep != nil && l.ep.State() == dat.EPStateConnected {
		if l.ep.Disconnect(dat.CloseGraceful) == nil {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			for {
				ev, _, err := l.evd.Wait(ctx, 1)
				if err != nil || ev.Number == dat.ConnectionEventDisconnected || ev.Number == dat.ConnectionEventBroken {
					break
				}
			}
			cancel()
		}
	}
	l.free()
}

func (l *link) free() {
	if l.ep != nil {
		if l.ep.State() != dat.EPStateDisconnected && l.ep.State() != dat.EPStateUnconnected {
			l.ep.Disconnect(dat.CloseAbrupt)
		}
		l.ep.Free()
	}
	if l.buf != nil {
		l.buf.Free()
	}
	if l.evd != nil {
		l.evd.Free()
	}
}

// dtoErr turns an unsuccessful DTO completion into an error.
func dtoErr(what string, d dat.DTOCompletion) error {
	return fmt.Errorf("%s (cookie %d) completed with %v", what, d.Cookie, d.Status)
}

// stallGuard cancels a context when a test makes no progress for limit:
// it bounds every wait of a run of any length without a context per wait.
type stallGuard struct {
	progress atomic.Uint64
	stopped  chan struct{}
	done     chan struct{}
}

// newStallGuard returns the guarded context; stop ends the guard's
// goroutine and must be called.
func newStallGuard(parent context.Context, limit time.Duration) (context.Context, *stallGuard, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	g := &stallGuard{stopped: make(chan struct{}), done: make(chan struct{})}
	go g.routineWatch(limit, func() { cancel(fmt.Errorf("no progress for %v", limit)) })
	return ctx, g, func() {
		close(g.stopped)
		<-g.done
		cancel(nil)
	}
}

func (g *stallGuard) tick() { g.progress.Add(1) }

func (g *stallGuard) routineWatch(limit time.Duration, fire func()) {
	defer close(g.done)
	t := time.NewTicker(limit)
	defer t.Stop()
	last := g.progress.Load()
	for {
		select {
		case <-g.stopped:
			return
		case <-t.C:
			now := g.progress.Load()
			if now == last {
				fire()
				return
			}
			last = now
		}
	}
}

// waitErr explains a failed evd_wait, preferring the stall guard's cause.
func waitErr(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}
