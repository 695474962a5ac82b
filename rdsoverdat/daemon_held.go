package rdsoverdat

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// The client's side of receives handed ahead (daemon_ahead.go): the
// messages the daemon wrote ahead of the socket's receives, oldest
// first, which RecvMsg takes with no request, and the count of those
// read, reported to the daemon in the ring's ack word or as a credit.
// A receive that finds none waits for the daemon to push more when it
// pushes (waitPushed; daemon_push.go).
//
// A socket that sends control messages (RDMA), registers memory or
// turns RDS_CONG_MONITOR on can receive notifications, which a receive
// returns before any message: it stops asking for messages ahead, and
// whatever it still holds it takes only when the daemon answers a
// receive with CodeAhead, that is when no notification comes first.
type heldQueue struct {
	msgs  []heldMsg // msgs[head:] are held, oldest first
	head  int
	read  uint64 // handed messages read
	off   bool   // notifications possible: ask the daemon first
	cmu   sync.Mutex
	cread uint64 // the last credit written (under cmu)
	// The batches the held messages point into, oldest first: a batch
	// is the buffer its record was read into, kept whole rather than
	// copied message by message, and reused for a later read once all
	// its messages are read.
	batches []heldBatch
	bhead   int
	free    [][]byte
	total   uint64 // handed messages ever held

	// Pushing (daemon_push.go): push is whether the daemon pushes, as
	// far as the client knows (set with a request that asks for it,
	// cleared by the daemon's ask); waiter the receive that waits for a
	// batch (one at a time; others ask), wcall its call, made once;
	// rdeadline and rcvtimeo the socket's read deadline and whether
	// SO_RCVTIMEO is set, with which a receive asks instead.
	push      bool
	waiter    *dcall
	wcall     *dcall
	rdeadline time.Time
	rcvtimeo  bool
}

// heldBatch is the buffer of one batch and the count of handed
// messages held once its last one was (the value of total then).
type heldBatch struct {
	buf []byte
	end uint64
}

// heldFlags are the receive flags a held message serves.
const heldFlags = MsgPeek | MsgDontWait | MsgTrunc

type heldMsg struct {
	data []byte
	from netip.AddrPort
}

// hold keeps a batch of messages the daemon handed ahead (the reader):
// all of them, or none if the batch is malformed. r lies in *buf, which
// the batch keeps; *buf gets a buffer of an earlier batch in exchange.
func (k *daemonSocket) hold(r rdsdproto.Record, buf *[]byte) error {
	body := r.Body()
	if r.Flags() != rdsdproto.FlagReply || r.Code() != rdsdproto.CodeOK || r.A() != 0 || r.N() != 0 ||
		r.B() != uint64(len(body)) || r.C() == 0 || r.C() > uint64(len(body)/rdsdproto.AheadHeaderLen) ||
		r.AddrPort() != netip.AddrPortFrom(netip.IPv4Unspecified(), 0) {
		return rdsdproto.ErrBody
	}
	n := 0
	for rest := body; len(rest) > 0; n++ {
		var err error
		if _, _, rest, err = rdsdproto.NextAhead(rest); err != nil {
			return err
		}
	}
	if uint64(n) != r.C() {
		return rdsdproto.ErrBody
	}
	k.mu.Lock()
	q := &k.held
	if q.msgs == nil {
		// Room for two full batches, the most it holds, so that a
		// stream's first batches grow nothing.
		q.msgs = make([]heldMsg, 0, 2*aheadMsgs)
	}
	if q.head > 0 && len(q.msgs)+n > cap(q.msgs) {
		m := copy(q.msgs, q.msgs[q.head:])
		clear(q.msgs[m:])
		q.msgs, q.head = q.msgs[:m], 0
	}
	for rest := body; len(rest) > 0; {
		from, data, next, _ := rdsdproto.NextAhead(rest)
		rest = next
		q.msgs = append(q.msgs, heldMsg{data: data, from: from})
	}
	q.total += uint64(n)
	if q.bhead > 0 && len(q.batches) == cap(q.batches) {
		m := copy(q.batches, q.batches[q.bhead:])
		clear(q.batches[m:])
		q.batches, q.bhead = q.batches[:m], 0
	}
	q.batches = append(q.batches, heldBatch{buf: *buf, end: q.total})
	q.wake()
	var next []byte
	if f := len(q.free); f > 0 {
		next = q.free[f-1]
		q.free[f-1] = nil
		q.free = q.free[:f-1]
	}
	*buf = next
	k.mu.Unlock()
	return nil
}

// freeBatches recycles the buffers of batches whose messages are all
// read; k.mu is held.
func (q *heldQueue) freeBatches() {
	for q.bhead < len(q.batches) && q.batches[q.bhead].end <= q.read {
		if len(q.free) < maxFreeBatches {
			q.free = append(q.free, q.batches[q.bhead].buf[:0])
		}
		q.batches[q.bhead] = heldBatch{}
		q.bhead++
	}
	if q.bhead == len(q.batches) {
		q.batches, q.bhead = q.batches[:0], 0
	}
}

// maxFreeBatches is how many read batches' buffers a socket keeps. A
// client holds one batch at a time unless receives run concurrently: it
// asks for more only once it holds none.
const maxFreeBatches = 4

