package tcp

import (
	"syscall"
	"time"
	"unsafe"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// The tcp transmit side (tcp_send.c): the writer goroutine takes messages
// off the path in order and gathers them into one writev: headers and
// small payloads are copied into a staging buffer, so that many small
// messages share a segment and a system call; payloads of tcpDirectMin
// bytes or more are handed to the kernel straight from the message, so
// that a large message is copied once (into the socket) instead of twice.
// The batch is written when it is full or the queue runs dry; a message
// alone in it goes out from the message itself (writeLone). Each
// message's ack key is the stream offset just past its last byte; once
// TCP's unacknowledged byte count (SIOCOUTQ) shows the peer has
// everything up to that offset, the message leaves the retransmit list,
// as rds_tcp_write_space does on every TCP ack. The writer reads that
// count after every write; while messages wait for acks and nothing else
// happens, it polls it with a backoff, except for a lone message, which
// it leaves to the peer's next message or the next write unless a socket
// waits for the room its ack frees (goLone, settle). In a
// request-response exchange the sender writes instead of the writer
// (tcp_direct.go).

const (
	ackPollMin = 100 * time.Microsecond
	ackPollMax = 10 * time.Millisecond
	tcpBufSize = 64 << 10
	// tcpDirectMin is the payload size from which a payload goes out of
	// the message itself rather than through the staging buffer (it
	// costs an iovec, not a system call). tcpDirectReadMin is the same on
	// the receive side, where reading around the staging buffer costs
	// system calls: a header read alone and the payload read on its own
	// beat one copy only for large payloads.
	tcpDirectMin     = 2 << 10
	tcpDirectReadMin = 32 << 10
	// tcpBatchBytes and tcpBatchSegs bound one writev.
	tcpBatchBytes = 256 << 10
	tcpBatchSegs  = 64
	// tcpLoneDue and tcpLoneBytes: a sender's own writes leave at most
	// this many messages, or bytes, to later traffic before their acks
	// are counted (ackDue); tcpLoneMax bounds what goLone leaves at all
	// (the writer polls beyond it).
	tcpLoneDue   = 8
	tcpLoneMax   = 2 * tcpLoneDue
	tcpLoneBytes = 64 << 10
	// tcpAckTrust is how long a connection on which the peer has sent
	// nothing must live before TCP acks count (tcpConn.heard): a kernel
	// rejects an unwanted connection right after accepting it.
	tcpAckTrust = time.Second
)

// txBatch is the writer's gathered, not yet written bytes: segs point
// into stage and into the payloads of held, whose references the writer
// keeps until the bytes are in the socket.
type txBatch struct {
	stage []byte      // staging buffer, tcpBufSize; never grows
	segs  segList     // what one write hands to writev (consumed by it)
	back  [][]byte    // the segments gathered so far
	held  []xport.Msg // messages whose payload segs reference
	bytes int         // len of all segs
	// tail is the start in stage of the last segment while that segment
	// is the staging buffer's tail (so the next copy extends it), or -1;
	// the segment's slot in back stays nil until closeTail.
	tail int
	// started: segs holds what a write left (pending); nowait: the
	// write in progress does not wait for room.
	started, nowait bool
	// writev's iovecs and error; writevFn is b.writev as a method value,
	// made once, so that a write allocates nothing.
	iov      []unix.Iovec
	werr     error
	writevFn func(fd uintptr) bool
	// writeLone's: the iovecs it set, the bytes its writev wrote, and
	// its RawConn.Write callback (writevLone), made once.
	ivn, lk      int
	writevLoneFn func(fd uintptr) bool
}

// segList is the part of a batch not yet written.
type segList [][]byte

// consume drops the first n bytes.
func (l *segList) consume(n int) {
	for len(*l) > 0 && n >= len((*l)[0]) {
		n -= len((*l)[0])
		*l = (*l)[1:]
	}
	if len(*l) > 0 {
		(*l)[0] = (*l)[0][n:]
	}
}

func newTxBatch() *txBatch {
	b := &txBatch{
		stage: make([]byte, 0, tcpBufSize),
		back:  make([][]byte, 0, tcpBatchSegs+2),
		held:  make([]xport.Msg, 0, tcpBatchSegs),
		tail:  -1,
		iov:   make([]unix.Iovec, tcpBatchSegs+2),
	}
	b.writevFn, b.writevLoneFn = b.writev, b.writevLone()
	return b
}

// fits reports whether a message with n payload bytes may join the batch.
func (b *txBatch) fits(n int) bool {
	if b.bytes == 0 {
		return true // an empty stage has room for a header and a small payload
	}
	stageNeed := wire.HeaderLen
	if n < tcpDirectMin {
		stageNeed += n
	}
	return b.bytes+wire.HeaderLen+n <= tcpBatchBytes && len(b.back)+2 <= cap(b.back) &&
		len(b.stage)+stageNeed <= cap(b.stage)
}

// add gathers header h and payload p of m; m is held when p is
// referenced rather than copied.
func (b *txBatch) add(m xport.Msg, h, p []byte) {
	if b.tail < 0 {
		b.tail = len(b.stage)
		b.back = append(b.back, nil)
	}
	b.stage = append(b.stage, h...)
	if len(p) < tcpDirectMin {
		b.stage = append(b.stage, p...)
	} else {
		b.closeTail()
		b.back = append(b.back, p)
		b.held = append(b.held, m)
		m.Hold()
	}
	b.bytes += len(h) + len(p)
}

// closeTail ends the staging buffer's tail segment: its slot in back,
// nil while copies extended it, now takes what they copied. Setting the
// slot once instead of on every copy saves a slice store per copy.
func (b *txBatch) closeTail() {
	if b.tail >= 0 {
		b.back[len(b.back)-1] = b.stage[b.tail:]
		b.tail = -1
	}
}

// write hands the batch to the socket in one writev (more if the socket
// takes it in parts), then empties it. wait: wait for room until all is
// written; otherwise stop when the socket is full and keep the rest for
// the next write, which must come before anything is added (done false).
func (b *txBatch) write(raw syscall.RawConn, wait bool) (done bool, err error) {
	if b.bytes == 0 {
		return true, nil
	}
	if !b.started {
		b.closeTail()
		b.segs, b.started = b.back, true
	}
	b.nowait = !wait
	if err = raw.Write(b.writevFn); err == nil {
		err = b.werr
	}
	if err == nil && len(b.segs) > 0 {
		return false, nil
	}
	b.reset()
	return true, err
}

// writeLone writes header h and small payload p of a message that is
// alone in an empty batch (a request, or its answer) straight from the
// message with one writev, without their copy into the staging buffer
// and the batch's bookkeeping around it; wait as for write. What the
// socket does not take is copied into the staging buffer as the batch's
// unwritten rest, which write finishes (at once if wait, else the next
// write: done false), so that the caller may drop its reference to the
// message at once either way.
func (b *txBatch) writeLone(raw syscall.RawConn, h, p []byte, wait bool) (done bool, err error) {
	b.iov[0].Base = &h[0]
	b.iov[0].SetLen(len(h))
	n := 1
	if len(p) > 0 {
		b.iov[1].Base = &p[0]
		b.iov[1].SetLen(len(p))
		n = 2
	}
	b.ivn, b.nowait = n, !wait
	if err = raw.Write(b.writevLoneFn); err == nil {
		err = b.werr
	}
	b.iov[0].Base, b.iov[1].Base = nil, nil
	k := b.lk
	if err != nil || k == len(h)+len(p) {
		return true, err
	}
	if k < len(h) {
		b.stage = append(b.stage, h[k:]...)
		k = 0
	} else {
		k -= len(h)
	}
	b.stage = append(b.stage, p[k:]...)
	b.back = append(b.back, b.stage)
	b.bytes = len(b.stage)
	b.segs, b.started = b.back, true
	if !wait {
		return false, nil
	}
	return b.write(raw, true)
}

// writevLone returns writeLone's RawConn.Write callback: one writev of
// the b.ivn iovecs set, which leaves the bytes written in b.lk; a
// partial write ends it (writeLone stages the rest). Its body is the
// closure's own, system call included (as the reader's readv callback).
func (b *txBatch) writevLone() func(fd uintptr) bool {
	return func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&b.iov[0])), uintptr(b.ivn))
			k := int(r)
			switch e {
			case 0:
				b.lk, b.werr = k, nil
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				if !b.nowait {
					return false
				}
				b.lk, b.werr = 0, nil
			default:
				b.lk, b.werr = 0, e
			}
			return true
		}
	}
}

