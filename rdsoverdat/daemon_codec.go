package rdsoverdat

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// What both ends of the daemon protocol agree on: how errors, options
// and control messages travel in rdsdproto records.

var dle = binary.LittleEndian

// ErrDaemonLost is the error of every call on a daemon socket whose
// daemon went away (it exited, crashed or restarted): the socket's state
// lived in the daemon and is gone, so the socket is dead; open a new one.
// It is ECONNRESET for errors.Is.
var ErrDaemonLost error = daemonLost{}

type daemonLost struct{}

func (daemonLost) Error() string        { return "rds: the rdsd daemon closed the connection" }
func (daemonLost) Is(target error) bool { return target == syscall.ECONNRESET }

// ErrNotShared is the error of RDMA calls on a daemon socket with memory
// that does not come from the socket's shared memory (Socket.SharedMem):
// the daemon, which runs the transport, cannot see other memory of the
// process. It is EFAULT for errors.Is, the kernel's errno for memory it
// cannot reach.
var ErrNotShared error = notShared{}

type notShared struct{}

func (notShared) Error() string {
	return "rds: RDMA memory of a daemon socket must come from its shared memory (Socket.SharedMem)"
}
func (notShared) Is(target error) bool { return target == syscall.EFAULT }

// codeOf is the reply code of err.
func codeOf(err error) rdsdproto.Code {
	if e, ok := err.(syscall.Errno); ok && e > 0 && e < 1<<16 {
		return rdsdproto.Code(e) // the common case, without errors.As's allocation
	}
	switch {
	case err == nil:
		return rdsdproto.CodeOK
	case errors.Is(err, net.ErrClosed):
		return rdsdproto.CodeClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return rdsdproto.CodeDeadline
	case errors.Is(err, ErrMsgTooBig):
		return rdsdproto.CodeMsgTooBig
	case errors.Is(err, ErrNotShared):
		return rdsdproto.CodeNotShared
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && errno > 0 && errno < 1<<16 {
		return rdsdproto.Code(errno)
	}
	return rdsdproto.Code(syscall.EIO)
}

// errOf is the error of a reply code.
func errOf(c rdsdproto.Code) error {
	switch c {
	case rdsdproto.CodeOK:
		return nil
	case rdsdproto.CodeClosed:
		return errClosed
	case rdsdproto.CodeDeadline:
		return errDeadline
	case rdsdproto.CodeMsgTooBig:
		return ErrMsgTooBig
	case rdsdproto.CodeNotShared:
		return ErrNotShared
	}
	if c < 1<<16 {
		return syscall.Errno(c)
	}
	return syscall.EIO
}

// putOption encodes a SetOption value into r; false for an option type
// the protocol does not carry.
func putOption(r rdsdproto.Record, o Option) {
	code, b, c := rdsdproto.OptUnknown, uint64(0), uint64(0)
	switch v := o.(type) {
	case SendBuffer:
		code, b = rdsdproto.OptSendBuffer, uint64(int64(v))
	case RecvBuffer:
		code, b = rdsdproto.OptRecvBuffer, uint64(int64(v))
	case SendTimeout:
		code, b = rdsdproto.OptSendTimeout, uint64(int64(v))
	case RecvTimeout:
		code, b = rdsdproto.OptRecvTimeout, uint64(int64(v))
	case TransportOption:
		code, b = rdsdproto.OptTransport, uint64(int64(v))
	case CongMonitor:
		code, c = rdsdproto.OptCongMonitor, v.Mask
		if v.Enable {
			b = 1
		}
	case CancelSentTo:
		code = rdsdproto.OptCancelSentTo
		if !netip.AddrPort(v).Addr().Unmap().Is4() {
			b = 1 // not IPv4: the daemon answers EINVAL as the core does
		}
		r.SetAddrPort(netip.AddrPort(v))
	case RecvErr:
		code = rdsdproto.OptRecvErr
		if v {
			b = 1
		}
	}
	r.SetA(uint64(code))
	r.SetB(b)
	r.SetC(c)
}

// getOption decodes a SetOption request into an Option value.
func getOption(r rdsdproto.Record) (Option, error) {
	b, c := r.B(), r.C()
	switch rdsdproto.OptionCode(r.A()) {
	case rdsdproto.OptSendBuffer:
		return SendBuffer(int64(b)), nil
	case rdsdproto.OptRecvBuffer:
		return RecvBuffer(int64(b)), nil
	case rdsdproto.OptSendTimeout:
		return SendTimeout(time.Duration(int64(b))), nil
	case rdsdproto.OptRecvTimeout:
		return RecvTimeout(time.Duration(int64(b))), nil
	case rdsdproto.OptTransport:
		return TransportOption(int64(b)), nil
	case rdsdproto.OptCongMonitor:
		return CongMonitor{Enable: b != 0, Mask: c}, nil
	case rdsdproto.OptCancelSentTo:
		if b != 0 {
			return CancelSentTo(netip.AddrPortFrom(netip.IPv6Unspecified(), 0)), nil
		}
		return CancelSentTo(r.AddrPort()), nil
	case rdsdproto.OptRecvErr:
		return RecvErr(b != 0), nil
	case rdsdproto.OptUnknown:
		return unknownOption{}, nil
	}
	return nil, rdsdproto.ErrBody
}

// unknownOption stands in the daemon for an option type of the client
// that the protocol does not name: the socket refuses it (ENOPROTOOPT).
type unknownOption struct{}

func (unknownOption) OptionName() string { return "unknown" }

// optionCode names the option o points to, for OpOption.
func optionCode(o Option) rdsdproto.OptionCode {
	switch o.(type) {
	case *SendBuffer:
		return rdsdproto.OptSendBuffer
	case *RecvBuffer:
		return rdsdproto.OptRecvBuffer
	case *SendTimeout:
		return rdsdproto.OptSendTimeout
	case *RecvTimeout:
		return rdsdproto.OptRecvTimeout
	case *TransportOption:
		return rdsdproto.OptTransport
	case *CongMonitor:
		return rdsdproto.OptCongMonitor
	case *RecvErr:
		return rdsdproto.OptRecvErr
	case CancelSentTo, *CancelSentTo:
		return rdsdproto.OptCancelSentTo
	}
	return rdsdproto.OptUnknown
}

// readOption reads option code from s into B and C of the reply.
func readOption(s *Socket, code rdsdproto.OptionCode, reply rdsdproto.Record) error {
	var b, c uint64
	var err error
	switch code {
	case rdsdproto.OptSendBuffer:
		var v SendBuffer
		err, b = s.Option(&v), uint64(int64(v))
	case rdsdproto.OptRecvBuffer:
		var v RecvBuffer
		err, b = s.Option(&v), uint64(int64(v))
	case rdsdproto.OptSendTimeout:
		var v SendTimeout
		err, b = s.Option(&v), uint64(int64(v))
	case rdsdproto.OptRecvTimeout:
		var v RecvTimeout
		err, b = s.Option(&v), uint64(int64(v))
	case rdsdproto.OptTransport:
		var v TransportOption
		err, b = s.Option(&v), uint64(int64(v))
	case rdsdproto.OptCongMonitor:
		var v CongMonitor
		err, c = s.Option(&v), v.Mask
		if v.Enable {
			b = 1
		}
	case rdsdproto.OptRecvErr:
		var v RecvErr
		if err = s.Option(&v); v {
			b = 1
		}
	case rdsdproto.OptCancelSentTo:
		err = s.Option(CancelSentTo{})
	default:
		err = s.Option(unknownOption{})
	}
	reply.SetB(b)
	reply.SetC(c)
	return err
}

// storeOption stores an OpOption reply's values into o.
func storeOption(o Option, r rdsdproto.Record) {
	b, c := r.B(), r.C()
	switch v := o.(type) {
	case *SendBuffer:
		*v = SendBuffer(int64(b))
	case *RecvBuffer:
		*v = RecvBuffer(int64(b))
	case *SendTimeout:
		*v = SendTimeout(time.Duration(int64(b)))
	case *RecvTimeout:
		*v = RecvTimeout(time.Duration(int64(b)))
	case *TransportOption:
		*v = TransportOption(int64(b))
	case *CongMonitor:
		*v = CongMonitor{Enable: b != 0, Mask: c}
	case *RecvErr:
		*v = RecvErr(b != 0)
	}
}

// appendRecvCmsgs encodes the control messages RecvMsg returned.
func appendRecvCmsgs(b []byte, cm []ControlMessage) []byte {
	var v [12]byte
	for _, c := range cm {
		switch x := c.(type) {
		case CongUpdate:
			dle.PutUint64(v[:], uint64(x))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_CONG_UPDATE, v[:8])
		case RDMADest:
			dle.PutUint64(v[:], uint64(x))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_RDMA_DEST, v[:8])
		case RDMANotify:
			dle.PutUint64(v[:], x.UserToken)
			dle.PutUint32(v[8:], uint32(x.Status))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_RDMA_STATUS, v[:12])
		}
	}
	return b
}

