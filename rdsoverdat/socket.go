package rdsoverdat

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Socket is an RDS socket (socket(PF_RDS, SOCK_SEQPACKET, 0)): reliable,
// ordered datagrams to any RDS address, over one connection per peer node.
// It implements net.PacketConn; SendMsg and RecvMsg add the flags and
// control messages of sendmsg(2)/recvmsg(2), and SetOption/Option the
// socket options of rds(7).
//
// A Socket is safe for concurrent use. Messages one Socket sends to one
// destination arrive in order; nothing is promised across sockets or
// destinations.
type Socket struct {
	stack  *Stack
	closed atomic.Bool
	done   chan struct{} // closed by Close: blocked calls return net.ErrClosed

	// Wake-ups, each a one-token channel: rxSig when a message,
	// notification or read deadline change arrives, txSig when SO_SNDBUF
	// room, a congestion change or a write deadline change arrives,
	// pollSig on any of these (for Wait).
	rxSig, txSig, pollSig chan struct{}

	// congMu serializes syncCong, which makes the node's map follow
	// congested; it is taken without mu held, and takes mu inside.
	congMu sync.Mutex

	mu          sync.Mutex
	node        *Node
	bound       netip.AddrPort
	trans       Transport // selected by SO_RDS_TRANSPORT or bind
	sndbuf      int
	rcvbuf      int
	sndBytes    int // payload bytes queued and not yet acknowledged
	rcvBytes    int // payload bytes waiting in rxq
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
	lanes       map[*Conn]*Path // multipath: each connection's lane for this socket
	rdma        sockRDMA        // RDMA mappings and notifications (rdma_mr.go)
	rxw         rxWaiter        // a blocked RecvMsg's buffer on offer (recv_direct.go)
	reader      sockReaderRole  // reader roles lent to this socket (recv_reader.go)

	k *kernelSocket // non-nil: a socket of the host kernel (Config.Kernel)
}

// Socket returns a new unbound socket.
func (st *Stack) Socket() *Socket {
	s := &Socket{
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
	if st.cfg.Kernel {
		s.k = newKernelSocket()
		if s.closed.Load() && s.k.f != nil {
			s.k.close()
		}
		// Only explicit settings: the kernel's own defaults otherwise.
		if st.cfg.userSendBuffer {
			s.k.setOption(SendBuffer(st.cfg.SendBuffer))
		}
		if st.cfg.userRecvBuffer {
			s.k.setOption(RecvBuffer(st.cfg.RecvBuffer))
		}
	}
	return s
}

// signal hands a wake-up token to one waiter, if none is pending.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Bind binds the socket to a local address and RDS port (bind(2)). The
// address must be a unicast IPv4 address local to this network namespace
// (EADDRNOTAVAIL otherwise, or ENOPROTOOPT when SO_RDS_TRANSPORT chose
// the transport, as the kernel's; EINVAL for INADDR_ANY, broadcast and
// multicast); port 0 picks a free port at random, port 1 is reserved for
// handshake probes (EINVAL); one socket per address and port
// (EADDRINUSE); a socket binds once (EINVAL). Binding attaches the
// transport chosen by SO_RDS_TRANSPORT, or the stack's default.
func (s *Socket) Bind(a netip.AddrPort) error {
	err := s.bind(a)
	if err != nil {
		return opErr("bind", netip.AddrPort{}, a, err)
	}
	return nil
}

func (s *Socket) bind(a netip.AddrPort) error {
	if s.closed.Load() {
		return errClosed
	}
	if s.k != nil {
		return s.k.bind(a)
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

// LocalAddr returns the bound address as an Addr (zero if unbound).
func (s *Socket) LocalAddr() net.Addr {
	if s.k != nil {
		return Addr(s.k.boundAddr())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return Addr(s.bound)
}

// BoundAddr returns the bound address and port (invalid if unbound).
func (s *Socket) BoundAddr() netip.AddrPort {
	if s.k != nil {
		return s.k.boundAddr()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// Node returns the node the socket is bound on (nil if unbound).
func (s *Socket) Node() *Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.node
}

// Buffered returns the payload bytes counted against SO_SNDBUF (queued
// or unacknowledged) and SO_RCVBUF (received, not yet read); 0, 0 on a
// kernel socket, which does not report them.
func (s *Socket) Buffered() (send, recv int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sndBytes, s.rcvBytes
}

// Close closes the socket (rds_release). Blocked calls return
// net.ErrClosed. Messages it sent that are not yet acknowledged are
// cancelled and may or may not reach their destination; messages waiting
// to be read are discarded (their senders already count them delivered);
// a congested port is uncongested and the peers told.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return opErr("close", netip.AddrPort{}, netip.AddrPort{}, errClosed)
	}
	close(s.done)
	s.stack.mu.Lock()
	delete(s.stack.sockets, s)
	s.stack.mu.Unlock()
	if s.k != nil {
		if err := s.k.close(); err != nil {
			return opErr("close", netip.AddrPort{}, netip.AddrPort{}, err)
		}
		return nil
	}
	s.mu.Lock()
	n, bound, congested := s.node, s.bound, s.congested
	var rx rxQueue
	rx, s.rxq = s.rxq, rxQueue{}
	s.rcvBytes, s.congested = 0, false
	rr := s.dropReader()
	s.mu.Unlock()
	if rr != nil {
		rr.r.giveBack()
	}
	s.interruptReader()
	for m := rx.pop(); m != nil; m = rx.pop() {
		m.release()
	}
	if n != nil {
		n.unbind(s, wire.Port(bound.Port()))
		if congested {
			s.syncCong(n, wire.Port(bound.Port()))
		}
		n.cancel(s, netip.AddrPort{})
	}
	s.rdmaClose()
	return nil
}

// SetDeadline sets both deadlines (net.PacketConn).
func (s *Socket) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline bounds blocked and future receives.
func (s *Socket) SetReadDeadline(t time.Time) error {
	if s.k != nil {
		return s.k.setDeadline(t, true)
	}
	s.mu.Lock()
	s.rdeadline = t
	s.mu.Unlock()
	signal(s.rxSig)
	s.interruptReader()
	return nil
}

// SetWriteDeadline bounds blocked and future sends.
func (s *Socket) SetWriteDeadline(t time.Time) error {
	if s.k != nil {
		return s.k.setDeadline(t, false)
	}
	s.mu.Lock()
	s.wdeadline = t
	s.mu.Unlock()
	signal(s.txSig)
	return nil
}

// block waits for a wake-up on sig. until is the SO_SNDTIMEO/SO_RCVTIMEO
// end of the operation (zero: none); the deadline is re-read on every
// wake-up. It returns nil on a wake-up (the caller re-checks its
// condition), or the error that ends the wait.
func (s *Socket) block(sig chan struct{}, until time.Time, read bool) error {
	return s.blockOr(sig, nil, until, read)
}

// blockOr is block woken by either of two channels (a nil one never).
func (s *Socket) blockOr(sig, sig2 chan struct{}, until time.Time, read bool) error {
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

// opEnd turns a timeout setting into the end time of an operation.
func opEnd(timeo time.Duration) time.Time {
	if timeo <= 0 {
		return time.Time{}
	}
	return time.Now().Add(timeo)
}
