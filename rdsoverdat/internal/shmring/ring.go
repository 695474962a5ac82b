package shmring

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"sync/atomic"
)

// Ring is one end of a single-producer single-consumer ring of
// variable-length records in shared memory. One process creates it
// (Create) and passes Files to the other, which attaches (Attach); then
// one side produces (TryWrite, Write, Reserve/Commit) and the other
// consumes (TryRead, Read, Peek/Release). Traffic both ways takes two
// rings.
//
// At most one goroutine at a time may produce and one consume on a Ring;
// Close, Shutdown and Stats may be called from any goroutine at any time.
type Ring struct {
	mem  []byte // the whole mapping
	data []byte // the data area, capacity bytes
	cap  uint64
	mask uint64
	sh   shared

	memf    *os.File
	dataEv  *evfd // producer signals, consumer waits: records available
	spaceEv *evfd // consumer signals, producer waits: space available

	// Producer state, owned by the producing goroutine.
	wpos     uint64 // next byte to commit; published in sh.wpos
	rposSeen uint64 // last validated sh.rpos
	resvN    int    // payload bytes reserved, -1 without a reservation
	resvPad  uint64 // padding bytes before the reserved record
	resvAt   uint64 // index of the reserved record's header
	need     uint64 // bytes the last reserve needed free
	resvRef  bool   // the reservation holds a reference until Commit

	// Consumer state, owned by the consuming goroutine.
	rpos     uint64 // next byte to read; published in sh.rpos
	wposSeen uint64 // last validated sh.wpos
	peekSize uint64 // bytes of the peeked record, 0 without one
	peekRef  bool   // Peek's record holds a reference until Release

	// refs counts the owner's reference (dropped by Close) and the calls
	// in progress; the last to leave unmaps, so that Close never waits
	// for a call blocked on a hostile peer and no call touches unmapped
	// memory.
	refs    atomic.Int64
	closed  atomic.Bool // Close was called
	shut    atomic.Bool // Shutdown was called: the peer is gone
	corrupt atomic.Bool // the shared memory was found corrupt
	signals atomic.Uint64
	sleeps  atomic.Uint64
}

// refsDead marks a ring whose last reference is gone: later acquires
// see a negative count and back off.
const refsDead = -1 << 40

// Stats counts a ring end's wake-ups.
type Stats struct {
	// Signals is the eventfd writes this end made to wake the peer.
	Signals uint64
	// Sleeps is the times this end blocked on its eventfd.
	Sleeps uint64
}

// Create makes a ring whose data area holds capacity bytes, rounded up
// to a power of two of at least MinCapacity; at most MaxCapacity. The
// largest record is MaxRecord: half the capacity less a header, so that
// a record always fits an empty ring wherever the indexes stand.
func Create(capacity int) (*Ring, error) {
	if capacity <= 0 || capacity > MaxCapacity {
		return nil, fmt.Errorf("%w: capacity %d not in 1..%d", ErrInvalid, capacity, MaxCapacity)
	}
	c := max(capacity, MinCapacity)
	c = 1 << bits.Len(uint(c-1))
	f, mem, err := newMemfd("shmring", headerSize+c)
	if err != nil {
		return nil, err
	}
	binary.NativeEndian.PutUint32(mem[offMagic:], ringMagic)
	binary.NativeEndian.PutUint32(mem[offVersion:], ringVersion)
	binary.NativeEndian.PutUint64(mem[offCapacity:], uint64(c))
	dataEv, err := newEventfd()
	if err != nil {
		closeAll(mem, f)
		return nil, err
	}
	spaceEv, err := newEventfd()
	if err != nil {
		closeAll(mem, f, dataEv.f)
		return nil, err
	}
	return newRing(mem, uint64(c), f, dataEv, spaceEv), nil
}

// Attach maps the ring whose Files another process sent. It takes the
// files over: they are closed when Attach fails, and with the Ring
// otherwise. It checks what a hostile peer could get wrong: the memfd
// must be sealed against shrinking, its header must describe a data
// area inside the file, the other two files must be eventfds.
func Attach(files []*os.File) (*Ring, error) {
	r, err := attach(files)
	for _, f := range files {
		f.Close()
	}
	return r, err
}