// takeHeld is a receive from the held messages: false if there is
// none, or if the daemon must be asked first (asked is false and
// notifications are possible), or for flags only the daemon serves.
func (k *daemonSocket) takeHeld(m *Msg, flags MsgFlags, asked bool) (int, bool) {
	if flags&^heldFlags != 0 || k.closed.Load() {
		return 0, false
	}
	k.mu.Lock()
	q := &k.held
	if q.head == len(q.msgs) || (q.off && !asked) || k.dead != nil {
		k.mu.Unlock()
		return 0, false
	}
	e := &q.msgs[q.head]
	n := copy(m.Data, e.data)
	if len(e.data) > len(m.Data) {
		m.Flags |= MsgTrunc
	}
	if flags&MsgTrunc != 0 {
		n = len(e.data)
	}
	m.Addr = e.from
	if flags&MsgPeek != 0 {
		k.mu.Unlock()
		return n, true
	}
	*e = heldMsg{}
	q.head++
	q.read++
	q.freeBatches()
	empty := q.head == len(q.msgs)
	if empty {
		q.msgs, q.head = q.msgs[:0], 0
	}
	// With rings the count goes in shared memory, where the daemon
	// reads it when it needs it; it asks for a record when it must know
	// at once. Published under k.mu so that counts only grow.
	tell := k.c.PublishAck(q.read)
	push := q.push
	k.mu.Unlock()
	if tell || (empty && !push) {
		k.sendCredit() // all read: the daemon stops counting them now
	}
	return n, true
}

// mayHold reports whether a receive with flags asks for messages ahead.
func (k *daemonSocket) mayHold(flags MsgFlags) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.held.off && flags&^MsgDontWait == 0
}

// holdOff stops asking for messages ahead: notifications are possible.
func (k *daemonSocket) holdOff() {
	k.mu.Lock()
	k.held.off = true
	k.mu.Unlock()
}

// sendCredit reports the handed messages read since the last report.
// Credits are cumulative and written in order, so the daemon applies
// each once.
func (k *daemonSocket) sendCredit() {
	q := &k.held
	k.mu.Lock()
	read := q.read
	k.mu.Unlock()
	q.cmu.Lock()
	defer q.cmu.Unlock()
	if read <= q.cread || k.c == nil {
		return
	}
	q.cread = read
	var hb [rdsdproto.HeaderLen]byte
	h := rdsdproto.New(hb[:], rdsdproto.OpRecv, 0, 0)
	h.SetB(recvCredit)
	h.SetC(read)
	k.c.Write(h) // a dead connection shows at the caller's next request
}

// wake wakes the receive that waits for a batch, if any, to look again;
// k.mu is held.
func (q *heldQueue) wake() {
	if q.waiter != nil {
		select {
		case q.waiter.done <- struct{}{}:
		default:
		}
	}
}

// wakeHeld is wake taking k.mu.
func (k *daemonSocket) wakeHeld() {
	k.mu.Lock()
	k.held.wake()
	k.mu.Unlock()
}

// pushing marks the daemon as asked to push, for a receive request
// about to be written, and reports whether it may be: rings, and no
// notifications possible.
func (k *daemonSocket) pushing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lead == nil || k.held.off {
		return false
	}
	k.held.push = true
	return true
}

// pushAsk is the daemon's ask (an OpRecv reply with ID 0 and CodeAhead):
// it stopped pushing, and the next receive that finds nothing held asks.
func (k *daemonSocket) pushAsk(r rdsdproto.Record) error {
	if r.Flags() != rdsdproto.FlagReply || len(r.Body()) != 0 || r.A() != 0 || r.B() != 0 || r.C() != 0 || r.N() != 0 ||
		r.AddrPort() != netip.AddrPortFrom(netip.IPv4Unspecified(), 0) {
		return rdsdproto.ErrBody
	}
	k.mu.Lock()
	k.held.push = false
	k.held.wake()
	empty := k.held.head == len(k.held.msgs)
	k.mu.Unlock()
	if empty {
		k.sendCredit() // it counts what is read with credits again
	}
	return nil
}

// waitPushed waits for a batch the daemon pushes, for a blocking
// receive that found nothing held: true when the receive should look at
// what it holds again, false when it must ask the daemon instead (not
// pushing, another receive waits already, SO_RCVTIMEO set, the read
// deadline passed, the socket closed or its connection ended). Nothing
// is lost either way: a batch that comes after it returned stays held.
func (k *daemonSocket) waitPushed() bool {
	k.mu.Lock()
	q := &k.held
	if !q.push || q.off || q.waiter != nil || q.rcvtimeo || k.dead != nil || k.closed.Load() {
		k.mu.Unlock()
		return false
	}
	if q.head < len(q.msgs) {
		k.mu.Unlock()
		return true
	}
	if q.wcall == nil {
		q.wcall = &dcall{done: make(chan struct{}, 1)}
	}
	c := q.wcall
	select {
	case <-c.done: // a wake-up left from an earlier wait
	default:
	}
	q.waiter = c
	dl := q.rdeadline
	k.mu.Unlock()
	var err error
	if dl.IsZero() {
		err = k.await(nil, c)
	} else if time.Until(dl) > 0 {
		ctx, cancel := context.WithDeadline(context.Background(), dl)
		err = k.await(ctx, c)
		cancel()
	} else {
		err = context.DeadlineExceeded
	}
	k.mu.Lock()
	q.waiter = nil
	k.mu.Unlock()
	return err == nil
}

// readDeadline records the read deadline t and wakes a receive waiting
// for a batch, which waits until the new one. Call it before the
// request that sets the daemon's: a waiting receive that reads the ring
// sees the wake-up once it has read that request's reply, at the
// latest.
func (k *daemonSocket) readDeadline(t time.Time) {
	k.mu.Lock()
	k.held.rdeadline = t
	k.held.wake()
	k.mu.Unlock()
}

// recvTimeout records whether SO_RCVTIMEO is set (a receive then asks,
// so that the daemon times it) and wakes a receive waiting for a batch;
// as readDeadline, before the request.
func (k *daemonSocket) recvTimeout(on bool) {
	k.mu.Lock()
	k.held.rcvtimeo = on
	k.held.wake()
	k.mu.Unlock()
}
