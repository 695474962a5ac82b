package dat

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/internal/memhook"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Memory of the dat transport's RDMA: the mappings a node lends to its
// peers (the owner's side of the checks, dat_rdma_check.go) and the
// registrations of the node's own buffers its ops move data from or to.
//
// Mappings are DAT LMRs registered over exactly the application's range
// with exactly the remote rights asked for: read always, write with
// RDMAReadWrite. The LMR's rmr_context is the cookie's R_Key, so a peer
// reaches that range in that direction and nothing else, and freeing the
// LMR revokes it at once. (An RMR bound inside a larger LMR would grant
// the same, but binding needs an EP and a round of completions; an LMR
// per mapping is what the kernel's FMR pools amount to.) Over iWARP LMRs
// are addressed by virtual address, so the address of the first byte
// goes with the cookie (wire.ExtRDMAAddr); on the kernel's wire they are
// zero-based as the kernel's own (dat_kernel.go).
//
// The node's table of mappings is what checks are answered from: a
// request is let through only for a live mapping, inside its range, in a
// direction it grants, and for a use-once mapping only once; the
// mapping is then pinned until the op is over (its message arrived, its
// release record arrived, or its connection ended), or, for a lease,
// until the peer returned it. Free takes the mapping out of the table at
// once, so no later check passes, revokes its leases, and waits for the
// pins before it deregisters: ops let through still find their memory,
// and none reaches it once Free returned.

// datMR is one mapping; the fields below mu are guarded by the node's
// datMRTable.mu.
type datMR struct {
	dn      *datNode
	l       *lmr.LMR
	rkey    uint32
	addr    uint64 // the first byte's address in the LMR
	n       uint64
	write   bool
	useOnce bool
	zb      bool // zero-based: addr is the cookie's offset

	used    bool // a use-once mapping let its op through
	pins    int  // ops let through and not over
	holders map[*datEP]int
	lessees map[*datEP]bool // EPs holding a lease on it (one pin each)
	freed   bool
}

// datMRTable is a node's mappings by R_Key.
type datMRTable struct {
	mu   sync.Mutex
	cond sync.Cond // pins dropped to zero, or the node is closing
	mrs  map[uint32]*datMR
}

func (m *datMR) RKey() uint32 { return m.rkey }

// Addr and Offset implement xport.MR: a zero-based mapping is named by
// its cookie's offset alone, a VA one by its address (wire.ExtRDMAAddr).
func (m *datMR) Addr() uint64 {
	if m.zb {
		return 0
	}
	return m.addr
}

func (m *datMR) Offset() uint32 {
	if m.zb {
		return uint32(m.addr)
	}
	return 0
}

var errDatMRFreed = errors.New("rds dat: mapping freed twice")

// Free implements xport.MR: no check passes from now on; the LMR goes once
// the ops let through are over (or the node closes). A peer that has not
// ended them within ConnectTimeout loses the connections they are on.
func (m *datMR) Free() error {
	t := &m.dn.mrs
	t.mu.Lock()
	if m.freed {
		t.mu.Unlock()
		return errDatMRFreed
	}
	m.freed = true
	delete(t.mrs, m.rkey)
	if len(m.lessees) > 0 {
		// The event goroutine sends the revokes; the revoked records
		// that answer them unpin.
		revokes := make([]*datRevoke, 0, len(m.lessees))
		for e := range m.lessees {
			revokes = append(revokes, &datRevoke{e: e, rkey: m.rkey})
		}
		t.mu.Unlock()
		for _, x := range revokes {
			if m.dn.evd.PostSE(x) != nil {
				break // closing
			}
		}
		t.mu.Lock()
	}
	if m.pins > 0 {
		expired, reset := false, false
		timer := time.AfterFunc(m.dn.cfg.ConnectTimeout, func() {
			t.mu.Lock()
			expired = true
			t.cond.Broadcast()
			t.mu.Unlock()
		})
		for m.pins > 0 && !m.dn.closing.Load() {
			if expired && !reset {
				reset = true
				eps := make([]*datEP, 0, len(m.holders))
				for e := range m.holders {
					eps = append(eps, e)
				}
				t.mu.Unlock()
				for _, e := range eps {
					e.ep.Disconnect(dat.CloseAbrupt) // its retirement unpins
				}
				t.mu.Lock()
				continue
			}
			t.cond.Wait()
		}
		timer.Stop()
	}
	t.mu.Unlock()
	return m.l.Free()
}

