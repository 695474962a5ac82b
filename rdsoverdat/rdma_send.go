package rdsoverdat

import (
	"math"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// RDMA control messages on SendMsg (rds_rm_size, rds_cmsg_send): at most
// one RDMAArgs, at most one of RDMAMap and RDMADest, and never RDMAArgs
// with either of them (EINVAL). An RDMADest must name a mapping of the
// sending socket (EINVAL). They need an RDMA-capable transport
// (EOPNOTSUPP).

// RDMAMap is RDS_CMSG_RDMA_MAP (send): register Mem as GetMR does, store
// the cookie in *CookieAddr (if not nil) and send it with the message,
// which the server receives with an RDMADest control message.
type RDMAMap struct {
	Mem        []byte
	CookieAddr *Cookie
	Flags      RDMAFlags // RDMAReadWrite, RDMAUseOnce, RDMAInvalidate
}

// RDMADest is RDS_CMSG_RDMA_DEST: on SendMsg, a cookie of one of the
// socket's own mappings (from GetMR) to send with the message; on
// RecvMsg, the cookie the sender attached.
type RDMADest Cookie

// RDMAArgs is RDS_CMSG_RDMA_ARGS (send): an RDMA op on the peer's memory
// named by Cookie, done before the message is delivered to the peer.
// The remote range is RemoteAddr (an offset from the cookie) and
// RemoteBytes; Local are the sender's buffers, which must total
// RemoteBytes (EINVAL) and stay untouched until the op completes.
//
// The transport keeps Local's registrations for later ops on the same
// memory. Go memory stays valid while cached (the registration keeps it
// alive), and memory from verbs.AllocMem or Socket.SharedMem leaves the
// cache when it is freed; memory the program maps and unmaps itself
// must stay mapped while the Stack lives, or a later op on a new mapping
// at the same address could use the old registration.
type RDMAArgs struct {
	Cookie      Cookie
	RemoteAddr  uint64 // remote_vec.addr
	RemoteBytes uint64 // remote_vec.bytes
	Local       [][]byte
	Flags       RDMAFlags // RDMAReadWrite, RDMAFence, RDMANotifyMe, RDMASilent
	UserToken   uint64

	// pin, set by a daemon for a client's shared memory, keeps Local
	// mapped while the op's message lives (rdmaOp.pin).
	pin memPin
}

// RDMANotify is RDS_CMSG_RDMA_STATUS (struct rds_rdma_notify, receive):
// the outcome of the op sent with UserToken. RecvMsg returns pending
// notifications first, alone, with no data.
type RDMANotify struct {
	UserToken uint64
	Status    RDMAStatus
}

func (RDMAMap) CmsgType() int    { return wire.RDS_CMSG_RDMA_MAP }
func (RDMADest) CmsgType() int   { return wire.RDS_CMSG_RDMA_DEST }
func (RDMAArgs) CmsgType() int   { return wire.RDS_CMSG_RDMA_ARGS }
func (RDMANotify) CmsgType() int { return wire.RDS_CMSG_RDMA_STATUS }

// rdmaCmsgs are the RDMA control messages of one SendMsg.
type rdmaCmsgs struct {
	args    *RDMAArgs
	mapArg  *RDMAMap
	dest    Cookie
	hasDest bool
}

// parseRDMACmsgs sorts the control messages of a send; anything but the
// RDMA ones, and conflicting ones, are EINVAL.
func parseRDMACmsgs(cm []ControlMessage) (rdmaCmsgs, error) {
	var r rdmaCmsgs
	n := 0 // RDMAMap and RDMADest
	for _, c := range cm {
		switch v := c.(type) {
		case RDMAArgs:
			if r.args != nil {
				return r, eINVAL
			}
			r.args = &v
		case *RDMAArgs:
			if r.args != nil || v == nil {
				return r, eINVAL
			}
			r.args = v
		case RDMAMap:
			r.mapArg = &v
			n++
		case *RDMAMap:
			if v == nil {
				return r, eINVAL
			}
			r.mapArg = v
			n++
		case RDMADest:
			r.dest, r.hasDest = Cookie(v), true
			n++
		default:
			return r, eINVAL
		}
	}
	if n > 1 || (n == 1 && r.args != nil) {
		return r, eINVAL
	}
	return r, nil
}

// rdmaAttach is what a send's RDMA control messages add to its message:
// extension headers and an op. It lives on SendMsg's stack.
type rdmaAttach struct {
	hasOp bool
	op    rdmaOpArgs
	exts  [2]wire.Ext
	nexts int
	// An RDMAMap's mapping and where its cookie goes: the send keeps
	// the mapping and writes the cookie only if it succeeds (settle).
	mapped     *sockMR
	cookie     Cookie
	cookieAddr *Cookie
}

func (a *rdmaAttach) addExt(e wire.Ext) { a.exts[a.nexts] = e; a.nexts++ }

// rdmaPrepare turns the RDMA control messages of a send on conn into
// what the message carries, in *a: it registers an RDMAMap's memory and
// builds an RDMAArgs' op (rds_cmsg_rdma_map, rds_cmsg_rdma_dest,
// rds_cmsg_rdma_args).
func (s *sock) rdmaPrepare(r *rdmaCmsgs, conn *connection, payload int, a *rdmaAttach) error {
	var destAddr uint64
	if r.hasDest {
		// rds_cmsg_rdma_dest: the cookie must name a mapping of this
		// socket (EINVAL), whatever the transport.
		var ok bool
		if destAddr, ok = s.mrAddr(r.dest.RKey()); !ok {
			return eINVAL
		}
	}
	rc, ok := conn.nt.(rdmaCapable)
	if !ok {
		return eOPNOTSUPP
	}
	switch {
	case r.mapArg != nil:
		sm, err := s.registerMR(conn.node, rc, r.mapArg.Mem, r.mapArg.Flags)
		if err != nil {
			return err
		}
		rkey, off := sm.mr.RKey(), sm.mr.Offset()
		a.mapped, a.cookie, a.cookieAddr = sm, MakeCookie(rkey, off), r.mapArg.CookieAddr
		a.addExt(wire.RDMADestExt(rkey, off))
		if addr := sm.mr.Addr(); addr != 0 {
			a.addExt(wire.RDMAAddrExt(addr))
		}
	case r.hasDest:
		a.addExt(wire.RDMADestExt(r.dest.RKey(), r.dest.Offset()))
		if destAddr != 0 {
			a.addExt(wire.RDMAAddrExt(destAddr))
		}
	case r.args != nil:
		if err := s.rdmaOp(r.args, conn, rc, payload, &a.op); err != nil {
			return err
		}
		a.hasOp = true
		a.addExt(wire.RDMAExt(a.op.rkey))
	}
	return nil
}

// rdmaOp checks RDMAArgs and fills op (rds_cmsg_rdma_args). op.local is
// args.Local itself, copied when the op is attached.
func (s *sock) rdmaOp(args *RDMAArgs, conn *connection, rc rdmaCapable, payload int, op *rdmaOpArgs) error {
	lim := rc.RDMALimits().WithDefaults()
	if args.Flags&^opFlags != 0 || len(args.Local) == 0 {
		return eINVAL
	}
	var total uint64
	for _, b := range args.Local {
		total += uint64(len(b))
	}
	if total == 0 || total != args.RemoteBytes || args.RemoteAddr > math.MaxUint64-total {
		return eINVAL
	}
	if total > uint64(lim.MaxBytes) {
		return eMSGSIZE
	}
	s.mu.Lock()
	recver := s.recvErr
	s.mu.Unlock()
	c := args.Cookie
	*op = rdmaOpArgs{
		write:  args.Flags&RDMAReadWrite != 0,
		fence:  args.Flags&RDMAFence != 0,
		silent: args.Flags&RDMASilent != 0 && payload == 0,
		rkey:   c.RKey(),
		raddr:  conn.rdmaAddrs.get(c.RKey()) + uint64(c.Offset()) + args.RemoteAddr,
		n:      int(total),
		local:  args.Local,
		pin:    args.pin,
		sock:   s,
		token:  args.UserToken,
		notify: args.Flags&RDMANotifyMe != 0,
		recver: recver,
		stats:  &conn.node.stats,
	}
	return nil
}

// settle ends a send that made an RDMAMap mapping: a queued message
// gives the caller its cookie; a failed send (SO_SNDBUF or congestion
// wait given up, timeout, deadline, close) leaves no mapping behind and
// writes no cookie, so that an application retrying on EAGAIN does not
// pile up mappings until the node's limit (rds_sendmsg's error path
// puts the message, and the mapping with it).
func (a *rdmaAttach) settle(s *sock, err error) {
	if a.mapped == nil {
		return
	}
	if err != nil {
		s.unmapFailed(a.mapped)
		return
	}
	if a.cookieAddr != nil {
		*a.cookieAddr = a.cookie
	}
}

// attach puts a's extension headers and op on m; m's header is encoded.
func (a *rdmaAttach) attach(m *message) {
	h := m.Header()
	for _, e := range a.exts[:a.nexts] {
		_ = h.AddExt(e) // two at most, 16 bytes at most: always fit
	}
	if a.hasOp {
		m.rdmaOp.init(&a.op)
		m.rdma = &m.rdmaOp
	}
}
