package xport

// Wake-ups deferred to the end of a read. A stream transport's read
// often brings several messages for one socket; delivering each at once
// keeps the socket's queue, SO_RCVBUF and congestion exact, but waking
// the socket's waiter for each makes it take them one or a few at a
// time, and each wake-up costs the waiter a step and the scheduler a
// hand-over. So the holder of a connection's reading collects the
// sockets it delivered to and wakes each once: before it reads the
// connection again (which may block), and before it gives the reading
// up. A waiter that wakes early for another reason finds the messages
// already queued.

// Waker is a socket whose waiters a delivery must wake.
type Waker interface {
	// Wake wakes what waits for the socket's messages: a receiver that
	// waits, pollers, and a receiver blocked reading another connection
	// for it.
	Wake()
}

// wakesMax bounds the sockets one Wakes holds; a delivery to one more
// wakes the ones held first, so a read that reaches many sockets
// costs no allocation and no long search.
const wakesMax = 32

// Wakes is the set of sockets a reader delivered to since it last
// woke them. It belongs to whoever holds the connection's reading; the
// zero value is empty and ready.
type Wakes struct {
	n int
	w [wakesMax]Waker
}

// Add notes that w must be woken.
func (s *Wakes) Add(w Waker) {
	for i := s.n - 1; i >= 0; i-- {
		if s.w[i] == w {
			return
		}
	}
	if s.n == wakesMax {
		s.Flush()
	}
	s.w[s.n] = w
	s.n++
}

// Pending reports how many sockets wait to be woken.
func (s *Wakes) Pending() int { return s.n }

// Flush wakes every socket noted, in the order of their first delivery,
// and empties the set. Small enough to be inlined: a reader flushes
// before every read, and most find the set empty.
func (s *Wakes) Flush() {
	if s.n > 0 {
		s.flush()
	}
}

func (s *Wakes) flush() {
	for i := 0; i < s.n; i++ {
		w := s.w[i]
		s.w[i] = nil // hold no socket between reads
		w.Wake()
	}
	s.n = 0
}
