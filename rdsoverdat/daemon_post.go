package rdsoverdat

import (
	"net/netip"
	"sync"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Posted sends. A blocking send that cannot fail for any reason the
// client does not know of is posted: written to the daemon with no
// reply awaited, so that a busy sender pays no round trip per message.
// The daemon queues posted sends in order; one that must wait (SO_SNDBUF
// full, congested port) waits there, in a goroutine of the connection,
// with every later send of the socket behind it, as the caller would
// have waited. A send may be posted when:
//   - it is blocking (no MSG_DONTWAIT: its EAGAIN/ENOBUFS would have to
//     be returned), with no control messages, on a bound socket, to a
//     unicast IPv4 destination, no longer than SO_SNDBUF and 1 MiB;
//   - no write deadline or SO_SNDTIMEO could end its wait, and
//     RDS_CONG_MONITOR is off;
//   - the bytes posted and not yet confirmed stay within half of
//     SO_SNDBUF: a send that would exceed it goes as a request, and its
//     reply confirms every send posted before it (the daemon answers in
//     order). So the client never holds more than SO_SNDBUF in flight to
//     the daemon, on top of what the daemon's socket counts.
//
// What can still fail in the daemon is a node closing under the socket;
// the daemon reports it in a reply with ID 0, and the socket's next send
// returns it, as a later call returns a socket's asynchronous error.
type postState struct {
	mu        sync.Mutex
	sndbuf    int  // SO_SNDBUF as last set or read (0: not known yet)
	timeo     bool // SO_SNDTIMEO set
	deadline  bool // a write deadline set
	monitor   bool // RDS_CONG_MONITOR on
	posted    uint64
	confirmed uint64
	err       error // a posted send's failure, for the next send

	wmu sync.Mutex // orders posting against the requests that confirm
}

// optionSet tracks the options that decide posting.
func (k *daemonSocket) optionSet(o Option) {
	k.post.mu.Lock()
	defer k.post.mu.Unlock()
	switch v := o.(type) {
	case SendBuffer:
		k.post.sndbuf = int(v)
	case SendTimeout:
		k.post.timeo = v != 0
	case CongMonitor:
		k.post.monitor = v.Enable
	}
}

// tryPost posts a blocking send of p to dst if it may be posted now
// (posted true), or returns a posted send's failure for this send to
// report; otherwise the caller sends a request. One pass under the
// write lock decides, counts and writes, so that a send costs two locks.
func (k *daemonSocket) tryPost(p []byte, dst netip.AddrPort) (n int, posted bool, err error) {
	if k.c == nil || k.closed.Load() || !validDest(dst) || len(p) > maxMsgSize || !k.isBound.Load() {
		return 0, false, k.takePostErr()
	}
	k.post.wmu.Lock()
	k.post.mu.Lock()
	if err := k.post.err; err != nil {
		k.post.err = nil
		k.post.mu.Unlock()
		k.post.wmu.Unlock()
		return 0, false, err
	}
	if k.post.sndbuf == 0 {
		// Not known yet (once per socket): ask the daemon, then decide
		// again.
		k.post.mu.Unlock()
		k.post.wmu.Unlock()
		if !k.knowSndbuf() {
			return 0, false, k.takePostErr()
		}
		return k.tryPost(p, dst)
	}
	sndbuf, n64 := k.post.sndbuf, uint64(len(p))
	ok := !k.post.timeo && !k.post.deadline && !k.post.monitor && len(p) <= sndbuf &&
		k.post.posted-k.post.confirmed+n64 <= uint64(sndbuf/2)
	if ok {
		// Counted before the write, which the write lock orders before
		// any request that reads the count (callSend).
		k.post.posted += n64
	}
	k.post.mu.Unlock()
	if !ok {
		k.post.wmu.Unlock()
		return 0, false, nil
	}
	var hb [rdsdproto.HeaderLen]byte
	h := rdsdproto.New(hb[:], rdsdproto.OpSend, 0, 0)
	h.SetAddrPort(dst)
	h.SetB(sendPosted)
	h.SetN(uint32(len(p)))
	werr := k.c.Write(h, p)
	k.post.wmu.Unlock()
	if werr != nil {
		if k.closed.Load() {
			return 0, true, errClosed
		}
		return 0, true, ErrDaemonLost
	}
	return len(p), true, nil
}

// knowSndbuf makes sure SO_SNDBUF is known, asking the daemon once;
// false if it cannot be read.
func (k *daemonSocket) knowSndbuf() bool {
	k.post.mu.Lock()
	known := k.post.sndbuf != 0
	k.post.mu.Unlock()
	if known {
		return true
	}
	var sb SendBuffer
	if k.option(&sb) != nil || sb <= 0 {
		return false
	}
	k.post.mu.Lock()
	if k.post.sndbuf == 0 {
		k.post.sndbuf = int(sb)
	}
	k.post.mu.Unlock()
	return true
}

// callSend runs a send request; its reply confirms the sends posted
// before it.
func (k *daemonSocket) callSend(c *dcall, h rdsdproto.Record, body ...[]byte) (rdsdproto.Record, error) {
	k.post.wmu.Lock()
	k.post.mu.Lock()
	upTo := k.post.posted
	k.post.mu.Unlock()
	// The request must follow every send posted so far on the wire:
	// holding wmu across the write orders them.
	c.afterWrite = k.post.wmu.Unlock
	r, err := k.call(nil, c, h, body...)
	if err == nil || r != nil {
		k.post.mu.Lock()
		k.post.confirmed = max(k.post.confirmed, upTo)
		k.post.mu.Unlock()
	}
	return r, err
}

// postFailed records the failure of a posted send.
func (k *daemonSocket) postFailed(err error) {
	k.post.mu.Lock()
	if k.post.err == nil {
		k.post.err = err
	}
	k.post.mu.Unlock()
}

// takePostErr returns and clears a posted send's failure.
func (k *daemonSocket) takePostErr() error {
	k.post.mu.Lock()
	defer k.post.mu.Unlock()
	err := k.post.err
	k.post.err = nil
	return err
}
