package tcp

import "github.com/godapl/godapl/rdsoverdat/wire"

// Senders that write themselves. Waking the writer goroutine for every
// message costs a goroutine hand-off, and mostly a thread wake-up, per
// message on each side of a request-response exchange, where nothing
// else waits to share the write. Where more is in flight the hand-off
// pays: while the writer runs, the sender goes on (to its next receive,
// say) and further messages queue and leave in one writev. So a sender
// writes its own message only when
//   - the last message this side received came alone: one read brought
//     it and nothing behind it, and it was the first thing in that read
//     (rxSeen). The peer then waits for an answer: a request and its
//     answer. A one-way stream brings nothing back, and a window of
//     messages in flight both ways shows up as reads that bring several,
//     whose writes the writer then batches;
//   - nothing was written since (rxSeen is cleared by every write);
//   - and the writer is idle (the transmit role is free).
// It never waits for socket room, leaving what the socket does not take
// to the writer.

// noteHeader records header h just read from the peer through rd. A
// message from the peer also carries TCP's ack of what this side sent
// before it: the messages the writer left to later traffic (goLone) are
// freed here once enough of them wait (ackDue, as last seen: due).
func (c *tcpConn) noteHeader(rd *tcpReader, h wire.Header) {
	if !c.heard.Load() {
		c.heard.Store(true)
	}
	lone := rd.r == wire.HeaderLen && rd.w-rd.r == int(h.Len())
	if c.rxSeen.Load() != lone {
		c.rxSeen.Store(lone)
	}
	if c.due.Load() && c.tp.lone.Load() {
		c.settle(false)
	}
}

// sendDirect writes what the path has queued in the calling sender's
// goroutine if the transmit role is free. It reports whether the writer
// need not be woken: false if the role was busy, the socket was full or
// the write failed.
func (c *tcpConn) sendDirect() bool {
	if !c.txMu.TryLock() {
		return false
	}
	ok := c.sendDirectLocked()
	c.txMu.Unlock()
	return ok
}

// sendDirectLocked is sendDirect's write, with the transmit role held:
// the role's release stays out of a deferred call on the per-message path.
func (c *tcpConn) sendDirectLocked() bool {
	if c.txExited || c.txErr != nil || c.batch == nil || c.batch.pending() || c.carry != nil {
		return false
	}
	if c.armed || c.tp.lone.Load() && c.ackDue() {
		c.checkAcks() // before the write rather than after it
	}
	left, err := c.flushQueue(true)
	if err != nil {
		c.txErr = err
		return false
	}
	c.directs.Add(1)
	return !left
}
