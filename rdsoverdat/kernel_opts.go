package rdsoverdat

import (
	"context"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// Socket options and readiness of the kernel backend (kernel.go): each
// option maps to its setsockopt(2)/getsockopt(2) at SOL_SOCKET or SOL_RDS.

// The kernel doubles SO_SNDBUF/SO_RCVBUF and RDS counts half of that
// (sk_sndbuf/2), so the value set is the value RDS uses. The FORCE
// variants (CAP_NET_ADMIN) pass net.core.wmem_max/rmem_max, which
// otherwise cap a 1 MiB message's SO_SNDBUF below what it needs.
func setBuf(fd, force, plain, v int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, v); err == nil {
		return nil
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, v)
}

func (k *kernelSocket) setOption(o Option) error {
	if k.closed.Load() {
		return errClosed
	}
	switch v := o.(type) {
	case SendBuffer:
		if v <= 0 {
			return eINVAL
		}
		return k.control(func(fd int) error { return setBuf(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, int(v)) })
	case RecvBuffer:
		if v <= 0 {
			return eINVAL
		}
		return k.control(func(fd int) error { return setBuf(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, int(v)) })
	case SendTimeout, RecvTimeout:
		d, read := time.Duration(0), false
		switch v := v.(type) {
		case SendTimeout:
			d = time.Duration(v)
		case RecvTimeout:
			d, read = time.Duration(v), true
		}
		if d < 0 {
			return eINVAL
		}
		k.mu.Lock()
		if read {
			k.rtimeo = d
		} else {
			k.wtimeo = d
		}
		k.mu.Unlock()
		return k.control(func(int) error { return nil })
	case TransportOption:
		return k.control(func(fd int) error {
			return unix.SetsockoptInt(fd, wire.SOL_RDS, wire.SO_RDS_TRANSPORT, int(int32(v)))
		})
	case CongMonitor:
		if v.Mask != 0 {
			return eINVAL // only ENOBUFS arms the kernel's mask
		}
		err := k.control(func(fd int) error {
			return unix.SetsockoptInt(fd, wire.SOL_RDS, wire.RDS_CONG_MONITOR, boolInt(v.Enable))
		})
		if err == nil {
			k.mu.Lock()
			k.congMonitor = v.Enable
			k.mu.Unlock()
		}
		return err
	case CancelSentTo:
		dst := v
		sa, err := sockaddr4(dstAddrPort(dst))
		if err != nil {
			return err
		}
		// struct sockaddr_in: family (host order), port and address
		// (network order), 8 bytes of zero.
		var b [16]byte
		binary.NativeEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], uint16(sa.Port))
		copy(b[4:8], sa.Addr[:])
		return k.control(func(fd int) error {
			return unix.SetsockoptString(fd, wire.SOL_RDS, wire.RDS_CANCEL_SENT_TO, string(b[:]))
		})
	case RecvErr:
		return k.control(func(fd int) error {
			return unix.SetsockoptInt(fd, wire.SOL_RDS, wire.RDS_RECVERR, boolInt(bool(v)))
		})
	}
	return eNOPROTOOPT
}

func dstAddrPort(c CancelSentTo) netip.AddrPort { return netip.AddrPort(c) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (k *kernelSocket) option(o Option) error {
	if k.closed.Load() {
		return errClosed
	}
	get := func(level, opt int) (int, error) {
		var v int
		err := k.control(func(fd int) error {
			var e error
			v, e = unix.GetsockoptInt(fd, level, opt)
			return e
		})
		return v, err
	}
	switch v := o.(type) {
	case *SendBuffer:
		n, err := get(unix.SOL_SOCKET, unix.SO_SNDBUF)
		*v = SendBuffer(n / 2)
		return err
	case *RecvBuffer:
		n, err := get(unix.SOL_SOCKET, unix.SO_RCVBUF)
		*v = RecvBuffer(n / 2)
		return err
	case *SendTimeout:
		k.mu.Lock()
		*v = SendTimeout(k.wtimeo)
		k.mu.Unlock()
	case *RecvTimeout:
		k.mu.Lock()
		*v = RecvTimeout(k.rtimeo)
		k.mu.Unlock()
	case *TransportOption:
		n, err := get(wire.SOL_RDS, wire.SO_RDS_TRANSPORT)
		*v = TransportOption(uint32(n))
		return err
	case *CongMonitor:
		k.mu.Lock()
		*v = CongMonitor{Enable: k.congMonitor}
		k.mu.Unlock()
	case *RecvErr:
		n, err := get(wire.SOL_RDS, wire.RDS_RECVERR)
		*v = RecvErr(n != 0)
		return err
	default:
		return eNOPROTOOPT
	}
	return k.control(func(int) error { return nil })
}

// wait polls the kernel until one of want is ready. The poller has no
// "wait for any of these" for a raw descriptor, so it polls with a short
// timeout and re-checks ctx in between.
func (k *kernelSocket) wait(ctx context.Context, want Events) (Events, error) {
	for {
		var ev Events
		err := k.control(func(fd int) error {
			fds := []unix.PollFd{{Fd: int32(fd), Events: int16(want)}}
			if _, err := unix.Poll(fds, 20); err != nil && err != unix.EINTR {
				return err
			}
			ev = Events(uint16(fds[0].Revents))
			return nil
		})
		switch {
		case err != nil:
			return 0, err
		case ev&want != 0:
			return ev, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		}
	}
}
