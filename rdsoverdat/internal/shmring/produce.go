package shmring

import (
	"context"
	"fmt"
)

// TryWrite copies p into the ring as one record if there is room now.
// False means no room, or a reason Write would report (closed, peer
// gone, corrupt, too large).
func (r *Ring) TryWrite(p []byte) bool {
	if !r.acquire() {
		return false
	}
	defer r.release()
	ok, err := r.reserve(len(p))
	if !ok || err != nil {
		return false
	}
	copy(r.reserved(), p)
	r.commit(len(p))
	return true
}

// Write copies p into the ring as one record, waiting for room until ctx
// ends. It fails with ErrTooLarge beyond MaxRecord, ErrClosed,
// ErrPeerClosed, ErrCorrupt, or ctx's error.
func (r *Ring) Write(ctx context.Context, p []byte) error {
	if !r.acquire() {
		return ErrClosed
	}
	defer r.release()
	if err := r.reserveWait(ctx, len(p)); err != nil {
		return err
	}
	copy(r.reserved(), p)
	r.commit(len(p))
	return nil
}

// Reserve returns room for a record of up to n bytes in the ring itself,
// waiting for it until ctx ends; Commit publishes what was written
// there. Nothing is visible to the consumer before Commit, and a second
// Reserve replaces an uncommitted one. The slice is shared memory: the
// peer can read it (and, if hostile, write it) once committed.
//
// The slice stays mapped until Commit, even if Close comes in between
// (Commit then fails with ErrClosed): call Commit after every Reserve
// that succeeded, or the mapping outlives Close.
func (r *Ring) Reserve(ctx context.Context, n int) ([]byte, error) {
	if !r.acquire() {
		return nil, ErrClosed
	}
	if err := r.reserveWait(ctx, n); err != nil {
		r.release()
		return nil, err
	}
	if r.resvRef {
		r.release() // the replaced reservation's reference serves
	}
	r.resvRef = true
	return r.reserved(), nil
}

// TryReserve is Reserve without the wait: ok is false when the ring
// has no room for n bytes now. A producer that must not sleep (one
// serving other peers too) tries, and leaves the record to one that may
// wait when it fails.
func (r *Ring) TryReserve(n int) (p []byte, ok bool, err error) {
	if !r.acquire() {
		return nil, false, ErrClosed
	}
	if ok, err = r.reserve(n); !ok || err != nil {
		r.release()
		return nil, false, err
	}
	if r.resvRef {
		r.release() // the replaced reservation's reference serves
	}
	r.resvRef = true
	return r.reserved(), true, nil
}

// Abort forgets the reservation: nothing of it is published.
func (r *Ring) Abort() { r.dropReservation() }

// Commit publishes the first n bytes of the reservation as a record.
// The reservation's reference keeps the ring mapped, so Commit takes
// none of its own: a record costs the producer one reference, not two.
func (r *Ring) Commit(n int) error {
	if r.closed.Load() {
		r.dropReservation()
		return ErrClosed
	}
	if r.resvN < 0 || !r.resvRef {
		return fmt.Errorf("%w: commit without a reservation", ErrInvalid)
	}
	if n < 0 || n > r.resvN {
		return fmt.Errorf("%w: commit %d bytes of a %d-byte reservation", ErrInvalid, n, r.resvN)
	}
	r.commit(n)
	return nil
}

// dropReservation forgets the reservation and the reference it holds.
func (r *Ring) dropReservation() {
	r.resvN = -1
	if r.resvRef {
		r.resvRef = false
		r.release()
	}
}

// reserveWait reserves n bytes, sleeping while the ring is full.
func (r *Ring) reserveWait(ctx context.Context, n int) error {
	armed := false
	for {
		ok, err := r.reserve(n)
		if err != nil || ok {
			if armed {
				r.sh.prodWait.Store(0)
			}
			return err
		}
		if !armed {
			// Announce the sleep and the room needed, then look again:
			// the consumer either released before seeing the flag (the
			// look finds the room) or sees it and signals.
			r.sh.prodWait.Store(uint32(r.need))
			armed = true
			continue
		}
		r.sleeps.Add(1)
		if err := r.spaceEv.wait(ctx); err != nil {
			r.sh.prodWait.Store(0)
			return err
		}
		armed = false
	}
}

// reserve makes room for a record of n bytes without waiting: false when
// the ring is full.
func (r *Ring) reserve(n int) (bool, error) {
	switch {
	case r.closed.Load():
		return false, ErrClosed
	case r.corrupt.Load():
		return false, ErrCorrupt
	case r.peerGone():
		return false, ErrPeerClosed
	case n < 0 || n > r.MaxRecord():
		return false, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, r.MaxRecord())
	}
	size := uint64(recSize(n))
	idx := r.wpos & r.mask
	var pad uint64
	if r.cap-idx < size {
		pad = r.cap - idx
	}
	need := pad + size
	r.need = need
	if r.cap-(r.wpos-r.rposSeen) < need {
		rp := r.sh.rpos.Load()
		if r.wpos-rp > r.cap || rp%8 != 0 || rp-r.rposSeen > r.cap {
			return false, r.fail("read position %d against write position %d", rp, r.wpos)
		}
		r.rposSeen = rp
		if r.cap-(r.wpos-rp) < need {
			return false, nil
		}
	}
	r.resvN, r.resvPad, r.resvAt = n, pad, (idx+pad)&r.mask
	return true, nil
}

// reserved is the payload room of the current reservation.
func (r *Ring) reserved() []byte {
	at := r.resvAt + recHeader
	return r.data[at : at+uint64(r.resvN) : at+uint64(r.resvN)]
}

// commit publishes n bytes of the reservation and wakes a sleeping
// consumer.
func (r *Ring) commit(n int) {
	if r.resvPad > 0 {
		idx := r.wpos & r.mask
		recHdr(r.data[idx:]).set(uint32(r.resvPad-recHeader), kindPad)
	}
	recHdr(r.data[r.resvAt:]).set(uint32(n), kindData)
	r.wpos += r.resvPad + uint64(recSize(n))
	r.sh.wpos.Store(r.wpos)
	r.dropReservation()
	if r.sh.consWait.Load() != 0 && r.sh.consWait.CompareAndSwap(1, 0) {
		r.signals.Add(1)
		r.dataEv.signal()
	}
}
