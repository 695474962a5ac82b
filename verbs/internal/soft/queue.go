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
type recvRing struct {
	slots   []RecvWQE // len is a power of two
	depth   int       // the most receives queued; <= len(slots)
	head, n int
}

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
	w := &r.slots[(r.head+r.n)&(len(r.slots)-1)]
	w.ID = wr.ID
	w.NumSGE = copySGL(&w.SGL, wr.SGL)
	w.Len = verbs.SGLLen(wr.SGL)
	r.n++
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
	r.head = (r.head + 1) & (len(r.slots) - 1)
	r.n--
	return true
}

// resize gives the ring depth n, keeping what it holds (at most n).
func (r *recvRing) resize(n int) {
	slots := make([]RecvWQE, ringSize(n))
	for i := 0; i < r.n; i++ {
		slots[i] = r.slots[(r.head+i)&(len(r.slots)-1)]
	}
	r.slots, r.depth, r.head = slots, n, 0
}

// checkRecvSGL validates a receive's scatter list against pd.
func checkRecvSGL(d *Device, pd *PD, sgl []verbs.SGE) error {
	for i := range sgl {
		if f := d.checkLocal(pd, &sgl[i], true); f != FaultNone {
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
// copies on the region's access count.
func (d *Device) checkLocal(pd *PD, sge *verbs.SGE, write bool) Fault {
	need := verbs.Access(0)
	if write {
		need = verbs.AccessLocalWrite
	}
	r := d.stags.lookup(sge.LKey)
	if r == nil || r.mw != nil {
		return FaultSTag
	}
	_, f := r.span(pd, sge.Addr, uint64(sge.Length), need)
	return f
}
