package dat

import (
	"runtime"

	"github.com/godapl/godapl/dat"
)

// The node's event goroutine: the consumer of the node's EVD, unless it
// lent that role to a receiver (dat_role.go), which handles the events
// the same way. The EVD carries every stream of every EP of the node
// (receive completions from the SRQ, send completions, connection
// requests, connection events) and the transport's own software events
// (reconnect timers, EP retirement).
// One EVD keeps them in arrival order: a DISCONNECTED event never
// overtakes the completions before it, and an EP's retire event, posted
// after its connection ended, comes after all of them, which is what
// makes returning its SRQ share safe.
//
// Events are taken in batches (wait for one, then dequeue what is there);
// acks and restarts of stalled senders are done once per batch, so that a
// burst of fragments is acknowledged by one frame.
//
// All of them land in one dat.Event that the loop keeps (WaitInto,
// DequeueInto), as a C consumer reuses its DAT_EVENT: the by-value Wait
// and Dequeue would copy and clear a 256-byte result per event. Like C's
// union, the Event holds only the member its Number names; the others are
// what earlier events left, so handle reads nothing but that member.

func (dn *datNode) routineEvents() {
	defer dn.wg.Done()
	defer dn.role.End()
	for {
		more, err := dn.evd.WaitInto(dn.ctx, 1, &dn.ev)
		if err != nil {
			if dn.ctx.Err() != nil {
				return
			}
			continue
		}
		dn.batch(more)
		dn.flushWakes()
		if dn.batchMsgs > 1 {
			dn.cool = datRoleCooldown // a stream (dat_role.go)
		} else if dn.cool > 0 {
			dn.cool--
		}
		if s := dn.lendTo; s != nil {
			dn.lendTo = nil
			dn.role.lend(s)
			dn.flushWakes() // what the last holder left
		}
	}
}

// batch handles the event in dn.ev and every event queued behind it;
// more is the count of those the wait that took dn.ev returned. When it
// says none, the batch ends without a dequeue that would only find the
// EVD empty: an empty dequeue takes the CQ's lock, the EVD's and the
// CQ's again, and a round trip makes a batch or two per message on each
// side. An event that arrives meanwhile is the next wait's, at once, as
// one that arrived just after that dequeue was.
func (dn *datNode) batch(more int) {
	dn.batchMsgs = 0
	dn.handle(&dn.ev)
	if more > 0 {
		for dn.evd.DequeueInto(&dn.ev) == nil {
			dn.handle(&dn.ev)
		}
	}
	dn.endReposts()
}

// handle dispatches one event on its Number, reading only the member that
// Number names (ev may hold stale members of earlier events).
func (dn *datNode) handle(ev *dat.Event) {
	if ev.Number != dat.DTOCompletionEvent {
		// What follows (a retirement, a connection event) sees the
		// buffers of the receives before it back and credited.
		dn.flushReposts()
	}
	switch ev.Number {
	case dat.DTOCompletionEvent:
		if ev.DTO.Op == dat.DTOReceive {
			dn.onRecv(&ev.DTO)
			return
		}
		if e := dn.epOf(ev.DTO.EP); e != nil {
			e.onSendDone(&ev.DTO)
		}
	case dat.ConnectionRequestEvent:
		dn.onRequest(ev)
	case dat.SoftwareEvent:
		switch x := ev.Software.(type) {
		case *datPath:
			x.connect(true)
		case *datEP:
			dn.retired(x)
		case *datRevoke:
			x.e.queueRevoke(x.rkey)
		case *datEventRole:
			// An interrupt of the holder (dat_role.go): it only wakes.
		}
	default:
		if ev.Number.Stream() == dat.EVDConnection {
			dn.onConnEvent(ev)
		}
	}
}

// wake puts e on the list of EPs to ack or restart after this batch.
func (dn *datNode) wake(e *datEP) {
	if !e.queued {
		e.queued = true
		dn.wakes = append(dn.wakes, e)
	}
}

// flushWakes restarts stalled senders (whose messages carry acks and
// credits too), then sends the ack-only frames still wanted.
func (dn *datNode) flushWakes() {
	dn.flushKicks()
	// A receiver woken by this batch may answer at once, and its reply
	// carries the ack: let it run before deciding on ack-only frames.
	runtime.Gosched()
	dn.flushAcks()
}

// flushKicks restarts the stalled senders among the woken EPs.
func (dn *datNode) flushKicks() {
	for _, e := range dn.wakes {
		if e.stalled.Load() && !e.dead.Load() {
			e.dp.kick()
		}
	}
}

// flushAcks sends the ack-only frames and RDMA check answers the woken
// EPs still want, and empties the list.
func (dn *datNode) flushAcks() {
	for i, e := range dn.wakes {
		e.queued = false
		e.sendAck()
		e.sendAnswers()
		dn.wakes[i] = nil
	}
	dn.wakes = dn.wakes[:0]
}
