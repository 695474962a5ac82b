package shmring

import (
	"context"
	"fmt"
)

// TryRead copies the next record into buf and returns its length, if a
// record is there now and fits. False means no record, or a reason Read
// would report (closed, peer gone, corrupt, buf too short).
func (r *Ring) TryRead(buf []byte) (int, bool) {
	if !r.acquire() {
		return 0, false
	}
	defer r.release()
	rec, ok, err := r.next()
	if !ok || err != nil || len(rec) > len(buf) {
		return 0, false
	}
	n := copy(buf, rec)
	r.releaseRec()
	return n, true
}

// Read copies the next record into buf, waiting for one until ctx ends,
// and returns its length. A record longer than buf stays in the ring
// and Read returns its length with ErrShortBuffer. After the peer closed
// it returns the records committed before, then ErrPeerClosed.
func (r *Ring) Read(ctx context.Context, buf []byte) (int, error) {
	if !r.acquire() {
		return 0, ErrClosed
	}
	defer r.release()
	rec, err := r.nextWait(ctx)
	if err != nil {
		return 0, err
	}
	if len(rec) > len(buf) {
		return len(rec), fmt.Errorf("%w: record of %d bytes, buffer of %d", ErrShortBuffer, len(rec), len(buf))
	}
	n := copy(buf, rec)
	r.releaseRec()
	return n, nil
}

// TryPeek returns the next record in place, if one is there now; it
// stays in the ring until Release. The bytes are shared memory that a
// hostile peer can change at any time: copy what must be checked before
// checking it. They stay mapped until Release, even if Close comes in
// between: call Release after every Peek that succeeded, or the mapping
// outlives Close.
func (r *Ring) TryPeek() ([]byte, bool) {
	if !r.acquire() {
		return nil, false
	}
	rec, ok, err := r.next()
	if !ok || err != nil {
		r.release()
		return nil, false
	}
	r.holdPeek()
	return rec, true
}

// Peek is TryPeek waiting for a record until ctx ends, failing as Read
// does.
func (r *Ring) Peek(ctx context.Context) ([]byte, error) {
	if !r.acquire() {
		return nil, ErrClosed
	}
	rec, err := r.nextWait(ctx)
	if err != nil {
		r.release()
		return nil, err
	}
	r.holdPeek()
	return rec, nil
}

// holdPeek keeps the reference of the call that peeked until Release.
func (r *Ring) holdPeek() {
	if r.peekRef {
		r.release() // the earlier Peek's reference serves
	}
	r.peekRef = true
}

// Release frees the record Peek or TryPeek returned, whose bytes must
// not be used after. Without one it does nothing.
//
// The peeked record's reference keeps the ring mapped, so Release takes
// none of its own.
func (r *Ring) Release() {
	if !r.peekRef {
		return
	}
	if r.closed.Load() {
		r.dropPeek()
		return
	}
	r.releaseRec()
}

// Pending reports whether a record has been committed and not yet
// released, from the positions in shared memory alone: any goroutine may
// ask, to learn whether the consumer has work, without consuming.
func (r *Ring) Pending() bool {
	if !r.acquire() {
		return false
	}
	defer r.release()
	return r.sh.wpos.Load() != r.sh.rpos.Load()
}

// dropPeek forgets the peeked record and the reference it holds.
func (r *Ring) dropPeek() {
	r.peekSize = 0
	if r.peekRef {
		r.peekRef = false
		r.release()
	}
}

// nextWait returns the next record, sleeping while the ring is empty.
func (r *Ring) nextWait(ctx context.Context) ([]byte, error) {
	armed := false
	for {
		rec, ok, err := r.next()
		if err != nil || ok {
			if armed {
				r.sh.consWait.CompareAndSwap(1, 0)
			}
			return rec, err
		}
		if !armed {
			// Announce the sleep, then look again (see wait.go).
			r.sh.consWait.Store(1)
			armed = true
			continue
		}
		r.sleeps.Add(1)
		if err := r.dataEv.wait(ctx); err != nil {
			r.sh.consWait.CompareAndSwap(1, 0)
			return nil, err
		}
		armed = false
	}
}

// next returns the next record without waiting; false when there is
// none. Everything read from the shared memory is checked against the
// capacity before it is used, and read once.
func (r *Ring) next() ([]byte, bool, error) {
	switch {
	case r.closed.Load():
		return nil, false, ErrClosed
	case r.corrupt.Load():
		return nil, false, ErrCorrupt
	}
	r.peekSize = 0
	for skipped := false; ; skipped = true {
		if r.wposSeen == r.rpos {
			// Whether the peer is gone is read before its last write
			// position, so that no record committed before it closed is
			// lost.
			gone := r.peerGone()
			w := r.sh.wpos.Load()
			if w-r.rpos > r.cap || w%8 != 0 {
				return nil, false, r.fail("write position %d against read position %d", w, r.rpos)
			}
			r.wposSeen = w
			if w == r.rpos {
				if gone {
					return nil, false, ErrPeerClosed
				}
				return nil, false, nil
			}
		}
		avail := r.wposSeen - r.rpos
		idx := r.rpos & r.mask
		h := recHdr(r.data[idx : idx+recHeader])
		n, kind := uint64(h.length()), h.kind()
		switch kind {
		case kindPad:
			skip := r.cap - idx
			if idx == 0 || skipped || skip > avail {
				return nil, false, r.fail("padding of %d bytes at %d with %d bytes committed", skip, idx, avail)
			}
			r.rpos += skip
			r.publishRpos()
			continue
		case kindData:
			size := uint64(recSize(0)) + (n+7)&^7
			if n > uint64(r.MaxRecord()) || size > avail || idx+size > r.cap {
				return nil, false, r.fail("record of %d bytes at %d with %d bytes committed", n, idx, avail)
			}
			r.peekSize = size
			at := idx + recHeader
			return r.data[at : at+n : at+n], true, nil
		default:
			return nil, false, r.fail("record kind %d at %d", kind, idx)
		}
	}
}

// releaseRec frees the record next returned.
func (r *Ring) releaseRec() {
	if r.peekSize == 0 {
		return
	}
	r.rpos += r.peekSize
	r.publishRpos()
	r.dropPeek()
}

// publishRpos makes freed room visible and wakes a sleeping producer
// once half the ring is free, or the record it waits to write fits if
// that is more. A producer behind a busy consumer (a stream of small
// records into a full ring) was woken for each record read as soon as
// its own fitted, and so wrote one record a wake-up; from half the ring
// on it writes many. It is never left asleep beside room it could use
// for long: a consumer stops reading only when it has read everything
// committed (the daemon's reader before it sleeps, a client's call
// until its reply, which reads on while it waits), and the release that
// empties the ring frees all of it.
func (r *Ring) publishRpos() {
	r.sh.rpos.Store(r.rpos)
	want := r.sh.prodWait.Load()
	if want == 0 {
		return
	}
	// A write position out of bounds (a hostile peer) makes free
	// wrap to a large number: then the producer is woken.
	free := r.cap - (r.sh.wpos.Load() - r.rpos)
	if free < min(max(uint64(want), r.cap/2), r.cap) {
		return
	}
	if r.sh.prodWait.CompareAndSwap(want, 0) {
		r.signals.Add(1)
		r.spaceEv.signal()
	}
}
