package rdsoverdat

import (
	"net/netip"
	"sync"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The tcp transport's side of receive leases (recv_lease.go): the
// connection's reader goroutine lends the connection to a socket whose
// receiver then reads the stream itself. Whoever holds the connection
// owns the stream state, tcpConn.hdr and the tcpReader: the reader
// goroutine, or the lessee's RecvMsg while it drives.

// leaseIdle is how often the reader goroutine looks at a lease that
// nobody drives: one whose lessee has not driven it for a whole period
// goes back to the reader, which delivers the pending message the
// ordinary way. It bounds how long a receiver that stopped receiving can
// hold up the messages behind the pending one.
const leaseIdle = 10 * time.Millisecond

type leaseState uint8

const (
	leaseAgain  leaseState = iota // nothing for the caller; look at the queue again
	leaseFilled                   // the caller's buffer holds a message
	leaseBusy                     // another receiver drives; wait on rxSig
)

// tcpLease is a connection's lease state, under mu.
type tcpLease struct {
	mu       sync.Mutex
	lessee   *Socket // nil while the reader goroutine holds the connection
	driving  bool    // a RecvMsg of lessee reads the stream now
	drives   uint64  // completed drives, for the idle check
	waiters  bool    // a receiver found it driving and waits on rxSig
	recalled bool    // the lessee asked for it back while driving
	err      error   // the read error that ended the last drive
	back     chan struct{}
}

// lendAndWait lends the connection, whose pending header (c.hdr) is a
// message for s, and parks the reader goroutine until the lease comes
// back or it takes it back (idle lessee, connection stopping). It returns
// the read error a driver met, if any, and false if s would not take the
// lease (the reader then reads the message itself).
func (c *tcpConn) lendAndWait(s *Socket, idle *time.Timer) (bool, error) {
	L := &c.lease
	L.mu.Lock()
	L.lessee, L.recalled = s, false
	if !s.lend(c) {
		L.lessee = nil
		L.mu.Unlock()
		return false, nil
	}
	seen := L.drives
	L.mu.Unlock()
	idle.Reset(leaseIdle)
	defer idle.Stop()
	stop := c.stop
	for {
		select {
		case <-L.back:
			L.mu.Lock()
			err := L.err
			L.err = nil
			L.mu.Unlock()
			return true, err
		case <-stop:
			stop = nil // take it back as soon as nobody drives
			if c.reclaim(nil) {
				return true, nil
			}
			idle.Reset(leaseIdle)
		case <-idle.C:
			if c.reclaim(&seen) {
				return true, nil
			}
			idle.Reset(leaseIdle)
		}
	}
}

// reclaim takes the lease back unless a RecvMsg drives it or, with seen,
// one drove it since the last look. A lease already ended has its back
// token on the way, so reclaim leaves it to that.
func (c *tcpConn) reclaim(seen *uint64) bool {
	L := &c.lease
	L.mu.Lock()
	defer L.mu.Unlock()
	s := L.lessee
	if s == nil || L.driving {
		return false
	}
	if seen != nil && L.drives != *seen && !s.closed.Load() {
		*seen = L.drives
		return false
	}
	L.lessee = nil
	s.unlend(c, false)
	return true
}

// recall is rxLender.recall. It reports false if a RecvMsg of s is
// driving; that drive then ends the lease and wakes s's receivers.
func (c *tcpConn) recall(s *Socket) bool {
	L := &c.lease
	L.mu.Lock()
	defer L.mu.Unlock()
	if L.lessee != s {
		s.unlend(c, false) // stale
		return true
	}
	if L.driving {
		L.recalled, L.waiters = true, true
		return false
	}
	L.lessee = nil
	s.unlend(c, false)
	signal(L.back)
	return true
}

// drive is rxLender.drive: it reads the pending message and then, if it
// has arrived, the next header. The lease stays with s while that header
// is again a plain data message for s.
func (c *tcpConn) drive(s *Socket, buf []byte) (int, netip.AddrPort, leaseState) {
	L := &c.lease
	L.mu.Lock()
	if L.lessee != s {
		s.unlend(c, false) // stale
		L.mu.Unlock()
		return 0, netip.AddrPort{}, leaseAgain
	}
	if L.driving {
		L.waiters = true
		L.mu.Unlock()
		return 0, netip.AddrPort{}, leaseBusy
	}
	L.driving = true
	L.mu.Unlock()

	p, rd := c.tp.p, c.rd
	h := wire.Header(c.hdr[:])
	l := int(h.Len())
	var n int
	var from netip.AddrPort
	st := leaseAgain
	var err error
	if l <= len(buf) {
		if err = rd.readFull(buf[:l]); err == nil && p.acceptDirect(h.Sequence(), h.Flags()&wire.FlagRetransmitted != 0, l) {
			n, from, st = l, netip.AddrPortFrom(p.conn.faddr, uint16(h.Sport())), leaseFilled
		}
	} else if m, merr := p.NewRxMessage(h); merr != nil {
		err = merr
	} else if err = rd.readFull(m.buf); err != nil {
		m.release()
	} else {
		p.Receive(m) // queued on s, which returns it truncated
	}
	rd.big = l >= tcpDirectReadMin
	c.hdrReady = false
	keep := false
	if err == nil && !c.stopped() && rd.tryFull(c.hdr[:]) {
		c.hdrReady = true
		keep = p.directTarget(h) == s // h is c.hdr: now the next header
	}

	L.mu.Lock()
	L.driving = false
	L.drives++
	if err != nil {
		L.err = err
	}
	if L.recalled || err != nil || s.closed.Load() {
		keep = false
	}
	wake := L.waiters
	L.waiters = false
	if !keep {
		L.lessee = nil
		s.unlend(c, err == nil && st == leaseFilled && !L.recalled)
		signal(L.back)
	}
	L.mu.Unlock()
	if wake {
		signal(s.rxSig)
	}
	return n, from, st
}

// stopped reports whether shutdown has run.
func (c *tcpConn) stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}