// pending reports a batch left part written by a write that did not wait.
func (b *txBatch) pending() bool { return b.started }

// writev is the RawConn.Write callback (tcp_sys.go): it writes what the
// socket takes, consuming segs, and returns false to wait for room
// (unless nowait).
func (b *txBatch) writev(fd uintptr) bool {
	b.werr = nil
	for len(b.segs) > 0 {
		n := iovecs(b.iov, b.segs)
		k, e := rawWritev(fd, b.iov, n)
		dropBases(b.iov[:n])
		switch e {
		case 0:
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return b.nowait
		default:
			b.werr = e
			return true
		}
		b.segs.consume(k)
	}
	return true
}

// reset empties the batch and gives back the held references.
func (b *txBatch) reset() {
	for i, m := range b.held {
		m.Release()
		b.held[i] = nil
	}
	for i := 0; i < len(b.back); i++ {
		b.back[i] = nil // a few: clear's bulk barrier costs more
	}
	b.stage, b.back, b.held, b.segs, b.bytes, b.tail = b.stage[:0], b.back[:0], b.held[:0], nil, 0, -1
	b.started = false
}

// goLone reports whether the writer, with unacked messages waiting for
// their acks, may leave them to later traffic instead of polling: only
// a lone message, the request or answer of a request-response exchange,
// whose ack rides on the peer's next message (noteHeader frees it) or is
// found by the next write, or after a sender's own write (direct) up to
// tcpLoneMax of them, freed once due (ackDue), and only while no socket of the node waits
// for SO_SNDBUF room (Node.SendersBlocked). No timer runs for it, so that
// a ping-pong arms none: each arming may break the netpoller's sleep,
// and any pending timer makes the scheduler read the clock on its passes.
// It sets tcpPath.lone before it reads SendersBlocked, as a socket that
// starts waiting counts itself before SettleAcks reads lone, so that
// either the writer sees the waiter or the waiter sees lone and wakes the
// writer. A writer that stops leaving its message alone for a waiter
// polls at its fastest again.
func (c *tcpConn) goLone(unacked int, direct bool) bool {
	if unacked != 1 && (!direct || unacked > tcpLoneMax) {
		c.tp.lone.Store(false)
		return false
	}
	was := c.tp.lone.Swap(true)
	if c.tp.tn.node.SendersBlocked() {
		c.tp.lone.Store(false)
		if was {
			c.polls = ackPollSchedule{}
		}
		return false
	}
	return true
}