var errDatMRAddr = errors.New("rds dat: memory above the addresses a cookie can announce")

// RegisterMR implements xport.RDMACapable.
func (dn *datNode) RegisterMR(mem []byte, write, useOnce bool) (xport.MR, error) {
	priv := dat.MemPrivLocalRead | dat.MemPrivRemoteRead
	if write {
		priv |= dat.MemPrivLocalWrite | dat.MemPrivRemoteWrite
	}
	l, err := lmr.Create(dn.ia, dn.pz, mem, priv, dn.mapVAType())
	if err != nil {
		return nil, err
	}
	a := uint64(l.Addr())
	if a+uint64(len(mem)) > wire.MaxRDMAAddr {
		l.Free()
		return nil, errDatMRAddr
	}
	m := &datMR{dn: dn, l: l, rkey: uint32(l.RMRContext()), addr: a, n: uint64(len(mem)),
		write: write, useOnce: useOnce, zb: dn.mapVAType() == dat.VATypeZB}
	t := &dn.mrs
	t.mu.Lock()
	if t.mrs == nil {
		t.mrs = make(map[uint32]*datMR)
		t.cond.L = &t.mu
	}
	t.mrs[m.rkey] = m
	t.mu.Unlock()
	return m, nil
}

// admit answers a check request that arrived on e: the mapping it may
// use, pinned, or nil if the op must fail with a remote access error.
func (t *datMRTable) admit(c wire.RDMACheck, e *datEP) *datMR {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.mrs[c.RKey()]
	if m == nil || (c.Write() && !m.write) || (m.useOnce && m.used) {
		return nil
	}
	a, n := c.Address(), uint64(c.Length())
	if n == 0 || a < m.addr || a-m.addr > m.n || n > m.n-(a-m.addr) {
		return nil
	}
	m.pins++
	m.used = true
	if m.holders == nil {
		m.holders = make(map[*datEP]int, 1)
	}
	m.holders[e]++
	return m
}

// isUseOnce reports whether rkey names a live use-once mapping.
func (t *datMRTable) isUseOnce(rkey uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.mrs[rkey]
	return m != nil && m.useOnce
}

