package rdsoverdat

import (
	"context"
	"net"
	"net/netip"
	"time"
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
	b backend
}

// backend is what a Socket runs on: rdsoverdat's own RDS (sock) or the
// host kernel's AF_RDS (kernelSocket), chosen once by Config.Kernel. The
// Socket checks what is common to both (flags, destinations) and turns
// the errno a backend returns into the *net.OpError callers see.
type backend interface {
	bind(a netip.AddrPort) error
	boundAddr() netip.AddrPort
	boundNode() *rdsNode // nil where the kernel holds the node
	buffered() (send, recv int)
	close() error
	setDeadline(t time.Time, read bool) error
	sendmsg(p []byte, dst netip.AddrPort, cm []ControlMessage, flags MsgFlags) (int, error)
	recvmsg(m *Msg, flags MsgFlags) (int, error)
	setOption(o Option) error
	option(o Option) error
	poll() Events
	wait(ctx context.Context, want Events) (Events, error)
	getMR(mem []byte, flags RDMAFlags) (Cookie, error)
	freeMR(c Cookie, flags RDMAFlags) error
	mrs() int
}

// Socket returns a new unbound socket.
func (st *Stack) Socket() *Socket {
	if st.cfg.Kernel {
		return &Socket{b: newKernelSocket(st)}
	}
	if st.cfg.Daemon != "" {
		return &Socket{b: newDaemonSocket(st)}
	}
	return &Socket{b: newSock(st)}
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
	if err := s.b.bind(a); err != nil {
		return opErr("bind", netip.AddrPort{}, a, err)
	}
	return nil
}

// LocalAddr returns the bound address as an Addr (zero if unbound).
func (s *Socket) LocalAddr() net.Addr { return Addr(s.b.boundAddr()) }

// BoundAddr returns the bound address and port (invalid if unbound).
func (s *Socket) BoundAddr() netip.AddrPort { return s.b.boundAddr() }

// node returns the node the socket is bound on (nil if unbound, and on a
// kernel socket, whose node is the kernel's).
func (s *Socket) node() *rdsNode { return s.b.boundNode() }

// Buffered returns the payload bytes counted against SO_SNDBUF (queued
// or unacknowledged) and SO_RCVBUF (received, not yet read); 0, 0 on a
// kernel socket, which does not report them.
func (s *Socket) Buffered() (send, recv int) { return s.b.buffered() }

// Close closes the socket (rds_release). Blocked calls return
// net.ErrClosed. Messages it sent that are not yet acknowledged are
// cancelled and may or may not reach their destination; messages waiting
// to be read are discarded (their senders already count them delivered);
// a congested port is uncongested and the peers told.
func (s *Socket) Close() error {
	if err := s.b.close(); err != nil {
		return opErr("close", netip.AddrPort{}, netip.AddrPort{}, err)
	}
	return nil
}

// SetDeadline sets both deadlines (net.PacketConn).
func (s *Socket) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

// SetReadDeadline bounds blocked and future receives.
func (s *Socket) SetReadDeadline(t time.Time) error { return s.b.setDeadline(t, true) }

// SetWriteDeadline bounds blocked and future sends.
func (s *Socket) SetWriteDeadline(t time.Time) error { return s.b.setDeadline(t, false) }

// SendMsg sends m.Data to m.Addr as one message and returns its length
// once it is queued; delivery is asynchronous. Errors (as errno):
// EOPNOTSUPP for flags other than MsgDontWait; EINVAL for an invalid,
// wildcard, broadcast or multicast destination or an unknown control
// message; ENOTCONN if the socket is unbound or m.Addr is the zero
// AddrPort (no destination); EMSGSIZE above SO_SNDBUF, and above 1 MiB
// (then also ErrMsgTooBig); ENOBUFS if the destination port is congested (with
// MsgDontWait; otherwise it waits); EAGAIN if SO_SNDBUF is full (with
// MsgDontWait; otherwise it waits up to SO_SNDTIMEO, then ETIMEDOUT, or
// the write deadline, then os.ErrDeadlineExceeded). SO_SNDBUF is full
// when the unacknowledged bytes reach it: a send admitted below it may
// take them past it, as the kernel's does.
func (s *Socket) SendMsg(m *Msg, flags MsgFlags) (int, error) {
	return s.send(m.Data, m.Addr, m.Control, flags)
}

