package rdsoverdat

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// The kernel backend: a Stack made with Config{Kernel: true} hands out
// Sockets that are the host kernel's own AF_RDS sockets (the rds module,
// plus rds_tcp for TCP), driven through golang.org/x/sys/unix. The Socket
// API is the same, so one program switches between in-kernel RDS and
// rdsoverdat by changing only its Config. Each socket is non-blocking and
// registered with Go's network poller (os.NewFile), so blocking calls park
// the goroutine, honour deadlines and return net.ErrClosed on Close.
//
// Differences that come from the kernel, not from this package:
//   - Buffered returns 0, 0: the kernel does not report a socket's queued
//     bytes (RDS_INFO_SOCKETS lists only the limits).
//   - CongMonitor.Mask cannot be set (the kernel arms the mask only on
//     ENOBUFS): a non-zero Mask fails with EINVAL; Option reads back the
//     Enable this socket set and Mask 0.
//   - TransLoop cannot be selected (EINVAL): the kernel picks loopback by
//     itself for local addresses.
//   - A blocking send to a congested port waits for the map to clear as
//     the kernel's does, but it has first been refused: the kernel counts
//     it as a congested send error rather than a blocked one, and a socket
//     with RDS_CONG_MONITOR gets the port armed in its mask (and so a
//     congestion update once it clears), as a non-blocking send would.
//   - Stack.NodeStats and Socket.NodeStats have nothing to report
//     (false): connections and statistics live in the kernel (rds-info).
//
// SO_SNDTIMEO and SO_RCVTIMEO are applied here, as deadlines on the
// poller, and yield ETIMEDOUT like the kernel's; blocking receivers (and
// blocking senders) of one socket take turns while they wait.

// KernelAvailable reports whether the host kernel provides AF_RDS; nil
// means a kernel Stack can open sockets. (rds_tcp is needed as well for
// sockets that select TransTCP; its absence shows as ENOPROTOOPT or
// EADDRNOTAVAIL on bind.)
func KernelAvailable() error {
	fd, err := unix.Socket(unix.AF_RDS, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket(AF_RDS)", err)
	}
	unix.Close(fd)
	return nil
}

// kernelSocket is the kernel backend of a Socket.
type kernelSocket struct {
	stack  *Stack
	f      *os.File // nil when socket(2) failed; err says why
	rc     syscall.RawConn
	err    error
	closed atomic.Bool

	rmu, wmu sync.Mutex // blocking receivers / senders take turns

	mu          sync.Mutex
	rdl, wdl    time.Time // user deadlines
	rtimeo      time.Duration
	wtimeo      time.Duration
	congMonitor bool
}

// newKernelSocket opens an AF_RDS socket for st and registers it, so
// that closing st closes it. A socket(2) failure is kept for every later
// call to report.
func newKernelSocket(st *Stack) *kernelSocket {
	k := openKernelSocket()
	k.stack = st
	st.mu.Lock()
	closed := st.closed
	if !closed {
		st.sockets[k] = struct{}{}
	}
	st.mu.Unlock()
	if closed {
		k.close()
		return k
	}
	// Only explicit settings: the kernel's own defaults otherwise.
	if st.cfg.userSendBuffer {
		k.setOption(SendBuffer(st.cfg.SendBuffer))
	}
	if st.cfg.userRecvBuffer {
		k.setOption(RecvBuffer(st.cfg.RecvBuffer))
	}
	return k
}

func openKernelSocket() *kernelSocket {
	k := &kernelSocket{}
	fd, err := unix.Socket(unix.AF_RDS, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		k.err = err
		return k
	}
	k.f = os.NewFile(uintptr(fd), "rds")
	if k.rc, err = k.f.SyscallConn(); err != nil {
		k.f.Close()
		k.f, k.err = nil, err
	}
	return k
}