// decodeRecvCmsgs appends the control messages of a recv reply to cm.
func decodeRecvCmsgs(enc rdsdproto.Cmsgs, cm []ControlMessage) ([]ControlMessage, error) {
	for {
		typ, v, rest, ok, err := enc.Next()
		if err != nil || !ok {
			return cm, err
		}
		enc = rest
		switch typ {
		case wire.RDS_CMSG_CONG_UPDATE, wire.RDS_CMSG_RDMA_DEST:
			c, err := decodeWordCmsg(typ, v)
			if err != nil {
				return cm, err
			}
			cm = append(cm, c)
		case wire.RDS_CMSG_RDMA_STATUS:
			if len(v) != 12 {
				return cm, rdsdproto.ErrBody
			}
			cm = append(cm, RDMANotify{UserToken: dle.Uint64(v), Status: RDMAStatus(int32(dle.Uint32(v[8:])))})
		default:
			return cm, rdsdproto.ErrBody
		}
	}
}

// decodeWordCmsg decodes the control messages whose value is one
// 64-bit word, which both directions carry: RDS_CMSG_CONG_UPDATE and
// RDS_CMSG_RDMA_DEST.
func decodeWordCmsg(typ uint32, v []byte) (ControlMessage, error) {
	if len(v) != 8 {
		return nil, rdsdproto.ErrBody
	}
	if typ == wire.RDS_CMSG_CONG_UPDATE {
		return CongUpdate(dle.Uint64(v)), nil
	}
	return RDMADest(dle.Uint64(v)), nil
}

