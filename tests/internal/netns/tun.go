package netns

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// TunLink is a point-to-point IPv4 link between two namespaces made of
// one TUN device in each, with this process forwarding the packets in
// between. Because every packet passes through Go code, it can impair the
// link the way netem would (loss, delay and jitter, reordering,
// duplication, rate, a queue limit) on kernels built without sch_netem,
// deterministically for a given seed, and count what it did.
//
// The link forwards IP packets only (IFF_TUN, no ethernet header) and has
// the usual 1500-byte MTU; each end has one /32 address with the other end
// as its peer.
type TunLink struct {
	NSA, NSB     *NS
	NameA, NameB string
	AddrA, AddrB netip.Addr

	imp  atomic.Pointer[Impairment]
	down atomic.Bool
	dirs [2]*tunDir // A→B, B→A

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// TunCounts is what a TunLink did to the packets it saw, both directions.
type TunCounts struct {
	Forwarded  uint64 // packets written to the far end (duplicates included)
	Lost       uint64 // dropped by Loss
	Duplicated uint64 // extra copies made by Duplicate
	Reordered  uint64 // sent ahead of delayed packets by Reorder
	Overflow   uint64 // dropped because Limit packets were queued
	Blackholed uint64 // dropped while the link was down
}

func (c TunCounts) String() string {
	return fmt.Sprintf("forwarded=%d lost=%d duplicated=%d reordered=%d overflow=%d blackholed=%d",
		c.Forwarded, c.Lost, c.Duplicated, c.Reordered, c.Overflow, c.Blackholed)
}

// tunMTU is the links' MTU: IFF_TUN without a vnet header gets no GSO,
// so every read is one packet of at most this size.
const tunMTU = 1500

// NewTunLink creates the link with addrA in a and addrB in b; seed makes
// the impairments' random choices repeatable.
func NewTunLink(a *NS, addrA netip.Addr, b *NS, addrB netip.Addr, seed uint64) (*TunLink, error) {
	n := seq.Add(1)
	l := &TunLink{
		NSA: a, NSB: b,
		NameA: fmt.Sprintf("gta%d", n), NameB: fmt.Sprintf("gtb%d", n),
		AddrA: addrA, AddrB: addrB,
		stop: make(chan struct{}),
	}
	l.imp.Store(&Impairment{})
	fa, err := openTun(a, l.NameA)
	if err != nil {
		return nil, err
	}
	fb, err := openTun(b, l.NameB)
	if err != nil {
		fa.Close()
		return nil, err
	}
	for _, end := range []struct {
		ns         *NS
		dev        string
		addr, peer netip.Addr
	}{{a, l.NameA, addrA, addrB}, {b, l.NameB, addrB, addrA}} {
		if _, err := end.ns.IP("addr", "add", end.addr.String(), "peer", end.peer.String()+"/32", "dev", end.dev); err == nil {
			_, err = end.ns.IP("link", "set", end.dev, "mtu", fmt.Sprint(tunMTU), "up")
		}
		if err != nil {
			fa.Close()
			fb.Close()
			return nil, err
		}
	}
	l.dirs[0] = newTunDir(l, fa, fb, seed)
	l.dirs[1] = newTunDir(l, fb, fa, seed^0x9e3779b97f4a7c15)
	for _, d := range l.dirs {
		l.wg.Add(2)
		go d.routineRead()
		go d.routineWrite()
	}
	return l, nil
}

// openTun creates TUN device name inside ns and returns its file, which
// is pollable so that Close unblocks a Read.
func openTun(ns *NS, name string) (*os.File, error) {
	var fd int
	err := ns.Do(func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err == nil {
			ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
			err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
		}
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), "tun:"+name), nil
}

// Impair replaces the link's faults. The new settings apply to the
// packets already queued too: none waits longer than the new Delay, and
// the rate limit starts afresh, so clearing a slow link does not leave
// seconds of backlog on its old schedule (tc deletes a netem queue along
// with the qdisc).
func (l *TunLink) Impair(imp Impairment) error {
	l.imp.Store(&imp)
	for _, d := range l.dirs {
		d.reschedule(time.Now().Add(imp.Delay))
	}
	return nil
}

// Clear makes the link clean again.
func (l *TunLink) Clear() error { return l.Impair(Impairment{}) }

// SetUp(false) drops every packet both ways, like a pulled cable; unlike
// Veth.SetUp the interfaces stay up, so routes stay and senders see only
// silence.
func (l *TunLink) SetUp(up bool) error {
	l.down.Store(!up)
	return nil
}

