package soft

import "github.com/godapl/godapl/verbs"

// MaxInline is the most data a send may carry inline (SendInline).
const MaxInline = 64

// SendWQE is a send work request as the engine keeps it: the caller's
// SendWR copied into a preallocated slot, plus the sequence number that
// names it to QP.CompleteSend.
type SendWQE struct {
	Seq        uint64
	ID         uint64
	Opcode     verbs.Opcode
	Flags      verbs.SendFlags
	NumSGE     int
	SGL        [verbs.MaxSGE]verbs.SGE
	RemoteAddr uint64
	RKey       uint32
	InvRKey    uint32
	Len        uint64 // total bytes of the SGL
	InlineLen  int    // > 0: the data was copied into Inline at post time
	Inline     [MaxInline]byte
	Signaled   bool

	done     bool
	status   verbs.WCStatus // preset for work the engine runs itself (bind, local invalidate); final once done
	byteLen  uint32         // an RDMA Read's length, once done
	isInline bool
	reg      *region // of SGL[0], checked at post, if it is the only SGE (send_region.go)
}

// SGEs returns the scatter/gather list.
func (w *SendWQE) SGEs() []verbs.SGE { return w.SGL[:w.NumSGE] }

// RecvWQE is a posted receive.
//
// The fields a receive of one SGE uses come first and the struct is padded
// to 128 bytes, so that in a ring slot on a 64-byte boundary they share a
// cache line: an SRQ cycles through its slots, and each take meets a slot
// last touched when the receive was posted.
type RecvWQE struct {
	ID     uint64
	NumSGE int
	Len    uint64 // total capacity
	SGL    [verbs.MaxSGE]verbs.SGE
	_      [8]byte
}

// SGEs returns the scatter list.
func (w *RecvWQE) SGEs() []verbs.SGE { return w.SGL[:w.NumSGE] }

// recvRing is a FIFO of receives with fixed capacity, depth. Like the
// CQ's ring its array is a power of two, indexed with a mask.
//
// The mask spans only as much of the array as the queue has needed
// (grow), not all of it: a ring of 1024 receives that never holds more
// than 80 then cycles through 128 slots, 16 KiB that stay in the cache,
// where walking the whole array took every receive from a slot written
// a thousand posts earlier, and posted into one as old (an SRQ shared by
// every connection of a node is sized for all of them and mostly holds
// one connection's share). It spans the least again when a receive is
// posted to an empty queue.
type recvRing struct {
	slots   []RecvWQE // len is a power of two
	depth   int       // the most receives queued; <= len(slots)
	mask    int       // the slots in use are slots[:mask+1]; mask+1 >= n
	head, n int
}

// recvRingMin is the least the mask spans (as long as the array has
// that many slots).
const recvRingMin = 16

// copySGL copies sgl (at most verbs.MaxSGE long, as the posts check)
// into dst and returns its length. The common list of one SGE is one
// store: copy would call memmove for it.
func copySGL(dst *[verbs.MaxSGE]verbs.SGE, sgl []verbs.SGE) int {
	if len(sgl) == 1 {
		dst[0] = sgl[0]
		return 1
	}
	return copy(dst[:], sgl)
}

func (r *recvRing) full() bool { return r.n == r.depth }

func (r *recvRing) push(wr *verbs.RecvWR) {
	if r.n == 0 {
		r.reset()
	} else if r.n > r.mask {
		r.grow()
	}
	w := &r.slots[(r.head+r.n)&r.mask]
	w.ID = wr.ID
	w.NumSGE = copySGL(&w.SGL, wr.SGL)
	w.Len = verbs.SGLLen(wr.SGL)
	r.n++
}

// grow doubles the slots in use, the queue filling those it has; the
// caller has checked that the array has room (n < depth). The queue
// holds slots[head:] and then, wrapped, slots[:head]; the wrapped part
// moves behind the first, where the doubled mask looks for it.
func (r *recvRing) grow() {
	size := r.mask + 1
	copy(r.slots[size:size+r.head], r.slots[:r.head])
	r.mask = 2*size - 1
}

func (r *recvRing) pop(w *RecvWQE) bool {
	if r.n == 0 {
		return false
	}
	// Only the elements in use: a whole slot is two cache lines, and a
	// receive of one SGE needs 40 bytes of the first.
	s := &r.slots[r.head]
	w.ID, w.NumSGE, w.Len = s.ID, s.NumSGE, s.Len
	copySGL(&w.SGL, s.SGL[:s.NumSGE])
	r.head = (r.head + 1) & r.mask
	r.n--
	return true
}

// reset empties the ring, its mask spanning the least again. Pop leaves
// this to the next push, as pop is inlined into the receive paths.
func (r *recvRing) reset() {
	r.head, r.n = 0, 0
	r.mask = min(recvRingMin, len(r.slots)) - 1
}

// resize gives the ring depth n, keeping what it holds (at most n).
func (r *recvRing) resize(n int) {
	slots := make([]RecvWQE, ringSize(n))
	for i := 0; i < r.n; i++ {
		slots[i] = r.slots[(r.head+i)&r.mask]
	}
	k := r.n
	r.slots, r.depth = slots, n
	r.reset()
	r.n = k
	// The mask spans at least what is held (mask+1 >= n), and no more
	// than the array: a ring resized to exactly what it holds is full.
	for r.n > r.mask+1 {
		r.mask = 2*r.mask + 1
	}
}

// checkRecvSGL validates a receive's scatter list against pd.
func checkRecvSGL(d *Device, pd *PD, sgl []verbs.SGE) error {
	for i := range sgl {
		if _, f := d.checkLocal(pd, &sgl[i], true); f != FaultNone {
			return f.Err()
		}
	}
	return nil
}

// resolveLocal checks a local SGE against pd: its lkey must name a valid
// MR (windows have no local access) of pd covering the range, writable if
// write is set. The caller releases the Hold when done with the memory.
func (d *Device) resolveLocal(pd *PD, sge *verbs.SGE, write bool) ([]byte, Hold, Fault) {
	need := verbs.Access(0)
	if write {
		need = verbs.AccessLocalWrite
	}
	// One acquire, whose lookup is also the check for a window: looking
	// the STag up first to refuse windows walked the table twice.
	r := d.stags.acquire(sge.LKey)
	if r == nil {
		return nil, Hold{}, FaultSTag
	}
	if r.mw != nil { // set before the region is published, never changed
		r.users.Add(-1)
		return nil, Hold{}, FaultSTag
	}
	return r.hold(pd, sge.Addr, uint64(sge.Length), need)
}

// checkLocal is resolveLocal for checks at post time, which copy nothing:
// it takes no hold, so posting does not contend with the provider's
// copies on the region's access count. It returns the region it checked
// (send_region.go keeps it for a one-SGE send's transmit).
func (d *Device) checkLocal(pd *PD, sge *verbs.SGE, write bool) (*region, Fault) {
	need := verbs.Access(0)
	if write {
		need = verbs.AccessLocalWrite
	}
	r := d.stags.lookup(sge.LKey)
	if r == nil || r.mw != nil {
		return nil, FaultSTag
	}
	_, f := r.span(pd, sge.Addr, uint64(sge.Length), need)
	return r, f
}
