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

// mayPost reports whether a blocking send of n bytes to dst may be
// posted now.
func (k *daemonSocket) mayPost(dst netip.AddrPort, n int) bool {
	if k.c == nil || k.closed.Load() || !validDest(dst) || n > maxMsgSize {
		return false
	}
	k.mu.Lock()
	bound := k.bound.IsValid()
	k.mu.Unlock()
	if !bound {
		return false
	}
	k.post.mu.Lock()
	sndbuf := k.post.sndbuf
	k.post.mu.Unlock()
	if sndbuf == 0 {
		var sb SendBuffer
		if k.option(&sb) != nil {
			return false
		}
		k.post.mu.Lock()
		if k.post.sndbuf == 0 {
			k.post.sndbuf = int(sb)
		}
		sndbuf = k.post.sndbuf
		k.post.mu.Unlock()
	}
	k.post.mu.Lock()
	defer k.post.mu.Unlock()
	return !k.post.timeo && !k.post.deadline && !k.post.monitor && n <= sndbuf &&
		k.post.posted-k.post.confirmed+uint64(n) <= uint64(sndbuf/2)
}

// postSend writes a posted send.
func (k *daemonSocket) postSend(p []byte, dst netip.AddrPort) (int, error) {
	var hb [rdsdproto.HeaderLen]byte
	h := rdsdproto.New(hb[:], rdsdproto.OpSend, 0, 0)
	h.SetAddrPort(dst)
	h.SetB(sendPosted)
	h.SetN(uint32(len(p)))
	k.post.wmu.Lock()
	err := k.c.Write(h, p)
	if err == nil {
		k.post.mu.Lock()
		k.post.posted += uint64(len(p))
		k.post.mu.Unlock()
	}
	k.post.wmu.Unlock()
	if err != nil {
		if k.closed.Load() {
			return 0, errClosed
		}
		return 0, ErrDaemonLost
	}
	return len(p), nil
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
