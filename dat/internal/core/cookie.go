package core

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/dat"
)

// A verbs work request ID names the DTO it was posted for without any
// allocation or map: the owner (an EP or an SRQ) by index and generation
// in the IA's owner table, the queue, and the request: its seq in an EP
// queue's slot ring (low 31 bits), or its slot in an SRQ's cookie table.
// The completion maps back through the same path.
//
//	63          40 39   32  31   30           0
//	| owner index | gen  | recv | seq or slot  |
const (
	wrOwnerShift = 40
	wrGenShift   = 32
	wrRecvBit    = 1 << 31
	wrSlotMask   = wrRecvBit - 1
	maxOwners    = 1 << 24
)

// slotBind marks, in a slot's flags, the slot of an RMR bind or unbind
// (op DTOBindMW): a bit above every completion flag, so that Take tells a
// completion it hands out as it is, a DTO neither suppressed nor a bind,
// by one test of the flags, where it tested the flags and the op.
const slotBind dat.CompletionFlags = 0x80

// cookieSlot is what a DTO's completion needs to become a DAT event.
type cookieSlot struct {
	seq    uint32 // the request's seq (slot rings; 0 in cookie tables)
	cookie dat.DTOCookie
	op     dat.DTOOp
	flags  dat.CompletionFlags
	length uint32 // bytes posted (sends and writes report it)
	rmr    *RMR   // RMR bind and unbind (op DTOBindMW), until the completion is translated
}

// cookieTable is an SRQ's preallocated slots: one per DTO that is posted
// and whose completion has not been handed to the consumer yet. (An EP's
// own queues complete in posting order and use a slotRing instead; an
// SRQ's buffers are taken by several EPs and dequeued from several EVDs
// in any order, so its slots need a free list.) Bounding
// that number by the queue's size is also what keeps the EVD's CQ from
// ever overflowing (see EVD).
//
// put takes mu; peek, on every completion, takes nothing: a slot is
// written by get before its work request is posted, and the verbs
// layer's queues order that write before the completion that names the
// slot. The slot array is replaced whole (atomically) when it grows.
//
// get runs under the SRQ's postMu, as every post does, and takes its
// slot from own, a batch of free slots moved there under mu (getSlow),
// so that a post of one buffer, once per message received, takes the
// table's lock once per batch instead of every time. A slot in own is
// free, but already counted against the limit: used slots and own
// together never exceed it. Whatever reads or changes the limit or the
// count in use (setLimit, inUse, Query) holds postMu too.
//
// An SRQ's table can be resized: it grows by reallocating (resize is off
// the hot path) and shrinks only logically, by lowering limit, so that
// slot numbers held by outstanding completions stay valid.
type cookieTable struct {
	mu    sync.Mutex
	slots atomic.Pointer[[]cookieSlot] // written under mu and postMu
	free  []uint32                     // stack of free slot numbers; guarded by mu
	limit int                          // slots that may be in use at once, <= len(slots); guarded by mu
	own   []uint32                     // free slots get takes without mu; guarded by postMu
}

// cookieBatch is how many free slots getSlow moves to own at most.
const cookieBatch = 32

func (t *cookieTable) init(n int) {
	slots := make([]cookieSlot, n)
	t.slots.Store(&slots)
	t.free = make([]uint32, n)
	for i := range t.free {
		t.free[i] = uint32(n - 1 - i)
	}
	t.limit = n
	t.own = make([]uint32, 0, cookieBatch)
}

// usedLocked returns the number of slots taken; mu and postMu are held.
func (t *cookieTable) usedLocked() int { return len(*t.slots.Load()) - len(t.free) - len(t.own) }

// get takes a slot; false when limit slots are in use. postMu is held.
func (t *cookieTable) get(s cookieSlot) (uint32, bool) {
	n := len(t.own)
	if n == 0 {
		return t.getSlow(s)
	}
	i := t.own[n-1]
	t.own = t.own[:n-1]
	(*t.slots.Load())[i] = s
	return i, true
}

// getSlow refills own from free, as far as the limit allows, and takes
// a slot from it. postMu is held and own is empty.
func (t *cookieTable) getSlow(s cookieSlot) (uint32, bool) {
	t.mu.Lock()
	k := min(t.limit-t.usedLocked(), len(t.free), cookieBatch)
	if k <= 0 {
		t.mu.Unlock()
		return 0, false
	}
	t.own = append(t.own, t.free[len(t.free)-k:]...)
	t.free = t.free[:len(t.free)-k]
	t.mu.Unlock()
	return t.get(s)
}

// giveBackLocked returns own's slots to free; mu and postMu are held.
func (t *cookieTable) giveBackLocked() {
	t.free = append(t.free, t.own...)
	t.own = t.own[:0]
}

// put returns slot i.
func (t *cookieTable) put(i uint32) {
	t.mu.Lock()
	(*t.slots.Load())[i] = cookieSlot{}
	t.free = append(t.free, i)
	t.mu.Unlock()
}

