package rdsoverdat

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// sock is a socket of rdsoverdat's own RDS: the backend of a Socket of a
// Stack without Config.Kernel. It is the core's view of a socket: nodes
// deliver to it, connections queue its messages, and it accounts
// SO_SNDBUF and SO_RCVBUF.
type sock struct {
	stack  *Stack
	closed atomic.Bool
	done   chan struct{} // closed by Close: blocked calls return net.ErrClosed

	// Wake-ups, each a one-token channel: rxSig when a message,
	// notification or read deadline change arrives, txSig when SO_SNDBUF
	// room, a congestion change or a write deadline change arrives,
	// pollSig on any of these (for Wait).
	rxSig, txSig, pollSig chan struct{}
	// pollers counts the Waits in progress: pollSig gets its token
	// only while one runs (signalPoll).
	pollers atomic.Int32
	// wakeDue: a transport's reader delivered to s and wakes it at the
	// end of its read (xport.Wakes); Wake clears it. A daemon's pusher
	// that finds messages queued while it is set waits for that
	// wake-up, so that it hands the read's messages ahead in one batch.
	wakeDue atomic.Bool
	// pusher is the daemon connection that pushes s's messages to its
	// client, and pushIdle says it sleeps in waitPush: the wake-up at
	// the end of a read then lets it hand them ahead itself (pushNow),
	// on the reader's goroutine, and wakes the pusher only for what
	// that left (daemon_push.go).
	pusher   atomic.Pointer[daemonConn]
	pushIdle atomic.Bool
	// nodePort is the port s holds in its node's map, set under the
	// node's lock when bound and kept until s closes, so that a reader
	// that cached s checks its port without the map (readerTarget).
	nodePort atomic.Uint32

	// congMu serializes syncCong, which makes the node's map follow
	// congested; it is taken without mu held, and takes mu inside.
	congMu sync.Mutex

	mu          sync.Mutex
	node        *rdsNode
	bound       netip.AddrPort
	trans       Transport // selected by SO_RDS_TRANSPORT or bind
	sndbuf      int
	rcvbuf      int
	sndBytes    int  // payload bytes queued and not yet acknowledged
	roomWant    bool // counted in node.roomWanted (wantRoomLocked)
	rcvBytes    int  // payload bytes waiting in rxq
	ahead       int  // payload bytes handed ahead to a daemon client, unread there (recv_ahead.go)
	aheadN      int  // messages handed ahead, unread
	rxq         rxQueue
	congested   bool // our port's bit is set in the node's map
	congMonitor bool
	congMask    uint64 // ports of interest (RDS_CONG_MONITOR)
	congNotify  uint64 // uncongested ports to report (RDS_CMSG_CONG_UPDATE)
	congTrack   uint64 // congestion generation last reported by Poll
	sndTimeo    time.Duration
	rcvTimeo    time.Duration
	rdeadline   time.Time
	wdeadline   time.Time
	recvErr     bool
	pathHash    uint32
	lanes       map[*connection]*connPath // multipath: each connection's lane for this socket
	// txConn is the connection of the last send, to txIP: a node keeps
	// its connections for good, so a socket that sends to one peer finds
	// it here instead of in the node's map, under its read lock, on every
	// send. A bound socket's transport never changes (setTransport
	// refuses a second one), so the transport need not be noted.
	txConn *connection
	txIP   netip.Addr
	rdma   sockRDMA       // RDMA mappings and notifications (rdma_mr.go)
	rxw    rxWaiter       // a blocked RecvMsg's buffer on offer (recv_direct.go)
	reader sockReaderRole // reader roles lent to this socket (recv_reader.go)
	sink   rxSink         // a daemon's batch the transport writes into (recv_sink.go)

	// roomWaiters (under mu) is how many senders of s found no SO_SNDBUF
	// room and block for it (admit), counted in the hold of mu that found
	// none, so that a sender admitted under mu knows whether room it
	// leaves over has anyone to go to (admitLocked).
	roomWaiters int

	// spares (under mu) are up to maxSpares messages of s that acks
	// freed, reset and linked by next, which its next sends fill instead
	// of messages from msgPool: a sender that waits for each answer
	// takes and gives back a message per round trip, and the pool costs
	// more than mu, which both ends take anyway.
	spares spareList
}

// newSock returns a new unbound socket of st, registered with it.
func newSock(st *Stack) *sock {
	s := &sock{
		stack:   st,
		done:    make(chan struct{}),
		rxSig:   make(chan struct{}, 1),
		txSig:   make(chan struct{}, 1),
		pollSig: make(chan struct{}, 1),
		sndbuf:  st.cfg.SendBuffer,
		rcvbuf:  st.cfg.RecvBuffer,
		rxw:     newRxWaiter(),
	}
	st.mu.Lock()
	if st.closed {
		s.closed.Store(true)
		close(s.done)
	} else {
		st.sockets[s] = struct{}{}
	}
	st.mu.Unlock()
	return s
}

// signalPoll signals pollSig if a Wait runs. A Wait counts itself
// before it looks at the socket and a change is made before the count
// is read, so either the Wait sees the change or the change sees the
// Wait; with none running, what the signal cost (a runtime call to
// find the token already there, on every message delivered and every
// ack) is saved, and the next Wait looks at the socket first anyway.
func (s *sock) signalPoll() {
	if s.pollers.Load() > 0 {
		signal(s.pollSig)
	}
}

// signal hands a wake-up token to one waiter, if none is pending. A
// pending token is seen by the channel's length alone: most signals (a
// freed message's room, a poll) find the last one still unread, and a
// non-blocking send takes the channel's lock to fail.
func signal(c chan struct{}) {
	if len(c) > 0 {
		return
	}
	select {
	case c <- struct{}{}:
	default:
	}
}

