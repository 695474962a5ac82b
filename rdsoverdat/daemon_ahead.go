package rdsoverdat

import (
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Receives handed ahead (docs/RDSD.md). When the daemon answers a
// receive with a message and more are queued, it writes them to the
// client too, before the reply, as one OpRecv reply with ID 0 carrying
// a batch of them (rdsdproto's ahead.go); the client
// keeps them in order and its next receives take them with no request.
// They remain the socket's until the client reports them read; until
// then the core counts them against SO_RCVBUF and as readable
// (recv_ahead.go). Over rings the report is the ack word of the
// daemon's ring, which the daemon reads when it needs it, and a credit
// record when the daemon asks for one (daemon_push.go); without rings
// it is the credit (an OpRecv request with ID 0, recvCredit and the
// count of handed messages read so far in C, with no reply), written
// before the client's next request and whenever it has read all it
// holds.
//
// A receive request that arrives while the client holds messages it has
// not read (as the daemon knows it) is answered CodeAhead: the client
// takes the oldest it holds. The reply follows the handed messages in
// the ring, so they are there when it arrives. A notification waiting
// in the core goes first, as a receive would return it first.

// Flags of an OpRecv request's B.
const (
	recvAhead  = 1 << 0 // the client takes messages handed ahead
	recvCredit = 1 << 1 // a credit: C handed messages read, no reply
)

// The most a client holds ahead: enough messages to spare a busy
// receiver most of its requests, few enough bytes to keep the count
// the core sees close to what the client has read.
const (
	aheadMsgs  = 256
	aheadBytes = 64 << 10
)

// aheadLedger is what the daemon handed a client ahead and what it
// reported read.
type aheadLedger struct {
	mu    sync.Mutex
	lens  []int // sizes of the handed messages not reported read, oldest first
	head  int   // lens[head:] are those
	bytes int   // their sum
	sent  uint64
	read  uint64
	// readSeen is read, for a look without mu that finds nothing new.
	readSeen atomic.Uint64
	wmu      sync.Mutex // one hand-ahead at a time: take and write in order
	buf      []byte     // the batch being built (under wmu)
	rel      []*message // the batch's messages, to release (under wmu)
	// cong is whether the socket's port was congested when the last
	// batch was taken, for the pusher after one of its own.
	cong atomic.Bool
}

// unread returns the handed messages and bytes not reported read.
func (l *aheadLedger) unread() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lens) - l.head, l.bytes
}

// aheadFirst reports whether a receive with flags must take what the
// client holds: it holds messages unread, no notification comes before
// them, and the flags are those a held message serves (heldFlags; the
// core answers the others, MSG_OOB's at once).
func (dc *daemonConn) aheadFirst(flags MsgFlags) bool {
	if flags&^heldFlags != 0 {
		return false
	}
	if n, _ := dc.ahead.unread(); n == 0 {
		return false
	}
	sk, ok := dc.s.b.(*sock)
	return ok && !sk.notePending()
}

// credit applies a client's credit record: the count of handed
// messages it read, written when the daemon asked (WantAck) or, without
// pushing, when it has read all it holds. With rings its ack in shared
// memory may say more.
func (dc *daemonConn) credit(r rdsdproto.Record) error {
	if r.ID() != 0 || r.B() != recvCredit || len(r.Body()) != 0 {
		return rdsdproto.ErrBody
	}
	if err := dc.applyRead(r.C()); err != nil {
		return err
	}
	if err := dc.applyAck(); err != nil {
		return err
	}
	if sk, ok := dc.s.b.(*sock); ok && dc.c.Rings() && sk.congestedNow() {
		// Only a read can uncongest the port: the client must tell of
		// its next one too.
		dc.wantAck()
	}
	signal(dc.pushSig) // a pusher waiting for the client's reads
	return nil
}

// handAhead writes the messages queued on the socket to the client,
// within the client's allowance, as one batch, and returns how many. Taking and writing are
// one step under wmu, so that the goroutines handing ahead (the
// reader, the receiver goroutine, a transport's reader in pushNow)
// write their batches in the order they took them.
//
// pushed is a hand-ahead of the pusher's (daemon_push.go), which hands
// nothing once pushing is off (stopPush waits for one under way).
func (dc *daemonConn) handAhead(pushed bool) (int, error) {
	sk, ok := dc.s.b.(*sock)
	if !ok || dc.dying.Load() {
		return 0, nil
	}
	dc.pushBufs()
	l := &dc.ahead
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if pushed && !dc.push.Load() {
		return 0, nil
	}
	held, room := l.room()
	if held >= aheadMsgs || room <= 0 {
		return 0, nil
	}
	body, t := l.take(sk, l.buf[:0], aheadMsgs-held, room)
	if t.count == 0 {
		return 0, nil
	}
	var hb [rdsdproto.HeaderLen]byte
	return t.count, dc.c.Write(aheadHeader(hb[:], len(body), t.count), body)
}

// take takes a batch of at most most messages and room payload bytes
// queued on sk into body (takeAhead) and enters it in the ledger (wmu
// held): what a hand-ahead does before it writes the batch, wherever
// body lies.
func (l *aheadLedger) take(sk *sock, body []byte, most, room int) ([]byte, aheadTake) {
	body, t, rel := sk.takeAhead(body, most, room, l.rel)
	l.rel = rel
	l.cong.Store(t.congested)
	if t.count > 0 {
		l.count(body, t)
	}
	return body, t
}

// room returns the handed messages not reported read and the payload
// bytes the client may still be handed.
func (l *aheadLedger) room() (held, room int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lens) - l.head, aheadBytes - l.bytes
}

// count enters a batch taken (body, t) in the ledger, before the client
// can see it, so that its credits never run ahead of the ledger.
func (l *aheadLedger) count(body []byte, t aheadTake) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.head > 0 && len(l.lens)+t.count > cap(l.lens) {
		// At most aheadMsgs are unread: moving them keeps the
		// ledger in the slice it has.
		l.lens = l.lens[:copy(l.lens, l.lens[l.head:])]
		l.head = 0
	}
	for at := 0; at < len(body); {
		n := int(rdsdproto.AheadEntry(body[at:]).Len())
		l.lens = append(l.lens, n)
		at += rdsdproto.AheadHeaderLen + n
	}
	l.bytes += t.bytes
	l.sent += uint64(t.count)
}

// aheadHeader makes hb the header of a batch of count messages handed
// ahead in a body of n bytes, and returns it.
func aheadHeader(hb []byte, n, count int) rdsdproto.Record {
	h := rdsdproto.New(hb, rdsdproto.OpRecv, 0, 0)
	h.SetFlags(rdsdproto.FlagReply)
	h.SetB(uint64(n))
	h.SetC(uint64(count))
	return h
}
