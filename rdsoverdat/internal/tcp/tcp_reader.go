package tcp

import (
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The reader role of a tcp connection (the core's recv_reader.go, in
// package rdsoverdat, has the socket's side; xport.Role who holds it and
// when it goes back). Reading the stream is a role that one goroutine
// holds at a time: the connection's reader goroutine (the role's owner),
// or a RecvMsg that runs the same reading itself. With two
// Ps, every message the reader goroutine hands to a waiting RecvMsg
// wakes a second OS thread (docs/ARCHITECTURE.md, fast paths); a RecvMsg
// that reads its own message and blocks in the netpoller when the socket
// is empty, as a plain Go TCP receiver does, needs no hand-off at all.
//
//   - The reader goroutine gives the role away at a message boundary,
//     after delivering a message to a socket whose RecvMsg was waiting
//     for it (lend): that receiver is about to return and, most likely, to
//     call again within microseconds. The role is then idle.
//   - A RecvMsg of that socket that finds its queue empty takes the idle
//     role (run), reads and delivers whatever comes, blocking in the
//     poller, until a message for itself has been read straight into its
//     buffer; it leaves the role idle and returns.
//   - A timer checks on a lent role: armed when the role goes idle and
//     no check is pending, it takes the role back for the reader
//     goroutine if nobody took it since it was armed; if somebody did and
//     the role is idle again, it checks once more a period later. Other
//     sockets' messages, pings and congestion maps thus wait at most two
//     ReaderGrace periods for a receiver that stopped receiving, and a
//     steady stream costs one timer per period, not one per message:
//     resetting a timer reads the clock and may wake the thread that
//     blocks in the netpoller, and one firing per period would wake the
//     reader goroutine about once per 64 KiB message in the lab VM, where
//     one takes milliseconds. The reader goroutine takes the role back at
//     once when the socket closes, polls or reads with MsgDontWait, and
//     when the connection stops.
//   - A RecvMsg blocked in the poller is interrupted through the
//     connection's read deadline (interrupt) when its socket has
//     something else to return (a message from another connection, a
//     notification), changes its deadline or closes; its own deadline is
//     the connection's read deadline while it reads. The stream position
//     (tcpRx) belongs to the connection, so an interrupted read resumes
//     where it stopped, in whichever goroutine takes the role next; a
//     payload that was going into the interrupted caller's buffer moves
//     into a message first.
//
// Locking: the role's mutex and Socket.mu are never held together;
// dlMu is a leaf.

// tcpReaderRole is one connection's reader role.
type tcpReaderRole struct {
	// Role says who holds it; a holder that gives it back because the
	// connection failed leaves the error for the reader goroutine.
	xport.Role
	c  *tcpConn
	rx tcpRx // the stream position: the role holder's

	// The read deadline: shutdown's or the drain's (connDL), the
	// holding RecvMsg's (holdDL), and intr, an interrupt not yet seen by
	// a read; applied is what the socket has.
	dlMu                    sync.Mutex
	connDL, holdDL, applied time.Time
	intr                    bool

	// For tests and figures: messages RecvMsg holders read.
	held atomic.Uint64
}

// init readies the role of a new connection, before its goroutines
// start.
func (r *tcpReaderRole) init(c *tcpConn) {
	r.c = c
	r.Init(r, c.tp.tn.cfg.ReaderGrace)
	r.rx.rd = newTCPReader(c.nc, c.raw)
}

// end runs when the reader goroutine ends: no one takes the role again.
func (r *tcpReaderRole) end() {
	r.rx.rd.wakes.Flush()
	r.End()
	r.rx.abort()
}

// readOutcome classifies a failed read.
type readOutcome uint8

const (
	readFatal       readOutcome = iota // the connection is done
	readInterrupted                    // an interrupt: look at the socket again
	readTimedOut                       // the holding RecvMsg's own deadline
)

// read fills p from *n on (tcpReader.fill) as the role holder. The
// reader goroutine (holder false) retries interrupts meant for a RecvMsg
// that no longer reads; a holder gets them back, as errInterrupted, and
// its own deadline as errHoldTimeout.
func (r *tcpReaderRole) read(p []byte, n *int, holder bool) error {
	if err := r.rx.rd.fill(p, n); err != nil {
		return r.readFailed(err, p, n, holder)
	}
	return nil
}

// readFailed is read after a fill failed with err (holderStep calls fill
// itself, saving a call per read).
func (r *tcpReaderRole) readFailed(err error, p []byte, n *int, holder bool) error {
	for {
		switch r.classify(err) {
		case readInterrupted:
			if holder {
				return errInterrupted
			}
		case readTimedOut:
			return errHoldTimeout
		default:
			return err
		}
		if err = r.rx.rd.fill(p, n); err == nil {
			return nil
		}
	}
}

var (
	errInterrupted = errors.New("rds: read interrupted for the receiver")
	errHoldTimeout = errors.New("rds: receiver's deadline")
)

// classify tells why a read failed. A deadline is the connection's own
// (shutdown, drain: fatal), an interrupt, or the holder's limit; an
// interrupt or a deadline moved since is consumed and the read deadline
// that holds now set again.
func (r *tcpReaderRole) classify(err error) readOutcome {
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return readFatal
	}
	r.dlMu.Lock()
	defer r.dlMu.Unlock()
	now := time.Now()
	switch {
	case !r.connDL.IsZero() && !now.Before(r.connDL):
		return readFatal
	case r.intr:
		r.intr = false
	case !r.holdDL.IsZero() && !now.Before(r.holdDL):
		return readTimedOut
	}
	r.apply() // interrupted, or an older deadline: set the current one
	return readInterrupted
}

// apply gives the socket the read deadline that holds now; dlMu is held.
func (r *tcpReaderRole) apply() {
	t := r.connDL
	if !r.holdDL.IsZero() && (t.IsZero() || r.holdDL.Before(t)) {
		t = r.holdDL
	}
	if r.intr {
		t = time.Unix(1, 0)
	}
	if !t.Equal(r.applied) {
		r.applied = t
		r.c.nc.SetReadDeadline(t)
	}
}

// setConnDeadline sets the connection's own read deadline (shutdown, the
// drain after it).
func (r *tcpReaderRole) setConnDeadline(t time.Time) {
	r.dlMu.Lock()
	r.connDL = t
	r.apply()
	r.dlMu.Unlock()
}

func (r *tcpReaderRole) setHoldDeadline(t time.Time) {
	r.dlMu.Lock()
	r.holdDL = t
	r.apply()
	r.dlMu.Unlock()
}

// interrupt makes a read in progress, or the next one, fail at once
// (xport.ReaderRole).
func (r *tcpReaderRole) Interrupt() {
	r.dlMu.Lock()
	r.intr = true
	r.apply()
	r.dlMu.Unlock()
}

// lend leaves the role idle for s's receivers and parks the reader
// goroutine until it has the role again (as soon as it is idle once the
// connection stops); it returns the error a holder met, if any.
func (r *tcpReaderRole) lend(s xport.Receiver) error { return r.Lend(s, r.c.stop) }

// run is xport.ReaderRole.Run: it takes the idle role and reads until a message
// for s has been read into buf, or something else ends the read.
func (r *tcpReaderRole) Run(s xport.Receiver, buf []byte, peek bool, limit time.Time) (int, netip.AddrPort, xport.RRResult) {
	if res, ok := r.Take(s); !ok {
		return 0, netip.AddrPort{}, res
	}
	if !limit.IsZero() {
		r.setHoldDeadline(limit)
	}
	var n int
	var from netip.AddrPort
	res, err := xport.RRAgain, error(nil)
	for res == xport.RRAgain && err == nil {
		n, from, res, err = r.holderStep(s, buf, peek)
	}
	if res == xport.RRQueued {
		res = xport.RRAgain
	}
	r.rx.rd.wakes.Flush() // the other sockets' deliveries of this run
	if !limit.IsZero() {
		r.setHoldDeadline(time.Time{})
	}
	fatal := err != nil && err != errInterrupted && err != errHoldTimeout
	if err == errHoldTimeout {
		res = xport.RRTimedOut
	}
	var note error
	if fatal {
		note = err
	}
	r.Leave(s, fatal || s.Closed(), note)
	return n, from, res
}

// holderStep reads the rest of the current message as a RecvMsg of s
// holding the role: a plain data message for s that fits buf goes
// straight into buf (xport.RRFilled), anything else into its socket's
// delivery sink if it has one (ClaimSink), else into a message for
// Receive (xport.RRAgain, so that the caller looks at its queue, when it was
// for s; otherwise the next message). A read interrupted in the middle
// of s's payload moves what it read into a message, which whoever reads
// next completes and delivers.
func (r *tcpReaderRole) holderStep(s xport.Receiver, buf []byte, peek bool) (int, netip.AddrPort, xport.RRResult, error) {
	c, x := r.c, &r.rx
	p := c.tp.p
	if err := x.rd.fill(x.hdr[:], &x.hn); err != nil {
		if err = r.readFailed(err, x.hdr[:], &x.hn, true); err != nil {
			return 0, netip.AddrPort{}, xport.RRAgain, err
		}
	}
	h := wire.Header(x.hdr[:])
	l := int(h.Len())
	forS, plain := p.ReaderFor(h, s)
	// staged: the payload came with its header, as a small message's
	// does, and went into buf at once, with no read that could fail
	// half way, so without the state that would resume one.
	staged := false
	if x.dst == dstNone {
		c.noteHeader(x.rd, h)
		if forS && plain && !peek && l <= len(buf) && s.QueueEmpty() {
			if rd := x.rd; rd.w-rd.r >= l {
				rd.r += copy(buf[:l], rd.buf[rd.r:])
				staged = true
			} else {
				x.dst, x.own = dstOwn, buf[:l]
			}
		} else if d, ok := p.ClaimSink(h); ok {
			x.dst, x.d = dstClaim, d
		} else {
			m, err := p.NewRxMessage(h)
			if err != nil {
				c.shutdown(err, false)
				return 0, netip.AddrPort{}, xport.RRAgain, err
			}
			x.dst, x.m = dstMsg, m
		}
	}
	if !staged {
		err := x.rd.fill(x.payload(), &x.pn)
		if err != nil {
			err = r.readFailed(err, x.payload(), &x.pn, true)
		}
		if err != nil {
			if x.dst == dstOwn {
				m, _ := p.NewRxMessage(h) // checked when the header came
				copy(m.Payload(), x.own[:x.pn])
				x.dst, x.m, x.own = dstMsg, m, nil
			}
			return 0, netip.AddrPort{}, xport.RRAgain, err
		}
	}
	r.held.Add(1)
	if staged || x.dst == dstOwn {
		seq, retx, sport := h.Sequence(), h.Flags()&wire.FlagRetransmitted != 0, h.Sport()
		x.next(l)
		if !p.AcceptDirect(seq, retx, l) {
			return 0, netip.AddrPort{}, xport.RRAgain, nil // a duplicate after all
		}
		return l, netip.AddrPortFrom(c.tp.raddr, uint16(sport)), xport.RRFilled, nil
	}
	if x.dst == dstClaim {
		d := x.d
		x.next(l)
		d.Wakes = &x.rd.wakes
		d.Done(true)
	} else {
		m := x.m
		x.next(l)
		p.ReceiveWakes(m, &x.rd.wakes)
	}
	if forS {
		return 0, netip.AddrPort{}, xport.RRQueued, nil
	}
	return 0, netip.AddrPort{}, xport.RRAgain, nil
}
