package rdsoverdat

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"golang.org/x/sys/unix"
)

// MsgFlags are the flags of sendmsg/recvmsg and of a received message's
// msg_flags, with the Linux values.
type MsgFlags int

const (
	// MsgOOB asks for out-of-band data, which RDS does not have: recvmsg
	// returns 0 at once, sendmsg fails with EOPNOTSUPP.
	MsgOOB MsgFlags = unix.MSG_OOB
	// MsgPeek returns the first message without removing it.
	MsgPeek MsgFlags = unix.MSG_PEEK
	// MsgTrunc, passed to recvmsg, makes it return the message's full
	// length; set in Msg.Flags by recvmsg, it says the message was
	// longer than the buffer and the rest was discarded.
	MsgTrunc MsgFlags = unix.MSG_TRUNC
	// MsgDontWait makes the call fail with EAGAIN (send queue full, or
	// nothing to receive) or ENOBUFS (congested destination) instead of
	// blocking.
	MsgDontWait MsgFlags = unix.MSG_DONTWAIT
	// MsgCtrunc in Msg.Flags: control messages did not fit.
	MsgCtrunc MsgFlags = unix.MSG_CTRUNC
)

var msgFlagNames = [...]struct {
	f    MsgFlags
	name string
}{
	{MsgOOB, "MSG_OOB"}, {MsgPeek, "MSG_PEEK"}, {MsgCtrunc, "MSG_CTRUNC"},
	{MsgTrunc, "MSG_TRUNC"}, {MsgDontWait, "MSG_DONTWAIT"},
}

// String names the flags as the C constants, joined by "|" in bit
// order, with any other bits in hex at the end: "MSG_PEEK|MSG_TRUNC",
// "0" for none.
func (f MsgFlags) String() string {
	if f == 0 {
		return "0"
	}
	var b strings.Builder
	for _, n := range msgFlagNames {
		if f&n.f != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "%#x", uint(f))
	}
	return b.String()
}

// Msg is the Go form of struct msghdr for SendMsg and RecvMsg.
type Msg struct {
	// Data is the payload to send, or the buffer to receive into (its
	// length is the room; RecvMsg does not reslice it).
	Data []byte
	// Addr is the destination (send) or the sender (receive).
	Addr netip.AddrPort
	// Control holds control messages: to send, or appended to by RecvMsg
	// (which truncates it to length 0 first).
	Control []ControlMessage
	// Flags is msg_flags, set by RecvMsg (MsgTrunc).
	Flags MsgFlags
}

// ControlMessage is a typed RDS control message (level SOL_RDS). The
// concrete types are CongUpdate today; the RDMA ones arrive with the
// RDMA operations.
type ControlMessage interface {
	// CmsgType is the control message's SOL_RDS type number.
	CmsgType() int
}

// CongUpdate is RDS_CMSG_CONG_UPDATE: the RDS_CONG_MONITOR port groups
// (bit = port % 64) that became uncongested. RecvMsg returns it alone,
// with no data.
type CongUpdate uint64

func (CongUpdate) CmsgType() int { return wire.RDS_CMSG_CONG_UPDATE }

// CongMonitorMask is RDS_CONG_MONITOR_MASK(port).
func CongMonitorMask(port uint16) uint64 { return wire.CongMonitorMask(wire.Port(port)) }