// unpin ends the hold of one op on e on m.
func (t *datMRTable) unpin(m *datMR, e *datEP) {
	t.mu.Lock()
	if m.holders[e]--; m.holders[e] <= 0 {
		delete(m.holders, e)
	}
	if m.pins--; m.pins == 0 {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// lend records that e holds a lease on m (its pin taken by admit).
func (t *datMRTable) lend(m *datMR, e *datEP) {
	t.mu.Lock()
	if m.lessees == nil {
		m.lessees = make(map[*datEP]bool, 1)
	}
	m.lessees[e] = true
	t.mu.Unlock()
}

// unlend ends e's lease on m.
func (t *datMRTable) unlend(m *datMR, e *datEP) {
	t.mu.Lock()
	delete(m.lessees, e)
	t.mu.Unlock()
	t.unpin(m, e)
}

// wakeAll releases every Free waiting for pins (the node is closing).
func (t *datMRTable) wakeAll() {
	t.mu.Lock()
	if t.cond.L != nil {
		t.cond.Broadcast()
	}
	t.mu.Unlock()
}

// Local registrations: an op's buffers are registered as LMRs, and the
// registrations are kept for the next ops on the same memory (a server
// reusing its buffers pays the registration once), in a small cache of
// the most recently used ranges. A cached LMR keeps Go heap memory from
// the garbage collector until it is evicted or the node closes, so the
// cache is small: datLocalCacheSize ranges, at most RDMALimits.MaxBytes
// each. An entry is freed when it is evicted and no work request uses
// it.
//
// Memory outside the Go heap is not kept alive that way: it can be
// unmapped and another mapping placed at the same address, which a
// lookup by address would take for the old one (and on a device whose
// MR pins the old pages, the op would move the wrong memory). So the
// cache subscribes to the module's unmap notices (memhook: verbs.Mem's
// Free, the daemon's shared regions) and evicts every entry overlapping
// a range about to be unmapped. Memory the application maps and unmaps
// itself is not announced: it must not be unmapped while the node may
// still hold a registration on it, that is until the node closes.

const datLocalCacheSize = 32

type datLocal struct {
	l    *lmr.LMR
	base uintptr
	n    int
	refs int // work requests using it, plus one while cached
}

type datLocalCache struct {
	mu    sync.Mutex
	ents  []*datLocal // least recently used first
	drops uint64      // unmapped ranges announced
	sub   *memhook.Subscription
}

// watch subscribes the cache to unmap notices until clear.
func (c *datLocalCache) watch() {
	c.sub = memhook.Subscribe(c.drop)
}

// get returns a registration covering b, with a reference for one work
// request, and b's offset in it.
func (c *datLocalCache) get(dn *datNode, b []byte) (*datLocal, int, error) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	c.mu.Lock()
	for i, x := range c.ents {
		if base >= x.base && base-x.base <= uintptr(x.n) && uintptr(len(b)) <= uintptr(x.n)-(base-x.base) {
			copy(c.ents[i:], c.ents[i+1:])
			c.ents[len(c.ents)-1] = x
			x.refs++
			c.mu.Unlock()
			return x, int(base - x.base), nil
		}
	}
	drops := c.drops
	c.mu.Unlock()
	l, err := lmr.Create(dn.ia, dn.pz, b, dat.MemPrivLocalRead|dat.MemPrivLocalWrite, dat.VATypeVA)
	if err != nil {
		return nil, 0, err
	}
	x := &datLocal{l: l, base: base, n: len(b), refs: 1}
	var old *datLocal
	c.mu.Lock()
	// An unmap announced meantime may have been b's (an op racing the
	// free of its own memory): serve this op, but cache nothing that
	// may already be stale.
	if c.drops == drops {
		x.refs++
		if len(c.ents) == datLocalCacheSize {
			old = c.ents[0]
			copy(c.ents, c.ents[1:])
			c.ents = c.ents[:len(c.ents)-1]
		}
		c.ents = append(c.ents, x)
	}
	c.mu.Unlock()
	if old != nil {
		c.put(old)
	}
	return x, 0, nil
}

// put drops one reference; the last one frees the LMR.
func (c *datLocalCache) put(x *datLocal) {
	c.mu.Lock()
	x.refs--
	last := x.refs == 0
	c.mu.Unlock()
	if last {
		x.l.Free()
	}
}

// drop evicts every entry overlapping the n bytes at base, about to be
// unmapped (a memhook subscriber, so it runs in the unmapping
// goroutine, possibly after clear).
func (c *datLocalCache) drop(base, n uintptr) {
	end := base + n
	var gone []*datLocal
	c.mu.Lock()
	c.drops++
	kept := c.ents[:0]
	for _, x := range c.ents {
		if x.base < end && base < x.base+uintptr(x.n) {
			gone = append(gone, x)
		} else {
			kept = append(kept, x)
		}
	}
	clear(c.ents[len(kept):])
	c.ents = kept
	c.mu.Unlock()
	for _, x := range gone {
		c.put(x)
	}
}

// clear ends the subscription and drops the cache's references (the
// node is closing).
func (c *datLocalCache) clear() {
	if c.sub != nil {
		c.sub.Unsubscribe()
	}
	c.mu.Lock()
	ents := c.ents
	c.ents = nil
	c.mu.Unlock()
	for _, x := range ents {
		c.put(x)
	}
}