// control runs fn on the descriptor; a closed socket gives net.ErrClosed.
func (k *kernelSocket) control(fn func(fd int) error) error {
	if k.f == nil {
		return k.err
	}
	var ferr error
	if err := k.rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return k.kernelErr(err)
	}
	return ferr
}

// kernelErr maps the poller's errors to this package's (the poller's
// "use of closed file" is not os.ErrClosed through a RawConn).
func (k *kernelSocket) kernelErr(err error) error {
	switch {
	case k.closed.Load(), errors.Is(err, os.ErrClosed):
		return errClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return errDeadline
	}
	return err
}

func sockaddr4(a netip.AddrPort) (*unix.SockaddrInet4, error) {
	ip := a.Addr().Unmap()
	if !ip.Is4() {
		return nil, eINVAL
	}
	return &unix.SockaddrInet4{Port: int(a.Port()), Addr: ip.As4()}, nil
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	if v4, ok := sa.(*unix.SockaddrInet4); ok {
		return netip.AddrPortFrom(netip.AddrFrom4(v4.Addr), uint16(v4.Port))
	}
	return netip.AddrPort{}
}

func (k *kernelSocket) bind(a netip.AddrPort) error {
	if k.closed.Load() {
		return errClosed
	}
	sa, err := sockaddr4(a)
	if err != nil {
		return err
	}
	return k.control(func(fd int) error { return unix.Bind(fd, sa) })
}

func (k *kernelSocket) boundAddr() netip.AddrPort {
	var a netip.AddrPort
	k.control(func(fd int) error {
		sa, err := unix.Getsockname(fd)
		if err == nil {
			a = addrPort(sa)
		}
		return err
	})
	if a.Port() == 0 && !a.Addr().IsValid() {
		return netip.AddrPort{}
	}
	if a.Addr().IsUnspecified() {
		return netip.AddrPort{} // unbound
	}
	return a
}

// The kernel keeps the node, its connections and the queued bytes to
// itself (rds-info shows them).
func (k *kernelSocket) boundNode() *rdsNode        { return nil }
func (k *kernelSocket) buffered() (send, recv int) { return 0, 0 }

func (k *kernelSocket) close() error {
	k.stack.mu.Lock()
	delete(k.stack.sockets, k)
	k.stack.mu.Unlock()
	if k.f == nil || k.closed.Swap(true) {
		return errClosed
	}
	return k.kernelErr(k.f.Close())
}