// peek copies slot i; false if there is no such slot. The caller holds
// a completion naming the slot (see cookieTable).
func (t *cookieTable) peek(i uint32) (cookieSlot, bool) {
	slots := *t.slots.Load()
	if int(i) >= len(slots) {
		return cookieSlot{}, false
	}
	return slots[i], true
}

// inUse returns the number of slots taken. postMu is held.
func (t *cookieTable) inUse() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.usedLocked()
}

// setLimit makes n slots usable at once, growing the table if needed; it
// fails (false) when more than n are in use. postMu is held.
func (t *cookieTable) setLimit(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.giveBackLocked() // own was counted against the old limit
	if n < t.usedLocked() {
		return false
	}
	if old := *t.slots.Load(); n > len(old) {
		slots := make([]cookieSlot, n)
		copy(slots, old)
		free := make([]uint32, len(t.free), n)
		copy(free, t.free)
		for i := n - 1; i >= len(old); i-- {
			free = append(free, uint32(i))
		}
		t.slots.Store(&slots)
		t.free = free
	}
	t.limit = n
	return true
}

// limitNow returns the limit.
func (t *cookieTable) limitNow() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// size returns the number of slots (the most that can ever be in use).
func (t *cookieTable) size() int { return len(*t.slots.Load()) }

// owner is an entry of the IA's owner table: the slot rings of one EP,
// or the receive table of one SRQ.
type owner struct {
	id    uint64 // index<<wrOwnerShift | gen<<wrGenShift
	ep    *EP
	srq   *SRQ
	req   slotRing    // EP
	recv  slotRing    // EP without an SRQ
	table cookieTable // SRQ
}

// ownerTable maps the owner index of a work request ID to its owner: read
// on every completion without a lock (see atomicTable); writers (EP and
// SRQ create and free) take mu.
type ownerTable struct {
	atomicTable[owner]
	mu   sync.Mutex
	n    uint32   // indexes handed out; index 0 is never used; guarded by mu
	free []uint32 // indexes to reuse; guarded by mu
}

func (t *ownerTable) init() {
	t.n = 1 // a zero work request ID names nothing
}

// addOwner installs o and sets its id.
func (ia *IA) addOwner(o *owner) error {
	return ia.addOwnerOp("ep_create", o)
}

func (ia *IA) addOwnerOp(op string, o *owner) error {
	t := &ia.owners
	t.mu.Lock()
	defer t.mu.Unlock()
	var idx uint32
	if n := len(t.free); n > 0 {
		idx, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.n >= maxOwners {
			return dat.NewError(op, dat.InsufficientResources, dat.ResourceTEP)
		}
		idx = t.n
		t.n++
	}
	e := t.grow(uint64(idx))
	gen := uint64(1)
	if prev := e.Load(); prev != nil {
		gen = (prev.id>>wrGenShift + 1) & 0xff
	}
	o.id = uint64(idx)<<wrOwnerShift | gen<<wrGenShift
	e.Store(o)
	return nil
}

// removeOwner retires o: completions still carrying its id are dropped.
// The entry keeps o's id (in a tombstone) so that the next owner of the
// index takes a new generation. The index goes to a new owner only once
// the caller has destroyed o's QP or SRQ and the EVDs it completes to
// have dropped what came of it (EVD.Purge), and calls reuseOwnerIndex:
// the generation has 8 bits, and while one goroutine frees an EP others
// may create and free 256, the last of which would take the flushes of
// the first's QP, still to come, for its own completions.
func (ia *IA) removeOwner(o *owner) {
	t := &ia.owners
	t.mu.Lock()
	idx := uint32(o.id >> wrOwnerShift)
	if e := t.at(uint64(idx)); e != nil && e.Load() == o {
		e.Store(&owner{id: o.id | ownerTombstone})
	}
	t.mu.Unlock()
	// Gone from the table, o's queues can no longer become an EVD's
	// lastQ (lastQueueLocked): forgotten now, they are never taken from
	// again, though completions of theirs (the flushes of the QP's
	// destruction) may still come.
	o.req.forget()
	o.recv.forget()
}

// reuseOwnerIndex lets a new owner have the index of o, which
// removeOwner retired, and whose completions can come no more.
func (ia *IA) reuseOwnerIndex(o *owner) {
	t := &ia.owners
	t.mu.Lock()
	idx := uint32(o.id >> wrOwnerShift)
	if e := t.at(uint64(idx)); e != nil && e.Load().id == o.id|ownerTombstone {
		e.Store(&owner{id: o.id | ownerTombstone | ownerReusable})
		t.free = append(t.free, idx)
	}
	t.mu.Unlock()
}

// ownerTombstone marks the id of a removed owner's tombstone: no live
// owner's id has it, so no work request ID matches a tombstone.
const ownerTombstone = 1

// ownerReusable marks a tombstone whose index is free again, so that it
// goes on the free list once.
const ownerReusable = 2

// lookupOwner returns the live owner of a work request ID.
func (ia *IA) lookupOwner(id uint64) *owner {
	if e := ia.owners.at(id >> wrOwnerShift); e != nil {
		if o := e.Load(); o != nil && o.id == id&^(1<<wrGenShift-1) {
			return o
		}
	}
	return nil
}