// WriteTo sends p to addr (net.PacketConn): an Addr, *Addr or
// *net.UDPAddr naming an IPv4 address and RDS port.
func (s *Socket) WriteTo(p []byte, addr net.Addr) (int, error) {
	var dst netip.AddrPort
	switch a := addr.(type) {
	case Addr:
		dst = netip.AddrPort(a)
	case *Addr:
		dst = netip.AddrPort(*a)
	case *net.UDPAddr:
		dst = a.AddrPort()
	default:
		return 0, opErr("sendmsg", netip.AddrPort{}, netip.AddrPort{}, eINVAL)
	}
	return s.send(p, dst, nil, 0)
}

// SendTo sends p to dst with flags: SendMsg without control messages.
func (s *Socket) SendTo(p []byte, dst netip.AddrPort, flags MsgFlags) (int, error) {
	return s.send(p, dst, nil, flags)
}

func (s *Socket) send(p []byte, dst netip.AddrPort, cm []ControlMessage, flags MsgFlags) (int, error) {
	var err error = eOPNOTSUPP
	if flags&^MsgDontWait == 0 {
		var n int
		if n, err = s.b.sendmsg(p, dst, cm, flags); err == nil {
			return n, nil
		}
	}
	return 0, opErr("sendmsg", s.b.boundAddr(), dst, err)
}

// RecvMsg receives one message into m.Data (recvmsg(2)) and returns the
// number of bytes copied, or with MsgTrunc in flags the message's full
// length. m.Addr is set to the sender (zero for notifications); m.Flags gets MsgTrunc if the
// message did not fit (the rest is discarded unless MsgPeek). A pending
// congestion notification (RDS_CONG_MONITOR) is returned first, alone,
// as a CongUpdate in m.Control with 0 bytes. With MsgPeek the message
// stays queued. An empty queue fails with EAGAIN under MsgDontWait,
// otherwise waits up to SO_RCVTIMEO (ETIMEDOUT) or the read deadline
// (os.ErrDeadlineExceeded).
func (s *Socket) RecvMsg(m *Msg, flags MsgFlags) (int, error) {
	n, err := s.b.recvmsg(m, flags)
	if err != nil {
		return 0, opErr("recvmsg", s.b.boundAddr(), netip.AddrPort{}, err)
	}
	return n, nil
}

// ReadFrom receives one message into p (net.PacketConn); a longer
// message is truncated. The address is an Addr.
func (s *Socket) ReadFrom(p []byte) (int, net.Addr, error) {
	m := Msg{Data: p}
	for {
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return 0, nil, err
		}
		if len(m.Control) == 0 {
			return n, Addr(m.Addr), nil
		}
		m.Control = m.Control[:0] // notifications are for RecvMsg users
	}
}

// SetOption sets a socket option (setsockopt(2)).
func (s *Socket) SetOption(o Option) error {
	handled, err := s.setRDMAOption(o)
	if !handled {
		err = s.b.setOption(o)
	}
	if err != nil {
		return opErr("setsockopt", s.b.boundAddr(), netip.AddrPort{}, err)
	}
	return nil
}

// setRDMAOption handles the RDMA socket options of SetOption, which are
// GetMR, GetMRForDest and FreeMR by another name on either backend.
func (s *Socket) setRDMAOption(o Option) (handled bool, err error) {
	switch v := o.(type) {
	case GetMR:
		c, err := s.b.getMR(v.Vec, v.Flags)
		if err == nil && v.CookieAddr != nil {
			*v.CookieAddr = c
		}
		return true, err
	case GetMRForDest:
		if !validDest(v.Dest) {
			return true, eINVAL
		}
		c, err := s.b.getMR(v.Vec, v.Flags)
		if err == nil && v.CookieAddr != nil {
			*v.CookieAddr = c
		}
		return true, err
	case FreeMR:
		return true, s.b.freeMR(v.Cookie, v.Flags)
	}
	return false, nil
}