// setDeadline records a user deadline and applies it (or a running
// operation's earlier SO_*TIMEO end) to the poller.
func (k *kernelSocket) setDeadline(t time.Time, read bool) error {
	if k.f == nil {
		return k.err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if read {
		k.rdl = t
		return k.kernelErr(k.f.SetReadDeadline(t))
	}
	k.wdl = t
	return k.kernelErr(k.f.SetWriteDeadline(t))
}

// io runs one non-blocking attempt of op, and unless flags has
// MsgDontWait waits on the poller and retries while op returns EAGAIN,
// until the user deadline or SO_*TIMEO (ETIMEDOUT).
func (k *kernelSocket) io(read bool, flags MsgFlags, op func(fd int) error) error {
	if k.f == nil {
		return k.err
	}
	var opErr error
	attempt := func(fd uintptr) bool {
		opErr = op(int(fd))
		return opErr != unix.EAGAIN || flags&MsgDontWait != 0
	}
	mu, timeo, set := &k.wmu, &k.wtimeo, k.f.SetWriteDeadline
	wait := k.rc.Write
	if read {
		mu, timeo, set, wait = &k.rmu, &k.rtimeo, k.f.SetReadDeadline, k.rc.Read
	}
	mu.Lock()
	defer mu.Unlock()
	k.mu.Lock()
	user, d := k.wdl, *timeo
	if read {
		user = k.rdl
	}
	k.mu.Unlock()
	timedOut := false
	if d > 0 && flags&MsgDontWait == 0 {
		if until := time.Now().Add(d); user.IsZero() || until.Before(user) {
			timedOut = true
			set(until)
			defer func() {
				k.mu.Lock()
				if read {
					set(k.rdl)
				} else {
					set(k.wdl)
				}
				k.mu.Unlock()
			}()
		}
	}
	if err := wait(attempt); err != nil {
		if timedOut && errors.Is(err, os.ErrDeadlineExceeded) {
			return eTIMEDOUT
		}
		return k.kernelErr(err)
	}
	return opErr
}

func (k *kernelSocket) sendmsg(p []byte, dst netip.AddrPort, cm []ControlMessage, flags MsgFlags) (int, error) {
	if k.closed.Load() {
		return 0, errClosed
	}
	var to unix.Sockaddr // none for a zero dst: the kernel answers ENOTCONN
	if dst.IsValid() {
		sa, err := sockaddr4(dst)
		if err != nil {
			return 0, err
		}
		to = sa
	}
	if len(cm) > 0 {
		if err := k.rdmaCmsgs(cm); err != nil {
			return 0, err
		}
	}
	var n int
	start := time.Now()
	for {
		err := k.io(false, flags, func(fd int) error {
			var e error
			n, e = unix.SendmsgN(fd, p, nil, to, int(flags|MsgDontWait))
			return e
		})
		if err != unix.ENOBUFS || flags&MsgDontWait != 0 {
			if len(p) > wire.MaxMsgSize && errors.Is(err, eMSGSIZE) {
				err = ErrMsgTooBig // as the other backend says it
			}
			return n, err
		}
		// A blocking send to a congested port waits for the map to
		// clear, as rds_cong_wait does for a blocking sendmsg.
		if err := k.congWait(start); err != nil {
			return 0, err
		}
	}
}

// cmsgSpace is room for the control messages a receive can carry: a
// congestion update, an RDMA notification or two, timestamps.
const cmsgSpace = 256

func (k *kernelSocket) recvmsg(m *Msg, flags MsgFlags) (int, error) {
	if k.closed.Load() {
		return 0, errClosed
	}
	m.Flags = 0
	m.Control = m.Control[:0]
	var oob [cmsgSpace]byte
	// x/sys's Recvmsg swallows one byte into a dummy when p is empty and
	// oob is not: give it a one-byte scratch buffer instead and report 0
	// bytes (MsgTrunc is then set by the kernel for longer messages).
	var scratch [1]byte
	p := m.Data
	if len(p) == 0 {
		p = scratch[:]
	}
	var n, oobn, rflags int
	var from unix.Sockaddr
	err := k.io(true, flags, func(fd int) error {
		var e error
		n, oobn, rflags, from, e = unix.Recvmsg(fd, p, oob[:], int(flags|MsgDontWait))
		return e
	})
	if err != nil {
		return 0, err
	}
	if len(m.Data) == 0 {
		if n > 0 && flags&MsgTrunc == 0 {
			n = 0
			rflags |= unix.MSG_TRUNC
		}
	}
	m.Flags = MsgFlags(rflags) & (MsgTrunc | MsgCtrunc)
	m.Addr = addrPort(from)
	if oobn > 0 {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return 0, err
		}
		for _, c := range cmsgs {
			if c.Header.Level == wire.SOL_RDS && c.Header.Type == wire.RDS_CMSG_CONG_UPDATE && len(c.Data) >= 8 {
				m.Control = append(m.Control, CongUpdate(binary.NativeEndian.Uint64(c.Data)))
			}
		}
	}
	return n, nil
}

// Poll asks the kernel's rds_poll.
func (k *kernelSocket) poll() Events {
	var ev Events
	k.control(func(fd int) error {
		fds := []unix.PollFd{{Fd: int32(fd), Events: int16(PollIn | PollRdNorm | PollOut | PollWrNorm | PollWrBand)}}
		if _, err := unix.Poll(fds, 0); err != nil {
			return err
		}
		ev = Events(uint16(fds[0].Revents))
		return nil
	})
	return ev
}