// settle frees what TCP has acknowledged while the path's writer leaves
// messages to later traffic (goLone), in the caller's goroutine, and
// reports whether some still wait for their acks. If the transmit role
// is busy its holder checks acks itself, and they count as waiting.
// force false (a message from the peer came) asks TCP only if they are
// due (ackDue): everyone who looks at what the messages hold (a socket
// that waits for room, Buffered, Info) forces the check.
func (c *tcpConn) settle(force bool) bool {
	if !c.txMu.TryLock() {
		return c.tp.lone.Load()
	}
	waiting := c.settleLocked(force)
	c.txMu.Unlock()
	return waiting
}

// settleLocked is settle with the transmit role held.
func (c *tcpConn) settleLocked(force bool) bool {
	if c.txExited || c.batch == nil || !c.tp.lone.Load() {
		return false // ended, or not started: lone is an older connection's
	}
	if !force && !c.ackDue() {
		return true
	}
	c.checkAcks()
	_, unacked := c.tp.p.Pending()
	c.unacked = unacked
	c.due.Store(c.ackDue())
	if unacked > 0 {
		return true
	}
	c.tp.lone.Store(false)
	return false
}

// ackDue reports whether the messages a sender's own writes left to
// later traffic (goLone) should be freed now: tcpLoneDue of them, or
// tcpLoneBytes written since TCP's acks were last counted. Below that
// they wait, costing memory but no SO_SNDBUF room that anyone sees: a
// socket that waits for room, Buffered and Info settle them first. A
// request and its answer thus ask TCP for its unacknowledged count
// (SIOCOUTQ, a system call) once per tcpLoneDue messages instead of
// once per message. The caller holds the transmit role.
func (c *tcpConn) ackDue() bool {
	if c.written-c.lastAcked >= tcpLoneBytes {
		return true
	}
	return c.unacked >= tcpLoneDue
}

// ackPollSchedule is when the writer next polls for acks while messages
// wait for them: soon after an ack freed some (ackPollMin), then twice
// as late each time nothing came, up to ackPollMax. The zero value is the
// schedule just after a poll at ackPollMin.
type ackPollSchedule struct {
	poll time.Duration // the last poll interval; 0 before the first
}

// next returns the wait before the next poll. progress says the last
// check freed messages.
func (a *ackPollSchedule) next(progress bool) time.Duration {
	if progress {
		a.poll = ackPollMin
	} else {
		a.poll = min(2*max(a.poll, ackPollMin), ackPollMax)
	}
	return a.poll
}

// routineSend is the connection's writer. It holds the transmit role
// (txMu) except while it waits, so that a sender may write in its place
// meanwhile (sendDirect); it takes the role back for every wake-up and
// holds it while it ends, so that nothing is written after the path went
// down.
func (c *tcpConn) routineSend() {
	defer c.tp.tn.wg.Done()
	c.txMu.Lock()
	c.batch = newTxBatch()
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	var err error
	defer func() {
		if c.carry != nil {
			c.tp.p.TxDone(c.carry)
			c.carry = nil
		}
		c.batch.reset()
		c.txExited = true
		c.writerExit(err)
		c.txMu.Unlock()
	}()
	for {
		if err = c.txErr; err != nil {
			return
		}
		if _, err = c.flushQueue(false); err != nil {
			return
		}
		c.txMu.Unlock()
		select {
		case <-c.tp.kick:
			c.txMu.Lock()
		case <-c.stop:
			c.txMu.Lock()
			c.checkAcks()
			return
		case <-c.timer.C:
			c.txMu.Lock()
			c.armed = false
			c.ackPolls.Add(1)
		}
	}
}

