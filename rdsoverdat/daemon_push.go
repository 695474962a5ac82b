package rdsoverdat

import (
	"errors"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Pushing (docs/RDSD.md): a client whose receives take messages handed
// ahead, over rings, asks for them pushed (recvPush on its receive
// requests). The connection's receiver goroutine then hands messages
// ahead as they arrive whenever no receive request waits, so that a
// client that has read all it holds waits on its ring for the next
// batch, with no request: one wake-up per catch-up, as a receiver in
// process has, where asking costs the request's crossing and the
// daemon's hand-over to the receiver goroutine besides.
//
// The client reports what it read in the ring's shared memory (an ack,
// shmring's ack.go), not with a record: the daemon reads the count when
// it needs it (before it hands more ahead, before it answers a receive,
// a poll, a wait or Buffered) and asks for a record (the credit) only
// when it must learn of a read as it happens: when the client holds all
// it may (the allowance of aheadMsgs and aheadBytes), and while the
// socket's port is congested, since only a read can uncongest it.
// Between those, the core's count of what the client holds (SO_RCVBUF,
// Buffered, rds-info) lags by what the client read since the daemon
// last looked.
//
// The daemon stops pushing, and tells the client with a record (an
// OpRecv reply with ID 0 and CodeAhead, no body: ask), when the next
// message cannot be handed ahead (an RDMA cookie, larger than the
// allowance) or a notification waits: the client's next receive is then
// a request, and that request turns pushing on again. A receive request
// without recvPush (the client can get notifications) turns it off.

// recvPush is the flag of an OpRecv request's B by which a client asks
// for messages pushed (daemon_ahead.go has the others).
const recvPush = 1 << 2

// pushStep is one step of the receiver goroutine while the client asks
// for pushes and no receive request waits: it hands ahead what is
// queued, or waits for something to do (a message, room in the
// client's allowance, a request, the end).
//
// While it sleeps for messages (waitPush), the transport's reader hands
// them ahead itself at the end of each read (pushNow), and wakes it only
// for what it could not: a full allowance or ring, a message that must
// be asked for, a congested port, another hand-ahead under way.
func (dc *daemonConn) pushStep() {
	dc.steps.Add(1)
	sk, ok := dc.s.b.(*sock)
	if !ok || dc.dying.Load() || sk.closed.Load() {
		// A closed socket has nothing more to push.
		dc.push.Store(false)
		return
	}
	if err := dc.applyAck(); err != nil {
		dc.hostile(err)
		return
	}
	n, err := dc.handAhead(true)
	if err != nil {
		dc.push.Store(false) // the connection is ending
		return
	}
	if !dc.push.Load() {
		return // stopped meanwhile
	}
	if n > 0 && dc.ahead.cong.Load() {
		dc.wantAck()
	}
	held, bytes := dc.ahead.unread()
	present, pushable, size, congested := sk.aheadHead(aheadBytes)
	full := held >= aheadMsgs || size > aheadBytes-bytes
	switch {
	case present && pushable && !full:
		return // it came after handAhead looked
	case present && pushable:
		// The client holds all it may: wait for its reads.
		sk.releaseReader()
		if !dc.wantAck() {
			return // it read some meanwhile
		}
		select {
		case <-dc.pushSig:
		case <-dc.recvSig:
		case <-dc.gone:
		}
	case present:
		// A message that must go to a receive request, or a
		// notification before it: ask.
		if congested {
			dc.wantAck()
		}
		sk.releaseReader()
		dc.push.Store(false) // before the record: see the client's waitPushed
		var hb [rdsdproto.HeaderLen]byte
		h := rdsdproto.New(hb[:], rdsdproto.OpRecv, 0, 0)
		dc.replyCode(h, rdsdproto.CodeAhead)
	default:
		if congested {
			dc.wantAck()
		}
		dc.pushBufs()
		sk.pusher.Store(dc)
		sk.waitPush(dc.recvSig, dc.gone)
	}
}

// pushNow hands ahead, on a transport's reader at the end of a read
// (sock.wake), what its read queued on the socket while the pusher
// sleeps, and reports whether it left the pusher nothing to do. It never
// waits: not for another hand-ahead (wmu), nor for the client's ring
// (TryReserve), so that a client that stops reading holds up no other
// socket of the connection; what it cannot place, or a batch that
// leaves the port congested (the pusher asks for the client's next
// read), is the pusher's. The batch goes from the socket's queue into
// the ring record itself.
func (dc *daemonConn) pushNow() bool {
	sk, ok := dc.s.b.(*sock)
	if !ok || dc.dying.Load() || !dc.c.Rings() {
		return false
	}
	l := &dc.ahead
	if !l.wmu.TryLock() {
		return false
	}
	defer l.wmu.Unlock()
	if !dc.push.Load() || !sk.pushIdle.Load() {
		return false
	}
	if err := dc.applyAck(); err != nil {
		return false // the pusher ends the connection
	}
	held, room := l.room()
	if held >= aheadMsgs || room <= 0 {
		return false
	}
	most := aheadMsgs - held
	body, ok := dc.c.TryReserve(room + most*rdsdproto.AheadHeaderLen)
	if !ok {
		return false
	}
	body, t := l.take(sk, body, most, room)
	if t.count == 0 {
		dc.c.AbortReserved()
		return !t.rest && !t.congested
	}
	var hb [rdsdproto.HeaderLen]byte
	if err := dc.c.CommitReserved(aheadHeader(hb[:], len(body), t.count), len(body)); err != nil {
		return false
	}
	return !t.rest && !t.congested
}

// pushBufs makes the buffers of handing ahead and pushing, whole, when
// the socket first hands a message ahead: a socket that only sends
// needs none, and one that receives none grown while its stream starts.
func (dc *daemonConn) pushBufs() {
	dc.bufOnce.Do(func() {
		l := &dc.ahead
		l.wmu.Lock()
		l.buf = make([]byte, 0, aheadBytes+aheadMsgs*rdsdproto.AheadHeaderLen)
		l.wmu.Unlock()
		l.mu.Lock()
		l.lens = make([]int, 0, 2*aheadMsgs)
		l.mu.Unlock()
	})
}

// wantAck asks the client to report its next read with a credit record,
// then applies what it reported meanwhile; true if that freed nothing.
func (dc *daemonConn) wantAck() bool {
	dc.c.WantAck(true)
	before, _ := dc.ahead.unread()
	if err := dc.applyAck(); err != nil {
		dc.hostile(err)
		return false
	}
	after, _ := dc.ahead.unread()
	return after == before
}

// applyAck applies the count of handed messages the client published in
// shared memory (nothing without rings).
func (dc *daemonConn) applyAck() error {
	if !dc.c.Rings() {
		return nil
	}
	c := dc.c.PeerAck()
	if c <= dc.ahead.readSeen.Load() {
		return nil // nothing new: the pusher looks at every step
	}
	return dc.applyRead(c)
}

// applyRead applies a client's count of handed messages read, from a
// credit record or its ack. An older count than one applied (two
// goroutines of the client, a record behind the ack) says nothing new;
// one beyond what was handed is malformed.
func (dc *daemonConn) applyRead(c uint64) error {
	l := &dc.ahead
	l.mu.Lock()
	if c > l.sent {
		l.mu.Unlock()
		return errors.New("a credit for messages never handed ahead")
	}
	msgs, bytes := 0, 0
	for ; l.read < c; l.read++ {
		bytes += l.lens[l.head]
		l.head++
		msgs++
	}
	l.bytes -= bytes
	if l.head == len(l.lens) {
		l.lens, l.head = l.lens[:0], 0
	}
	l.readSeen.Store(l.read)
	l.mu.Unlock()
	if sk, ok := dc.s.b.(*sock); ok && msgs > 0 {
		sk.aheadRead(msgs, bytes)
	}
	return nil
}

// hostile ends a connection whose client wrote a count it cannot have
// (found outside the reader, which ends it on a malformed record).
func (dc *daemonConn) hostile(err error) {
	dc.push.Store(false)
	dc.log.Warn().Err(err).Msg("closing client connection")
	dc.c.Close()
}

// stopPush stops pushing before a request after which the socket can
// get notifications, which a receive returns before any message: the
// client asks from then on (it stops asking for pushes itself), and no
// hand-ahead of the pusher's is under way once stopPush returns.
func (dc *daemonConn) stopPush() {
	if !dc.push.Swap(false) {
		return
	}
	// A hand-ahead holds wmu from its check of push to its write.
	dc.ahead.wmu.Lock()
	dc.ahead.wmu.Unlock()
}
