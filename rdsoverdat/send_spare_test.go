package rdsoverdat

import (
	"testing"
	"time"
	"unsafe"
)

// spareCount returns s's spare messages as counted and as linked.
func spareCount(s *sock) (counted, linked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m := s.spares.head; m != nil; m = m.next {
		linked++
	}
	return s.spares.n, linked
}

// TestSocketSpares: the messages a socket's acks free become its spares,
// at most maxSpares of them, reset, which its sends fill if they have
// room; a closed socket gives them back.
func TestSocketSpares(t *testing.T) {
	leakCheck(t)
	withoutReserve(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	buf := make([]byte, 64)
	msg := make([]byte, 64)
	for range 3 * maxSpares {
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 * maxSpares {
		recvTimeout(t, b, buf, 5*time.Second)
	}
	eventually(t, 5*time.Second, "every message acknowledged", func() bool {
		n, _ := a.Buffered()
		return n == 0
	})
	s := a.sock()
	n, linked := spareCount(s)
	if n != maxSpares || linked != n {
		t.Fatalf("%d spares counted, %d linked after %d acked messages; want %d", n, linked, 3*maxSpares, maxSpares)
	}
	s.mu.Lock()
	for m := s.spares.head; m != nil; m = m.next {
		if m.refs.Load() != 0 || m.sock != nil || len(m.buf) != 0 || m.onList != nil {
			t.Errorf("spare not reset: refs %d, sock %p, %d bytes, on a list %v", m.refs.Load(), m.sock, len(m.buf), m.onList != nil)
		}
	}
	s.mu.Unlock()

	// A send fills a spare with room for its payload, and takes a
	// message of its own for one that has none.
	s.mu.Lock()
	sp := s.takeSpareLocked()
	s.mu.Unlock()
	if m := reuseMessage(sp, 64); m != sp || m.refs.Load() != 1 || len(m.buf) != 64 || m.next != nil {
		t.Errorf("64 B into a spare: got %p (refs %d, %d bytes), want the spare %p", m, m.refs.Load(), len(m.buf), sp)
	} else {
		m.release()
	}
	s.mu.Lock()
	sp = s.takeSpareLocked()
	s.mu.Unlock()
	// The spare goes back to the pool, and the pool may hand the same
	// object out again at once, with a buffer of its own: what must not
	// be reused is the spare's buffer.
	spCap, spBuf := cap(sp.buf), unsafe.SliceData(sp.buf[:1])
	if m := reuseMessage(sp, 2*spareBuf); unsafe.SliceData(m.buf) == spBuf || len(m.buf) != 2*spareBuf {
		t.Errorf("%d B into a spare with room for %d: got %d bytes, the spare's buffer %v", 2*spareBuf, spCap, len(m.buf), unsafe.SliceData(m.buf) == spBuf)
	} else {
		m.release()
	}
	if n, _ := spareCount(s); n != maxSpares-2 {
		t.Errorf("%d spares after two were taken, want %d", n, maxSpares-2)
	}

	a.Close()
	if n, linked := spareCount(s); n != 0 || linked != 0 {
		t.Errorf("%d spares counted, %d linked after close, want none", n, linked)
	}
}
