package shmring

// Acknowledgements. Beside its records, a ring carries one word the
// consumer writes for the producer: a count of the consumer's own
// choosing (the daemon backend's count of messages read), which the
// producer reads whenever it wants to know it, with no record and no
// wake-up. A producer that must learn of the next change (it waits for
// one) sets the ack-wanted flag and reads the word again; a consumer
// that publishes a count and finds the flag set clears it and tells the
// producer by its own means (a record in the other ring). The flag
// store and the word load on one side, the word store and the flag load
// on the other, are sequentially consistent, so one side sees the
// other's store: a change the producer waits for is never missed.
//
// The word is the peer's to write: the producer gets it as it is and
// must bound it itself.

// PublishAck stores the consumer's count v. It reports whether the
// producer wanted to be told (the flag was set; it is cleared now).
// Any goroutine may call it; it does nothing on a closed ring.
func (r *Ring) PublishAck(v uint64) (wanted bool) {
	if !r.acquire() {
		return false
	}
	defer r.release()
	r.sh.ack.Store(v)
	return r.sh.ackWant.Load() != 0 && r.sh.ackWant.CompareAndSwap(1, 0)
}

// Ack returns the count the consumer published last (0 on a closed
// ring). Any goroutine may call it.
func (r *Ring) Ack() uint64 {
	if !r.acquire() {
		return 0
	}
	defer r.release()
	return r.sh.ack.Load()
}

// WantAck sets (on true) or clears the producer's request to be told
// of the consumer's next PublishAck. After setting it, read Ack again:
// a count published before the flag was seen is there.
func (r *Ring) WantAck(on bool) {
	if !r.acquire() {
		return
	}
	defer r.release()
	if on {
		r.sh.ackWant.Store(1)
	} else {
		r.sh.ackWant.Store(0)
	}
}
