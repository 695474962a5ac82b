package rdsoverdat

import (
	"bufio"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// The tcp transmit side (tcp_send.c): the writer goroutine takes messages
// off the path in order and writes header and payload into a buffered
// writer, flushing whenever the queue runs dry. Each message's ack key is
// the stream offset just past its last byte; once TCP's unacknowledged
// byte count (TIOCOUTQ) shows the peer has everything up to that offset,
// the message leaves the retransmit list, as rds_tcp_write_space does on
// every TCP ack. While messages wait for acks and nothing else happens,
// the writer polls that count with a backoff.

const (
	ackPollMin   = 100 * time.Microsecond
	ackPollMax   = 10 * time.Millisecond
	ackCheckEach = 64 // messages between ack checks while streaming
	tcpBufSize   = 64 << 10
)

func (c *tcpConn) routineSend() {
	defer c.tp.tn.wg.Done()
	p := c.tp.p
	bw := bufio.NewWriterSize(c.nc, tcpBufSize)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	poll := ackPollMin
	sinceCheck := 0
	var err error
	defer func() { c.writerExit(err) }()
	for {
		m := p.NextTx()
		if m == nil {
			if bw.Buffered() > 0 {
				if err = bw.Flush(); err != nil {
					return
				}
			}
			progress := c.checkAcks(bw)
			sinceCheck = 0
			if _, unacked := p.Pending(); unacked > 0 {
				if progress {
					poll = ackPollMin
				} else {
					poll = min(2*poll, ackPollMax)
				}
				timer.Reset(poll)
			}
			select {
			case <-c.tp.kick:
			case <-c.stop:
				c.checkAcks(bw)
				return
			case <-timer.C:
			}
			timer.Stop() // Go 1.23 timers: no stale tick to drain
			continue
		}
		h := m.Header()
		h.SetFlags(m.WireFlags())
		if _, err = bw.Write(h); err == nil {
			_, err = bw.Write(m.buf)
		}
		c.written += uint64(wire.HeaderLen + len(m.buf))
		if !m.IsCongMap() {
			m.SetAckKey(c.written)
		}
		p.TxDone(m)
		if err != nil {
			return
		}
		if sinceCheck++; sinceCheck >= ackCheckEach {
			sinceCheck = 0
			c.checkAcks(bw)
		}
	}
}

// checkAcks frees the messages TCP has acknowledged. Bytes still in bw
// have not reached the socket, so they are subtracted too.
func (c *tcpConn) checkAcks(bw *bufio.Writer) bool {
	if err := c.raw.Control(c.outqFn); err != nil || c.outqErr != nil {
		return false
	}
	inKernel := c.written - uint64(bw.Buffered())
	if uint64(c.outq) > inKernel {
		return false
	}
	acked := inKernel - uint64(c.outq)
	if acked == c.lastAcked {
		return false
	}
	c.lastAcked = acked
	return c.tp.p.DropAcked(acked) > 0
}

// readOutq is the RawConn.Control callback (kept as a method value so
// that polling allocates nothing).
func (c *tcpConn) readOutq(fd uintptr) {
	c.outq, c.outqErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ)
}