// Counts sums both directions' counters.
func (l *TunLink) Counts() TunCounts {
	var c TunCounts
	for _, d := range l.dirs {
		c.Forwarded += d.forwarded.Load()
		c.Lost += d.lost.Load()
		c.Duplicated += d.duplicated.Load()
		c.Reordered += d.reordered.Load()
		c.Overflow += d.overflow.Load()
		c.Blackholed += d.blackholed.Load()
	}
	return c
}

// Close stops forwarding and removes both devices (a TUN device lives as
// long as its file).
func (l *TunLink) Close() error {
	var errs []error
	l.once.Do(func() {
		close(l.stop)
		for _, d := range l.dirs {
			errs = append(errs, d.from.Close())
		}
		l.wg.Wait()
	})
	return errors.Join(errs...)
}

// tunDir forwards one direction: routineRead takes packets from the near
// TUN, decides their fate and queues them by departure time;
// routineWrite writes them to the far TUN when they are due.
type tunDir struct {
	link     *TunLink
	from, to *os.File
	wake     chan struct{} // routineRead → routineWrite: the queue's head may have changed

	mu     sync.Mutex
	rng    *rand.Rand // guarded by mu
	q      pktQueue   // guarded by mu
	txFree time.Time  // when the simulated wire is free again (Rate); guarded by mu
	order  uint64     // FIFO tiebreak among equal departure times; guarded by mu

	forwarded, lost, duplicated, reordered, overflow, blackholed atomic.Uint64
}

func newTunDir(l *TunLink, from, to *os.File, seed uint64) *tunDir {
	return &tunDir{
		link: l, from: from, to: to,
		wake: make(chan struct{}, 1),
		rng:  rand.New(rand.NewPCG(seed, seed>>1|1)),
	}
}

func (d *tunDir) routineRead() {
	defer d.link.wg.Done()
	for {
		buf := make([]byte, tunMTU+64)
		n, err := d.from.Read(buf)
		if err != nil {
			return // closed
		}
		d.admit(buf[:n], time.Now())
	}
}

// admit applies the impairment to one packet read at now.
func (d *tunDir) admit(pkt []byte, now time.Time) {
	if d.link.down.Load() {
		d.blackholed.Add(1)
		return
	}
	imp := d.link.imp.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	if imp.Loss > 0 && d.rng.Float64() < imp.Loss {
		d.lost.Add(1)
		return
	}
	copies := 1
	if imp.Duplicate > 0 && d.rng.Float64() < imp.Duplicate {
		copies = 2
		d.duplicated.Add(1)
	}
	for range copies {
		if d.q.Len() >= imp.limit() {
			d.overflow.Add(1)
			continue
		}
		at := now
		if imp.Rate > 0 {
			start := now
			if d.txFree.After(now) {
				start = d.txFree
			}
			at = start.Add(time.Duration(int64(len(pkt)) * int64(time.Second) / imp.Rate))
			d.txFree = at
		}
		switch {
		case imp.Reorder > 0 && imp.Delay > 0 && d.rng.Float64() < imp.Reorder:
			d.reordered.Add(1)
		default:
			delay := imp.Delay
			if imp.Jitter > 0 {
				delay += time.Duration(d.rng.Int64N(int64(2*imp.Jitter)+1)) - imp.Jitter
			}
			at = at.Add(max(delay, 0))
		}
		d.order++
		heap.Push(&d.q, queuedPkt{at: at, order: d.order, b: pkt})
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// reschedule pulls every queued packet due after latest forward to it.
func (d *tunDir) reschedule(latest time.Time) {
	d.mu.Lock()
	for i := range d.q {
		if d.q[i].at.After(latest) {
			d.q[i].at = latest
		}
	}
	heap.Init(&d.q)
	d.txFree = time.Time{}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *tunDir) routineWrite() {
	defer d.link.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		d.mu.Lock()
		for d.q.Len() > 0 && !d.q[0].at.After(time.Now()) {
			p := heap.Pop(&d.q).(queuedPkt)
			d.mu.Unlock()
			if _, err := d.to.Write(p.b); err == nil {
				d.forwarded.Add(1)
			}
			d.mu.Lock()
		}
		wait := time.Hour
		if d.q.Len() > 0 {
			wait = time.Until(d.q[0].at)
		}
		d.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-d.wake:
		case <-timer.C:
		case <-d.link.stop:
			return
		}
	}
}

// queuedPkt is a queued packet and its departure time.
type queuedPkt struct {
	at    time.Time
	order uint64
	b     []byte
}

// pktQueue is a min-heap of packets by departure time, FIFO among equals.
type pktQueue []queuedPkt

func (q pktQueue) Len() int { return len(q) }
func (q pktQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].order < q[j].order
}
func (q pktQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pktQueue) Push(x any)   { *q = append(*q, x.(queuedPkt)) }
func (q *pktQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	old[len(old)-1] = queuedPkt{}
	*q = old[:len(old)-1]
	return p
}