func attach(files []*os.File) (*Ring, error) {
	if len(files) != 3 {
		return nil, fmt.Errorf("%w: %d files, a ring has 3", ErrBadFiles, len(files))
	}
	size, err := sealedSize(files[0])
	if err != nil {
		return nil, err
	}
	if size < headerSize+MinCapacity || size > headerSize+MaxCapacity {
		return nil, fmt.Errorf("%w: ring memfd of %d bytes", ErrBadFiles, size)
	}
	memf, err := dupFile(files[0])
	if err != nil {
		return nil, err
	}
	mem, err := mapShared(int(memf.Fd()), int(size))
	if err != nil {
		memf.Close()
		return nil, err
	}
	// The header is read once: a peer changing it later changes nothing
	// here.
	magic := binary.NativeEndian.Uint32(mem[offMagic:])
	version := binary.NativeEndian.Uint32(mem[offVersion:])
	c := binary.NativeEndian.Uint64(mem[offCapacity:])
	if magic != ringMagic || version != ringVersion {
		closeAll(mem, memf)
		return nil, fmt.Errorf("%w: ring header magic %#x version %d", ErrBadFiles, magic, version)
	}
	if c < MinCapacity || c > MaxCapacity || c&(c-1) != 0 || headerSize+c > uint64(size) {
		closeAll(mem, memf)
		return nil, fmt.Errorf("%w: ring capacity %d in a memfd of %d bytes", ErrBadFiles, c, size)
	}
	dataEv, err := attachEventfd(files[1])
	if err != nil {
		closeAll(mem, memf)
		return nil, err
	}
	spaceEv, err := attachEventfd(files[2])
	if err != nil {
		closeAll(mem, memf, dataEv.f)
		return nil, err
	}
	r := newRing(mem, c, memf, dataEv, spaceEv)
	w, rp := r.sh.wpos.Load(), r.sh.rpos.Load()
	if w-rp > c || w%8 != 0 || rp%8 != 0 {
		r.Close()
		return nil, fmt.Errorf("%w: ring positions write %d read %d", ErrCorrupt, w, rp)
	}
	r.wpos, r.rposSeen, r.rpos, r.wposSeen = w, rp, rp, w
	return r, nil
}

func newRing(mem []byte, c uint64, memf *os.File, dataEv, spaceEv *evfd) *Ring {
	r := &Ring{
		mem:     mem,
		data:    mem[headerSize : headerSize+c : headerSize+c],
		cap:     c,
		mask:    c - 1,
		sh:      sharedAt(mem),
		memf:    memf,
		dataEv:  dataEv,
		spaceEv: spaceEv,
		resvN:   -1,
	}
	r.refs.Store(1)
	dataEv.taken = func() bool { return r.sh.consWait.Load() != 1 }
	spaceEv.taken = func() bool { return r.sh.prodWait.Load() == 0 }
	for _, e := range []*evfd{dataEv, spaceEv} {
		flag := r.sh.consWait
		if e == spaceEv {
			flag = r.sh.prodWait
		}
		e.kick = func() {
			if r.acquire() {
				flag.Store(0) // for a wait whose first look is still to come
				e.signal()
				r.release()
			}
		}
	}
	return r
}

// Capacity returns the size of the data area.
func (r *Ring) Capacity() int { return int(r.cap) }

// MaxRecord returns the largest record the ring carries.
func (r *Ring) MaxRecord() int { return int(r.cap/2) - recHeader }

// Files returns the files to send to the peer (SendFiles): the memfd and
// the two eventfds, in the order Attach expects. They stay the Ring's:
// do not close them, and do not call their Fd method (it would make the
// eventfds blocking, for the peer too).
func (r *Ring) Files() []*os.File {
	return []*os.File{r.memf, r.dataEv.f, r.spaceEv.f}
}

// Stats returns this end's wake-up counts.
func (r *Ring) Stats() Stats {
	return Stats{Signals: r.signals.Load(), Sleeps: r.sleeps.Load()}
}

// Close closes this end: the peer's calls, blocked or not, then fail
// with ErrPeerClosed (its consumer first reads what was committed), and
// this end's with ErrClosed. The mapping goes when the last call in
// progress returns. A second Close returns ErrClosed.
func (r *Ring) Close() error {
	if r.closed.Swap(true) {
		return ErrClosed
	}
	r.sh.closed.Store(1)
	// Taken flags, so that a peer's wait whose first look is still to
	// come ends on them (wait.go).
	r.sh.consWait.Store(0)
	r.sh.prodWait.Store(0)
	r.dataEv.signal()
	r.spaceEv.signal()
	r.dataEv.interrupt()
	r.spaceEv.interrupt()
	r.release()
	return nil
}

// Shutdown declares the peer gone (its control connection ended, it
// died): this end's calls stop waiting and fail with ErrPeerClosed,
// after the consumer has read what was committed. Close is still
// needed to free the ring.
func (r *Ring) Shutdown() {
	if r.shut.Swap(true) {
		return
	}
	if !r.acquire() {
		return
	}
	r.dataEv.interrupt()
	r.spaceEv.interrupt()
	r.release()
}

// acquire takes a reference for a call; false if the ring is closed.
func (r *Ring) acquire() bool {
	if r.refs.Add(1) <= 0 {
		r.refs.Add(-1)
		return false
	}
	if r.closed.Load() {
		r.release()
		return false
	}
	return true
}

func (r *Ring) release() {
	if r.refs.Add(-1) == 0 && r.refs.CompareAndSwap(0, refsDead) {
		r.unmap()
	}
}

func (r *Ring) unmap() {
	closeAll(r.mem, r.memf, r.dataEv.f, r.spaceEv.f)
	r.mem, r.data = nil, nil
}

// peerGone reports whether the peer closed or was declared gone.
func (r *Ring) peerGone() bool {
	return r.shut.Load() || r.sh.closed.Load() != 0
}

// fail marks the ring corrupt and returns the error to report.
func (r *Ring) fail(format string, args ...any) error {
	r.corrupt.Store(true)
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
