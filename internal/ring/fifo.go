package ring

// FIFO is a queue of at most Cap values in a ring allocated by Init (or
// grown by PushGrow).
// Pop clears the slot it empties, so that the ring keeps no pointer to a
// value that has left it. A FIFO is not safe for concurrent use: its
// owner locks around it where it is shared.
type FIFO[T any] struct {
	buf  []T
	head int // index of the oldest value
	n    int // values queued
}

// Init gives q room for capacity values and empties it.
func (q *FIFO[T]) Init(capacity int) {
	q.buf, q.head, q.n = make([]T, capacity), 0, 0
}

// Len returns the number of values queued.
func (q *FIFO[T]) Len() int { return q.n }

// Cap returns the most values q holds.
func (q *FIFO[T]) Cap() int { return len(q.buf) }

// Push queues v behind the others; false if q is full.
func (q *FIFO[T]) Push(v T) bool {
	if q.n == len(q.buf) {
		return false
	}
	q.buf[q.index(q.n)] = v
	q.n++
	return true
}

// PushGrow queues v behind the others, doubling q's room first if q is
// full (an empty zero FIFO gets room for 4). It is for a queue bounded
// only by what a peer may do, with a bound far above its usual length:
// it allocates when the queue reaches a new high-water mark, never in
// the steady state.
func (q *FIFO[T]) PushGrow(v T) {
	if q.n == len(q.buf) {
		buf := make([]T, max(4, 2*len(q.buf)))
		for i := range q.n {
			buf[i] = q.buf[q.index(i)]
		}
		q.buf, q.head = buf, 0
	}
	q.Push(v)
}

// At returns the i-th value from the front (0 is the oldest), in place.
// It panics unless 0 <= i < Len.
func (q *FIFO[T]) At(i int) *T {
	if i < 0 || i >= q.n {
		panic("ring: index out of range")
	}
	return &q.buf[q.index(i)]
}

// Pop removes and returns the oldest value; false if q is empty.
func (q *FIFO[T]) Pop() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head = q.index(1)
	q.n--
	return v, true
}

// PopBack removes and returns the newest value; false if q is empty.
func (q *FIFO[T]) PopBack() (T, bool) {
	var zero T
	if q.n == 0 {
		return zero, false
	}
	i := q.index(q.n - 1)
	v := q.buf[i]
	q.buf[i] = zero
	q.n--
	return v, true
}

// Clear empties q, clearing every slot.
func (q *FIFO[T]) Clear() {
	clear(q.buf)
	q.head, q.n = 0, 0
}

// index returns the position in buf of the i-th value from the front.
func (q *FIFO[T]) index(i int) int {
	j := q.head + i
	if j >= len(q.buf) {
		j -= len(q.buf)
	}
	return j
}
