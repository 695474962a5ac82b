package dat

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
)

// Which receive buffers are on the SRQ. The SRQ hands out its buffers in
// the order they were posted, so every buffer on it takes its turn: with
// all of a node's buffers posted (1024 of 16 KiB by default, 16 MiB),
// each arriving fragment lands in memory that left the cache long ago,
// and its copy into a message reads it from memory again. Yet a peer can
// only ever hold its connection's share of them (dat_credit.go). So when
// credits bind every peer (between godapl nodes), the node keeps only the
// live connections' shares plus datPostSpare buffers on the SRQ and the
// rest in a free list, most recently used on top; one connection then
// cycles through its own 64 buffers (1 MiB), which stay in the cache.
// A buffer whose completion finds more on the SRQ than that goes to the
// free list; a new connection's reservation posts from the free list
// before the peer learns of its share, so no sender ever finds the SRQ
// short. A kernel peer is not bound by credits (dat_kernel.go): a node
// speaking the kernel's wire keeps every buffer posted, and so does one
// whose peer turns out to grant no credits, from then on.

// datPostSpare is how many buffers beyond the reserved shares stay posted.
const datPostSpare = 16

// datRxPost is the node's record of its posted receive buffers.
type datRxPost struct {
	lazy   atomic.Bool  // post only what the shares need (not kernel)
	out    atomic.Int64 // buffers on the SRQ or in the event role's hands
	target atomic.Int64 // buffers that must be posted: shares + spare

	mu   sync.Mutex
	free []int32 // buffers neither posted nor in use; last is the warmest
	iov  [1]dat.LMRTriplet
}

// setTargetLocked sets the number of buffers to keep posted from the
// reserved shares. dn.mu is held.
func (dn *datNode) setTargetLocked() {
	if !dn.rxp.lazy.Load() {
		dn.rxp.target.Store(math.MaxInt64)
		return
	}
	dn.rxp.target.Store(int64(dn.reserved + datPostSpare))
}

// postAll keeps every buffer posted from now on: a peer that grants no
// credits may not respect ours either.
func (dn *datNode) postAll() {
	dn.mu.Lock()
	defer dn.mu.Unlock()
	if !dn.rxp.lazy.Swap(false) {
		return
	}
	dn.setTargetLocked()
	dn.topUp() // an error: the IA is closing
}

// topUp posts free buffers until the target is met.
func (dn *datNode) topUp() error {
	p := &dn.rxp
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.out.Load() < p.target.Load() && len(p.free) > 0 {
		i := p.free[len(p.free)-1]
		if err := dn.post(int(i), &p.iov); err != nil {
			return err
		}
		p.free = p.free[:len(p.free)-1]
		p.out.Add(1)
	}
	return nil
}

// addFree takes n new buffers from first on: posted at once when every
// buffer is kept posted, else into the free list for topUp. dn.mu is
// held (or the node is not running yet).
func (dn *datNode) addFree(first, n int, iov *[1]dat.LMRTriplet) error {
	p := &dn.rxp
	if !p.lazy.Load() {
		for i := range n {
			if err := dn.post(first+i, iov); err != nil {
				return err
			}
			p.out.Add(1)
		}
		return nil
	}
	p.mu.Lock()
	for i := first + n - 1; i >= first; i-- { // the lowest on top
		p.free = append(p.free, int32(i))
	}
	p.mu.Unlock()
	return nil
}

// recycle gives buffer i back after its completion was handled (event
// role): to the SRQ, unless more than the target are there, in which case
// it rests in the free list.
func (dn *datNode) recycle(i int) error {
	p := &dn.rxp
	if p.out.Load() <= p.target.Load() {
		return dn.repost(i)
	}
	p.mu.Lock()
	if p.out.Load() <= p.target.Load() { // a reservation raised it meantime
		p.mu.Unlock()
		return dn.repost(i)
	}
	p.free = append(p.free, int32(i))
	p.out.Add(-1)
	p.mu.Unlock()
	return nil
}