// cmsgUnknown marks a control message type the protocol does not carry;
// its value is the type number. The daemon refuses it as the core
// refuses an unknown control message.
const cmsgUnknown = 0xffffffff

// unknownCmsg stands in the daemon for the client's unknown control
// message.
type unknownCmsg int

func (u unknownCmsg) CmsgType() int { return int(u) }

// appendSendCmsgs encodes SendMsg's control messages; mem names the
// memory of the RDMA ones.
func appendSendCmsgs(b []byte, cm []ControlMessage, mem func([]byte) rdsdproto.Mem) []byte {
	var v [8 + rdsdproto.MemLen]byte
	for _, c := range cm {
		switch x := c.(type) {
		case CongUpdate:
			dle.PutUint64(v[:], uint64(x))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_CONG_UPDATE, v[:8])
		case RDMADest:
			dle.PutUint64(v[:], uint64(x))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_RDMA_DEST, v[:8])
		case RDMAMap:
			dle.PutUint64(v[:], uint64(x.Flags))
			rdsdproto.PutMem(v[8:], mem(x.Mem))
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_RDMA_MAP, v[:])
		case RDMAArgs:
			local := make([]rdsdproto.Mem, len(x.Local))
			for i, l := range x.Local {
				local[i] = mem(l)
			}
			val := rdsdproto.AppendArgs(nil, rdsdproto.Args{Cookie: uint64(x.Cookie), RemoteAddr: x.RemoteAddr,
				RemoteBytes: x.RemoteBytes, Flags: uint64(x.Flags), Token: x.UserToken}, local)
			b = rdsdproto.AppendCmsg(b, wire.RDS_CMSG_RDMA_ARGS, val)
		default:
			dle.PutUint32(v[:], uint32(c.CmsgType()))
			b = rdsdproto.AppendCmsg(b, cmsgUnknown, v[:4])
		}
	}
	return b
}

// decodeSendCmsgs decodes a send request's control messages; mem maps
// the memory of the RDMA ones.
func decodeSendCmsgs(enc rdsdproto.Cmsgs, mem func(rdsdproto.Mem) ([]byte, error)) (cm []ControlMessage, err error) {
	for {
		typ, v, rest, ok, err := enc.Next()
		if err != nil || !ok {
			return cm, err
		}
		enc = rest
		switch typ {
		case wire.RDS_CMSG_CONG_UPDATE, wire.RDS_CMSG_RDMA_DEST:
			c, err := decodeWordCmsg(typ, v)
			if err != nil {
				return nil, err
			}
			cm = append(cm, c)
		case wire.RDS_CMSG_RDMA_MAP:
			if len(v) != 8+rdsdproto.MemLen {
				return nil, rdsdproto.ErrBody
			}
			m, err := rdsdproto.GetMem(v[8:])
			if err != nil {
				return nil, err
			}
			b, err := mem(m)
			if err != nil {
				return nil, err
			}
			cm = append(cm, RDMAMap{Mem: b, Flags: RDMAFlags(dle.Uint64(v))})
		case wire.RDS_CMSG_RDMA_ARGS:
			a, local, err := rdsdproto.DecodeArgs(v)
			if err != nil {
				return nil, err
			}
			args := RDMAArgs{Cookie: Cookie(a.Cookie), RemoteAddr: a.RemoteAddr, RemoteBytes: a.RemoteBytes,
				Flags: RDMAFlags(a.Flags), UserToken: a.Token, Local: make([][]byte, len(local))}
			for i, m := range local {
				if args.Local[i], err = mem(m); err != nil {
					return nil, err
				}
			}
			cm = append(cm, args)
		case cmsgUnknown:
			if len(v) != 4 {
				return nil, rdsdproto.ErrBody
			}
			cm = append(cm, unknownCmsg(int32(dle.Uint32(v))))
		default:
			return nil, rdsdproto.ErrBody
		}
	}
}

// maxMsgSize is RDS_MAX_MSG_SIZE.
const maxMsgSize = wire.MaxMsgSize
