package tcp

// Senders that write themselves. Waking the writer goroutine for every
// message costs a goroutine hand-off, and mostly a thread wake-up, per
// message on each side of a request-response exchange, where nothing
// else waits to share the write. A stream gains from the hand-off: while
// the writer runs, further messages queue and leave in one writev. So a
// sender writes its own message only when this side has received since
// it last wrote (rxSeen: the peer answers, the next request waits for the
// answer) and the writer is idle (the transmit role is free); it never
// waits for socket room, leaving what the socket does not take to the
// writer. A one-way stream hears nothing back and keeps the writer and
// its batches.

// noteHeader records a header read from the peer.
func (c *tcpConn) noteHeader() {
	if !c.heard.Load() {
		c.heard.Store(true)
	}
	if !c.rxSeen.Load() {
		c.rxSeen.Store(true)
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
	defer c.txMu.Unlock()
	if c.txExited || c.txErr != nil || c.batch == nil {
		return false
	}
	left, err := c.flushQueue(false)
	if err != nil {
		c.txErr = err
		return false
	}
	c.directs.Add(1)
	return !left
}
