package rdsoverdat

import (
	"net"
	"net/netip"
	"os"
	"syscall"
)

// Errors are *net.OpError values with Net "rds" whose Err is the errno
// the kernel's AF_RDS returns in the same situation, so callers test them
// with errors.Is(err, syscall.ENOBUFS). A deadline set with SetDeadline
// yields os.ErrDeadlineExceeded (the net.Conn contract); SO_SNDTIMEO and
// SO_RCVTIMEO yield ETIMEDOUT like rds_sendmsg/rds_recvmsg. Operations on
// a closed socket wrap net.ErrClosed.

// Addr is an RDS address: an IPv4 address and an RDS port. It implements
// net.Addr with network "rds".
type Addr netip.AddrPort

// AddrFrom returns the RDS address ip:port.
func AddrFrom(ip netip.Addr, port uint16) Addr { return Addr(netip.AddrPortFrom(ip, port)) }

func (a Addr) Network() string          { return "rds" }
func (a Addr) String() string           { return netip.AddrPort(a).String() }
func (a Addr) AddrPort() netip.AddrPort { return netip.AddrPort(a) }

func opErr(op string, local netip.AddrPort, remote netip.AddrPort, err error) error {
	e := &net.OpError{Op: op, Net: "rds", Err: err}
	if local.IsValid() {
		e.Source = Addr(local)
	}
	if remote.IsValid() {
		e.Addr = Addr(remote)
	}
	return e
}

var (
	errClosed   = net.ErrClosed
	errDeadline = os.ErrDeadlineExceeded
)

// errnos used across the package, named for grep-ability.
const (
	eINVAL        = syscall.EINVAL
	eADDRNOTAVAIL = syscall.EADDRNOTAVAIL
	eADDRINUSE    = syscall.EADDRINUSE
	eOPNOTSUPP    = syscall.EOPNOTSUPP
	eNOPROTOOPT   = syscall.ENOPROTOOPT
	eNOTCONN      = syscall.ENOTCONN
	eMSGSIZE      = syscall.EMSGSIZE
	eAGAIN        = syscall.EAGAIN
	eNOBUFS       = syscall.ENOBUFS
	eTIMEDOUT     = syscall.ETIMEDOUT
	eAFNOSUPPORT  = syscall.EAFNOSUPPORT
	eDESTADDRREQ  = syscall.EDESTADDRREQ
)

// msgTooBig is ErrMsgTooBig: a message above RDS_MAX_MSG_SIZE. A send of
// one fails with it, and it is EMSGSIZE too (the kernel's errno), for
// errors.Is and for errors.As into a syscall.Errno.
type msgTooBig struct{}

func (msgTooBig) Error() string { return "rds: message longer than RDS_MAX_MSG_SIZE (1 MiB)" }

func (msgTooBig) Is(target error) bool { return target == eMSGSIZE }

func (msgTooBig) As(target any) bool {
	if e, ok := target.(*syscall.Errno); ok {
		*e = eMSGSIZE
		return true
	}
	return false
}
