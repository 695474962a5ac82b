package dat

import (
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The node's event role: taking the node's events off its EVD (and
// reading the soft-iWARP streams behind it, which a waiter on the EVD
// does itself) is a role that one goroutine holds at a time, the node's
// event goroutine (the role's owner) or a RecvMsg of a socket it was lent
// to (the core's recv_reader.go has the socket's side, shared with the
// tcp transport's reader roles; xport.Role who holds it and when it goes
// back, as for those). A message handed by the event goroutine to a waiting
// RecvMsg costs a second goroutine's wake-up, on another thread when the
// receiver sleeps; a RecvMsg that waits on the EVD itself is woken by
// the network directly, as a plain TCP receiver is. What this package
// calls the event goroutine's state belongs to whoever holds the role.
//
//   - The event goroutine lends the role after a batch of events that
//     delivered a message to a socket whose RecvMsg was waiting for it:
//     that receiver returns and most likely calls again at once. The role
//     is then idle and the event goroutine parks.
//   - A RecvMsg of that socket that finds its queue empty takes the idle
//     role, waits on the EVD and handles every event as the event
//     goroutine would (other connections, other sockets, credits,
//     connection events), until its socket has something to return; it
//     leaves the role idle and returns.
//   - Acks and credit advertisements are decided after a batch. A holder
//     that returns with a message for its caller leaves them for later
//     (the next holder, or the event goroutine when it takes the role
//     back): its caller's reply, most likely its next step, carries them
//     in its header, as the event goroutine's yield lets a woken
//     receiver's reply do.
//   - A timer checks on a lent role as the tcp transport's does: the
//     event goroutine takes the role back if nobody took it for a
//     datRoleGrace period, so that what arrives for others waits at most
//     two periods behind a receiver that stopped receiving. It takes it
//     back at once when the socket closes, polls, reads with
//     MsgDontWait or with a deadline, or blocks in a send, and when the
//     node closes.
//   - A holder waiting on the EVD is interrupted by a software event
//     (the role itself) when its socket gets something to return from
//     elsewhere (another transport, a notification, Close).

// datRoleGrace is how long a lent role may stay idle before the event
// goroutine takes it back (twice that at most). A check per period costs
// one timer wake-up of the parked event goroutine, small beside the
// round trips of a period.
const datRoleGrace = 2 * time.Millisecond

// datRoleCooldown is how many batches of events the event goroutine
// handles before it lends the role again after a batch that delivered
// more than one message, or after a RecvMsg with a deadline refused it.
const datRoleCooldown = 64

// Phases of a holder (datEventRole.phase).
const (
	phaseBusy        int32 = iota // handling events, or not holding
	phaseWaiting                  // blocked on the EVD: an interrupt posts
	phaseInterrupted              // an interrupt was posted
)

// datEventRole is a node's event role.
type datEventRole struct {
	// Role says who holds it (grace datRoleGrace, but for tests).
	xport.Role
	dn *datNode

	// intr: the holder's socket has something to return; phase says
	// whether the holder is blocked on the EVD and must be woken.
	intr  atomic.Bool
	phase atomic.Int32

	// For tests and figures: holder runs that ended with a message for
	// their socket.
	held atomic.Uint64
}

// errRoleRefused is the note of a RecvMsg with a deadline that gave the
// lent role back unused: the event goroutine then lends again only after
// a cooldown, as a receiver that sets a deadline on every call would cost
// it a park and a wake-up per message.
var errRoleRefused = errors.New("rds dat: event role refused by a receiver with a deadline")

func (r *datEventRole) init(dn *datNode) {
	r.dn = dn
	r.Init(r, datRoleGrace)
}

// noteDelivery records, before the complete message with header h is
// delivered on p, whether its socket's RecvMsg waits for it: if so, and
// it is the batch's only message for a socket, the event goroutine lends
// that socket the role after the batch. h is the last fragment's header,
// whose ports reassembly checked against the first's, which the message
// keeps. A holder never lends. The socket is
// looked up only when the batch could still lend: in a stream, where
// batches hold dozens of messages and the role stays home, a lookup per
// message would duplicate the core's own.
func (dn *datNode) noteDelivery(p xport.Path, h wire.Header) {
	if h.Dport() == wire.PingPort || wire.IsHandshakePong(h.Sport(), h.Dport()) {
		return // not data for a socket
	}
	dn.batchMsgs++
	dn.lendTo = nil
	if dn.holding || dn.batchMsgs > 1 || dn.cool > 0 {
		return
	}
	if s := p.ReaderTarget(h); s != nil && s.Waiting() {
		dn.lendTo = s
	}
}

// lend leaves the role idle for s's receivers and parks the event
// goroutine until the role is its own again.
func (r *datEventRole) lend(s xport.Receiver) {
	if r.Lend(s, r.dn.ctx.Done()) == errRoleRefused {
		r.dn.cool = datRoleCooldown
	}
}

// Interrupt makes the holder return to look at its socket
// (xport.ReaderRole): at once if it is blocked on the EVD, else after
// the batch it is handling.
func (r *datEventRole) Interrupt() {
	r.intr.Store(true)
	if r.phase.CompareAndSwap(phaseWaiting, phaseInterrupted) {
		// The EVD has room for software events beyond its completions
		// (datEVDSpare), and the phase lets one such post out per wait.
		r.dn.evd.PostSE(r)
	}
}

// Run is xport.ReaderRole.Run: it takes the idle role and handles the
// node's events until s has something to return. A plain one-fragment
// message for s that fits buf, taken while s's queue is empty, goes
// straight into buf (datEP.recvDirect, RRFilled); everything else goes
// through s's queue (RRAgain). A caller with a deadline gives the role
// back and waits the ordinary way, as the EVD wait takes the node's
// context, and a context of its own per call would cost an allocation
// and a timer.
func (r *datEventRole) Run(s xport.Receiver, buf []byte, peek bool, limit time.Time) (int, netip.AddrPort, xport.RRResult) {
	if !limit.IsZero() {
		return 0, netip.AddrPort{}, r.Decline(s, errRoleRefused)
	}
	if res, ok := r.Take(s); !ok {
		return 0, netip.AddrPort{}, res
	}
	d := &r.dn.direct
	if !peek { // a peek must find the message still queued after it
		d.s, d.buf = s, buf
	}
	back := r.hold() || s.Closed()
	n, from, filled := d.n, d.from, d.filled
	d.s, d.buf, d.filled = nil, nil, false
	if !back || filled {
		r.held.Add(1)
	}
	r.Leave(s, back, nil)
	if filled {
		return n, from, xport.RRFilled
	}
	return 0, netip.AddrPort{}, xport.RRAgain
}

// datDirect is the buffer of the RecvMsg that holds the role, offered
// for its own socket's next message (datEP.recvDirect).
type datDirect struct {
	s      xport.Receiver // the holder's socket; nil: no buffer on offer
	buf    []byte
	n      int            // the message's length, once filled
	from   netip.AddrPort // and its source
	filled bool
}

// hold handles the node's events as the role's holder until an
// interrupt; true if the role must go back to the event goroutine: the
// EVD failed (the node is closing) or a stream came.
func (r *datEventRole) hold() bool {
	dn := r.dn
	dn.holding = true // no defer: a RecvMsg that holds the role runs it per message
	back := r.handleEvents()
	dn.holding = false
	return back
}

// handleEvents is hold's loop, with dn.holding set.
func (r *datEventRole) handleEvents() (back bool) {
	dn := r.dn
	dn.flushAcks() // what the previous holder left for its caller's reply
	for {
		r.phase.Store(phaseWaiting)
		// A load, not a swap: the phase's store orders it before the
		// wait, as Interrupt's store of intr comes before its look at
		// the phase, and it mostly finds nothing to clear.
		if r.takeIntr() {
			r.phase.Store(phaseBusy)
			return false
		}
		more, err := dn.evd.WaitInto(dn.ctx, 1, &dn.ev)
		r.phase.Store(phaseBusy)
		if err != nil {
			return true
		}
		dn.batch(more)
		dn.flushKicks()
		if dn.batchMsgs > 1 {
			// A stream: the event goroutine receives it in parallel
			// with the application, which beats saving wake-ups.
			dn.cool = datRoleCooldown
			return true
		}
		// An interrupt after a direct fill is for what the caller sees
		// when it looks at its socket again, so it is cleared as well.
		if r.takeIntr() || dn.direct.filled {
			return false // acks and credits wait for the caller's reply
		}
		dn.flushAcks()
	}
}

// takeIntr reports and clears a pending interrupt. An interrupt that
// comes between the load and the clearing is lost, and need not be
// kept: the holder returns to look at its socket, which already holds
// what that interrupt would make it look for.
func (r *datEventRole) takeIntr() bool {
	if !r.intr.Load() {
		return false
	}
	r.intr.Store(false)
	return true
}