func (s *sock) bind(a netip.AddrPort) error {
	if s.closed.Load() {
		return errClosed
	}
	ip := a.Addr().Unmap()
	switch {
	case !ip.Is4():
		return eINVAL
	case ip.IsUnspecified(), ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}), ip.IsMulticast():
		return eINVAL
	case a.Port() == uint16(wire.ProbePort):
		return eINVAL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.node != nil {
		return eINVAL
	}
	ok, err := s.stack.cfg.IsLocal(ip)
	if err != nil {
		return err
	}
	if !ok {
		if s.trans != nil {
			return eNOPROTOOPT // rds_bind: the transport chosen by SO_RDS_TRANSPORT refuses the address
		}
		return eADDRNOTAVAIL
	}
	tr := s.trans
	if tr == nil {
		tr = s.stack.defaultTransport()
	}
	n, err := s.stack.node(ip)
	if err != nil {
		return err
	}
	port, err := n.bind(s, wire.Port(a.Port()))
	if err != nil {
		return err
	}
	s.node, s.trans = n, tr
	s.bound = netip.AddrPortFrom(ip, uint16(port))
	s.pathHash = pathHash(port)
	return nil
}

// pathHash spreads sockets over paths by bound port (the kernel's
// RDS_MPATH_HASH uses jhash of the port; any fixed mix keeps a socket on
// one path, which is what ordering needs).
func pathHash(p wire.Port) uint32 {
	h := uint32(p) * 0x9e3779b1
	return h ^ h>>16
}

// boundAddr returns the bound address and port (invalid if unbound).
func (s *sock) boundAddr() netip.AddrPort {
	s.mu.Lock()
	a := s.bound
	s.mu.Unlock()
	return a
}

// boundNode returns the node the socket is bound on (nil if unbound).
func (s *sock) boundNode() *rdsNode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.node
}

// buffered returns the payload bytes counted against SO_SNDBUF and
// SO_RCVBUF, once the acks that have come are settled.
func (s *sock) buffered() (send, recv int) {
	if n := s.boundNode(); n != nil {
		n.settleAcks()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sndBytes, s.rcvBytes + s.ahead
}

// close is rds_release: see Socket.Close.
func (s *sock) close() error {
	if s.closed.Swap(true) {
		return errClosed
	}
	close(s.done)
	s.stack.mu.Lock()
	delete(s.stack.sockets, s)
	s.stack.mu.Unlock()
	s.mu.Lock()
	n, bound, congested := s.node, s.bound, s.congested
	var rx rxQueue
	rx, s.rxq = s.rxq, rxQueue{}
	s.rcvBytes, s.ahead, s.aheadN, s.congested = 0, 0, 0, false
	s.dropSink()
	if s.roomWant {
		s.roomWant = false
		n.roomWanted.Add(-1)
	}
	rr := s.dropReader()
	spares := s.spares.takeAll()
	s.mu.Unlock()
	recycleList(spares)
	if rr != nil {
		rr.R.GiveBack()
	}
	s.interruptReader()
	for m := rx.pop(); m != nil; m = rx.pop() {
		m.release()
	}
	if n != nil {
		n.unbind(s, wire.Port(bound.Port()))
		if congested {
			s.syncCong()
		}
		n.cancel(s, netip.AddrPort{})
	}
	s.rdmaClose()
	return nil
}

// setDeadline sets the read or the write deadline and wakes the
// operations it bounds.
func (s *sock) setDeadline(t time.Time, read bool) error {
	s.mu.Lock()
	if read {
		s.rdeadline = t
	} else {
		s.wdeadline = t
	}
	s.mu.Unlock()
	if read {
		signal(s.rxSig)
		s.interruptReader()
	} else {
		signal(s.txSig)
	}
	return nil
}

// block waits for a wake-up on sig. until is the SO_SNDTIMEO/SO_RCVTIMEO
// end of the operation (zero: none); the deadline is re-read on every
// wake-up. It returns nil on a wake-up (the caller re-checks its
// condition), or the error that ends the wait.
func (s *sock) block(sig chan struct{}, until time.Time, read bool) error {
	return s.blockOr(sig, nil, until, read)
}

// blockOr is block woken by either of two channels (a nil one never).
func (s *sock) blockOr(sig, sig2 chan struct{}, until time.Time, read bool) error {
	s.mu.Lock()
	dl := s.wdeadline
	if read {
		dl = s.rdeadline
	}
	s.mu.Unlock()
	var limit time.Time
	var limitErr error
	if !dl.IsZero() {
		limit, limitErr = dl, errDeadline
	}
	if !until.IsZero() && (limit.IsZero() || until.Before(limit)) {
		limit, limitErr = until, eTIMEDOUT
	}
	if limit.IsZero() {
		select {
		case <-sig:
			return nil
		case <-sig2:
			return nil
		case <-s.done:
			return errClosed
		}
	}
	d := time.Until(limit)
	if d <= 0 {
		return limitErr
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-sig:
		return nil
	case <-sig2:
		return nil
	case <-s.done:
		return errClosed
	case <-t.C:
		return limitErr
	}
}

// opEnd turns a timeout setting into the end time of an operation. Every
// send and receive asks, and most have no timeout: the test is inlined,
// the clock read is not.
func opEnd(timeo time.Duration) time.Time {
	if timeo <= 0 {
		return time.Time{}
	}
	return opEndAfter(timeo)
}

func opEndAfter(timeo time.Duration) time.Time { return time.Now().Add(timeo) }