// Option reads a socket option into o, a pointer to one of the option
// types (getsockopt(2)). CancelSentTo cannot be read (ENOPROTOOPT).
func (s *Socket) Option(o Option) error {
	if err := s.b.option(o); err != nil {
		return opErr("getsockopt", netip.AddrPort{}, netip.AddrPort{}, err)
	}
	return nil
}

// Poll returns the socket's readiness now (rds_poll):
//   - PollIn|PollRdNorm while a message or a congestion notification
//     waits; without RDS_CONG_MONITOR also once (with PollWrBand) after
//     any congestion map changed anywhere, so that a sender that got
//     ENOBUFS can sleep in POLLIN and retry;
//   - PollOut|PollWrNorm while SO_SNDBUF has room. A send may still fail
//     with ENOBUFS: POLLOUT knows nothing of the destination.
func (s *Socket) Poll() Events { return s.b.poll() }

// Wait blocks until Poll reports one of the events in want, the socket
// closes (net.ErrClosed) or ctx ends, and returns Poll's result. One
// goroutine at a time should Wait on a socket, as with one poll loop.
func (s *Socket) Wait(ctx context.Context, want Events) (Events, error) {
	return s.b.wait(ctx, want)
}

// GetMR registers mem for RDMA by peers and returns its cookie
// (RDS_GET_MR). Errors: ENOTCONN if the socket is unbound, EOPNOTSUPP if
// its transport has no RDMA, EINVAL for an empty range, one above
// RDMALimits.MaxBytes or unknown flags, EAGAIN if the node holds
// RDMALimits.MaxMRs mappings, EBUSY if the transport cannot register.
//
// Send the cookie to the server with an RDMADest control message: with
// it goes the address the mapping starts at (wire.ExtRDMAAddr), which a
// transport addressing MRs by virtual address (dat over iWARP) needs. A
// cookie passed inside a message's payload reaches only zero-based
// mappings (dat on IB and RoCE, as the kernel's); over dat on iWARP the
// server's ops on it fail with a remote error.
func (s *Socket) GetMR(mem []byte, flags RDMAFlags) (Cookie, error) {
	c, err := s.b.getMR(mem, flags)
	if err != nil {
		return 0, opErr("setsockopt", s.b.boundAddr(), netip.AddrPort{}, err)
	}
	return c, nil
}

// GetMRForDest is RDS_GET_MR_FOR_DEST: GetMR, checking dst (EINVAL if it
// is not a unicast IPv4 address).
func (s *Socket) GetMRForDest(dst netip.AddrPort, mem []byte, flags RDMAFlags) (Cookie, error) {
	if !validDest(dst) {
		return 0, opErr("setsockopt", s.b.boundAddr(), dst, eINVAL)
	}
	c, err := s.b.getMR(mem, flags)
	if err != nil {
		return 0, opErr("setsockopt", s.b.boundAddr(), dst, err)
	}
	return c, nil
}

// FreeMR releases the mapping of c (RDS_FREE_MR); EINVAL if the socket
// has none. c == 0 is rds-rdma(7)'s flush of old mappings, those
// released and not yet invalidated: here every release revokes at once,
// so there are none and it succeeds without touching the socket's live
// mappings; like the kernel's, it fails with EINVAL on a socket whose
// transport has no RDMA (or none yet).
func (s *Socket) FreeMR(c Cookie, flags RDMAFlags) error {
	if err := s.b.freeMR(c, flags); err != nil {
		return opErr("setsockopt", s.b.boundAddr(), netip.AddrPort{}, err)
	}
	return nil
}

// MRs returns how many mappings the socket holds.
func (s *Socket) MRs() int { return s.b.mrs() }
