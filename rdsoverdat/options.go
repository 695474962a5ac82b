package rdsoverdat

import (
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Socket options. Each option is a type; SetOption takes a value, Option
// fills a pointer:
//
//	s.SetOption(rdsoverdat.SendBuffer(1 << 20))
//	var t rdsoverdat.TransportOption
//	s.Option(&t)
type Option interface {
	// OptionName is the option's name as in setsockopt(2).
	OptionName() string
}

// SendBuffer is SO_SNDBUF: the payload bytes a socket may have queued
// and unacknowledged. The value is what RDS counts (the kernel's
// sk_sndbuf/2, i.e. what the application set).
type SendBuffer int

// RecvBuffer is SO_RCVBUF: the unread payload bytes above which the
// socket's port is marked congested (uncongested again below half).
type RecvBuffer int

// SendTimeout is SO_SNDTIMEO: how long a blocking send waits (0 =
// forever) before ETIMEDOUT.
type SendTimeout time.Duration

// RecvTimeout is SO_RCVTIMEO: how long a blocking receive waits.
type RecvTimeout time.Duration

// TransportOption is SO_RDS_TRANSPORT: set once, before bind, to pick
// the transport (EOPNOTSUPP once one is attached, EINVAL for TransNone or
// an unknown number, ENOPROTOOPT if the stack does not run it); reads
// TransNone on an unbound socket without one.
type TransportOption TransportType

// CongMonitor is RDS_CONG_MONITOR. Enable turns explicit congestion
// monitoring on or off (off clears the mask and pending notifications);
// Mask is ORed into the socket's 64-bit port-group mask (rds(7)): when
// ports of a group in the mask become uncongested, RecvMsg returns a
// CongUpdate. A send that fails with ENOBUFS adds its port's group to
// the mask, as in the kernel.
type CongMonitor struct {
	Enable bool
	Mask   uint64
}

// CancelSentTo is RDS_CANCEL_SENT_TO (set only): drop every message of
// this socket to the destination that is queued or not yet acknowledged.
// ENOTCONN if the socket is unbound.
type CancelSentTo netip.AddrPort

// RecvErr is RDS_RECVERR: report failed RDMA operations even without
// RDS_RDMA_NOTIFY_ME (kept for the RDMA operations).
type RecvErr bool

func (SendBuffer) OptionName() string      { return "SO_SNDBUF" }
func (RecvBuffer) OptionName() string      { return "SO_RCVBUF" }
func (SendTimeout) OptionName() string     { return "SO_SNDTIMEO" }
func (RecvTimeout) OptionName() string     { return "SO_RCVTIMEO" }
func (TransportOption) OptionName() string { return "SO_RDS_TRANSPORT" }
func (CongMonitor) OptionName() string     { return "RDS_CONG_MONITOR" }
func (CancelSentTo) OptionName() string    { return "RDS_CANCEL_SENT_TO" }
func (RecvErr) OptionName() string         { return "RDS_RECVERR" }

func (s *sock) setOption(o Option) error {
	if s.closed.Load() {
		return errClosed
	}
	switch v := o.(type) {
	case SendBuffer:
		if v <= 0 {
			return eINVAL
		}
		s.mu.Lock()
		s.sndbuf = int(v)
		s.roomCameLocked()
		s.mu.Unlock()
		signal(s.txSig)
		s.signalPoll()
	case RecvBuffer:
		if v <= 0 {
			return eINVAL
		}
		s.mu.Lock()
		s.rcvbuf = int(v)
		s.mu.Unlock()
	case SendTimeout:
		if v < 0 {
			return eINVAL
		}
		s.mu.Lock()
		s.sndTimeo = time.Duration(v)
		s.mu.Unlock()
	case RecvTimeout:
		if v < 0 {
			return eINVAL
		}
		s.mu.Lock()
		s.rcvTimeo = time.Duration(v)
		s.mu.Unlock()
	case TransportOption:
		return s.setTransport(TransportType(v))
	case CongMonitor:
		s.mu.Lock()
		s.congMonitor = v.Enable
		if v.Enable {
			s.congMask |= v.Mask
		} else {
			s.congMask, s.congNotify = 0, 0
		}
		s.mu.Unlock()
	case CancelSentTo:
		dst := netip.AddrPort(v)
		s.mu.Lock()
		n := s.node
		s.mu.Unlock()
		if n == nil {
			return eNOTCONN
		}
		if !dst.Addr().Unmap().Is4() {
			return eINVAL
		}
		n.cancel(s, netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port()))
	case RecvErr:
		s.mu.Lock()
		s.recvErr = bool(v)
		s.mu.Unlock()
	default:
		return eNOPROTOOPT
	}
	return nil
}

// setTransport is rds_set_transport.
func (s *sock) setTransport(t TransportType) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trans != nil {
		return eOPNOTSUPP
	}
	if t > TransLoop {
		return eINVAL // includes TransNone
	}
	tr := s.stack.transport(t)
	if tr == nil {
		return eNOPROTOOPT
	}
	s.trans = tr
	return nil
}

// option is getsockopt(2): see Socket.Option.
func (s *sock) option(o Option) error {
	if s.closed.Load() {
		return errClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch v := o.(type) {
	case *SendBuffer:
		*v = SendBuffer(s.sndbuf)
	case *RecvBuffer:
		*v = RecvBuffer(s.rcvbuf)
	case *SendTimeout:
		*v = SendTimeout(s.sndTimeo)
	case *RecvTimeout:
		*v = RecvTimeout(s.rcvTimeo)
	case *TransportOption:
		*v = TransportOption(TransNone)
		if s.trans != nil {
			*v = TransportOption(s.trans.Type())
		}
	case *CongMonitor:
		*v = CongMonitor{Enable: s.congMonitor, Mask: s.congMask}
	case *RecvErr:
		*v = RecvErr(s.recvErr)
	default:
		return opErr("getsockopt", s.bound, netip.AddrPort{}, eNOPROTOOPT)
	}
	return nil
}

var _ = wire.SOL_RDS