// flushQueue writes what the path has queued, then frees what TCP has
// acknowledged and sets the ack poll timer. The caller holds the transmit
// role. direct: a sender writes (sendDirect), which has just checked the
// acks and does not wait for socket room: it stops when the socket is
// full (left true: the writer must finish).
func (c *tcpConn) flushQueue(direct bool) (left bool, err error) {
	p, b := c.tp.p, c.batch
	wait := !direct
	if b.pending() {
		if done, err := b.write(c.raw, wait); err != nil || !done {
			return !done, err
		}
	}
	// more: the path had messages queued behind the last one taken, so
	// that a round does not take the path's lock once more only to find
	// the queue empty. One queued after that is kicked by its sender.
	// took: a message came from the path, whose count of unacked ones
	// came with it (c.unacked), so that the path's lock is not taken
	// again for Pending.
	more, took := true, false
	for more {
		var h wire.Header
		var pl []byte
		m := c.carry
		if m == nil {
			var queued int
			if m, h, pl, queued, c.unacked = p.NextTxStream(c.gen, c.written); m == nil {
				break
			}
			more, took = queued > 0, true
		} else {
			h, pl = m.Header(), m.Payload() // flags and ack key set when taken
		}
		c.carry = nil
		if !more && b.bytes == 0 && len(pl) < tcpDirectMin {
			c.written += uint64(wire.HeaderLen + len(pl))
			c.rxSeen.Store(false)
			done, err := b.writeLone(c.raw, h, pl, wait)
			p.TxDone(m)
			if err != nil || !done {
				return !done, err
			}
			break
		}
		if !b.fits(len(pl)) {
			done, err := b.write(c.raw, wait)
			if err != nil {
				p.TxDone(m) // on the retransmit list: the path's next connection sends it
				return false, err
			}
			if !done {
				c.carry = m // first in the writer's next batch
				return true, nil
			}
			c.checkAcks()
		}
		b.add(m, h, pl)
		c.written += uint64(wire.HeaderLen + len(pl))
		p.TxDone(m)
	}
	if b.bytes > 0 {
		c.rxSeen.Store(false)
		if done, err := b.write(c.raw, wait); err != nil || !done {
			return !done, err
		}
	}
	progress := false
	if !direct {
		progress = c.checkAcks()
	}
	if !took {
		_, c.unacked = p.Pending()
	}
	unacked := c.unacked
	switch {
	case unacked == 0:
		c.tp.lone.Store(false)
		if c.armed {
			c.timer.Stop() // Go 1.23 timers: no stale tick to drain
			c.armed = false
		}
	case c.goLone(unacked, direct):
		// Left to later traffic; a poll still pending from a backlog
		// fires once more and then leaves it too.
		c.due.Store(c.ackDue())
	default:
		c.timer.Reset(c.polls.next(progress))
		c.armed = true
	}
	return false, nil
}

// checkAcks frees the messages TCP has acknowledged. Bytes still in the
// batch have not reached the socket, so they are subtracted too. Nothing
// counts as acknowledged before the peer has spoken on the connection
// (tcpConn.heard) or the connection has lived tcpAckTrust (a lane of a Go
// peer may never carry anything back): messages written before then are
// resent if the connection goes down.
func (c *tcpConn) checkAcks() bool {
	if c.txErr != nil {
		return false // written counts bytes a failed write never gave the kernel
	}
	if !c.trusted {
		if !c.heard.Load() && time.Since(c.upAt) < tcpAckTrust {
			return false
		}
		c.trusted = true
	}
	if err := c.raw.Control(c.outqFn); err != nil || c.outqErr != nil {
		return false
	}
	inKernel := c.written - uint64(c.batch.bytes)
	if uint64(c.outq) > inKernel {
		return false
	}
	acked := inKernel - uint64(c.outq)
	if acked == c.lastAcked {
		return false
	}
	c.lastAcked = acked
	n := c.tp.p.DropAcked(acked)
	c.unacked = max(c.unacked-n, 0)
	return n > 0
}

// readOutq is the RawConn.Control callback (kept as a method value so
// that polling allocates nothing).
func (c *tcpConn) readOutq(fd uintptr) {
	var e unix.Errno
	c.outq, e = rawOutq(fd)
	c.outqErr = nil
	if e != 0 {
		c.outqErr = e
	}
}
