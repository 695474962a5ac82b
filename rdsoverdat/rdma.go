package rdsoverdat

import (
	"fmt"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The RDMA zerocopy interface (rds-rdma(7)). A client registers part of
// its memory and gets a cookie (GetMR, or an RDMAMap control message on
// the request it sends); the cookie reaches the server as an RDMADest
// control message. The server's reply (the "RDMA ACK") carries an
// RDMAArgs control message: the transport moves the bytes between the
// server's local buffers and the client's registered memory with an RDMA
// READ or WRITE posted before the reply's SENDs on the same reliable
// connection, so the client receives the reply only after the transfer
// (atomicity). The op's outcome comes back to the server as an
// RDMANotify control message (NOTIFY_ME, or any failure with
// RDS_RECVERR).
//
// This file holds the types shared by the core and the transports; the
// MR table is in rdma_mr.go, control messages and the send side in
// rdma_send.go, notifications and the receive side in rdma_recv.go.
// Only transports implementing rdmaCapable carry RDMA (the dat
// transport), like the kernel, where rds_tcp has none: elsewhere the
// calls fail with EOPNOTSUPP.

// RDMAFlags are the flags of struct rds_get_mr_args, rds_free_mr_args
// and rds_rdma_args (RDS_RDMA_*).
type RDMAFlags uint64

const (
	// RDMAReadWrite: on a mapping, the peer may write the memory (not
	// only read it); on an op, RDMA WRITE from the server's memory to
	// the client's instead of RDMA READ.
	RDMAReadWrite RDMAFlags = wire.RDS_RDMA_READWRITE
	// RDMAFence: the message's SENDs wait until the op completed (an RDMA
	// READ otherwise may finish after the client got the reply, and the
	// client may see its memory read after it changed it). The dat
	// transport also fences a READ on a use-once mapping without it.
	RDMAFence RDMAFlags = wire.RDS_RDMA_FENCE
	// RDMAInvalidate: revoke the mapping at once when it is released.
	// This implementation always does; the flag is accepted.
	RDMAInvalidate RDMAFlags = wire.RDS_RDMA_INVALIDATE
	// RDMAUseOnce: release the mapping when the RDMA ACK arrives.
	RDMAUseOnce RDMAFlags = wire.RDS_RDMA_USE_ONCE
	// RDMADontWait: do not sleep for mapping resources (registration
	// never sleeps here; accepted).
	RDMADontWait RDMAFlags = wire.RDS_RDMA_DONTWAIT
	// RDMANotifyMe: report the op's outcome, success included.
	RDMANotifyMe RDMAFlags = wire.RDS_RDMA_NOTIFY_ME
	// RDMASilent: with no payload and no cookie, only the RDMA op goes
	// out, no RDS header; the client is not told.
	RDMASilent RDMAFlags = wire.RDS_RDMA_SILENT

	mapFlags = RDMAReadWrite | RDMAInvalidate | RDMAUseOnce | RDMADontWait
	opFlags  = RDMAReadWrite | RDMAFence | RDMANotifyMe | RDMASilent | RDMADontWait
)

// Cookie is rds_rdma_cookie_t: the R_Key of a mapping in the low 32 bits
// and an offset into it in the high 32 bits. To applications it is
// opaque; a server passes it back unchanged in RDMAArgs.
type Cookie uint64

// MakeCookie is rds_rdma_make_cookie.
func MakeCookie(rkey, offset uint32) Cookie { return Cookie(rkey) | Cookie(offset)<<32 }

// RKey is rds_rdma_cookie_key: the R_Key (the DAT rmr_context).
func (c Cookie) RKey() uint32 { return uint32(c) }

// Offset is rds_rdma_cookie_offset.
func (c Cookie) Offset() uint32 { return uint32(c >> 32) }

// RDMAStatus is the status of an RDMANotify (RDS_RDMA_*).
type RDMAStatus int32

const (
	RDMASuccess     RDMAStatus = wire.RDS_RDMA_SUCCESS
	RDMARemoteError RDMAStatus = wire.RDS_RDMA_REMOTE_ERROR // bad R_Key, range or rights at the client
	RDMACanceled    RDMAStatus = wire.RDS_RDMA_CANCELED     // RDS_CANCEL_SENT_TO or close
	RDMADropped     RDMAStatus = wire.RDS_RDMA_DROPPED      // the connection broke before the peer had the message; never retried
	RDMAOtherError  RDMAStatus = wire.RDS_RDMA_OTHER_ERROR
)

var rdmaStatusNames = [...]string{"SUCCESS", "REMOTE_ERROR", "CANCELED", "DROPPED", "OTHER_ERROR"}

func (s RDMAStatus) String() string {
	if s >= 0 && int(s) < len(rdmaStatusNames) {
		return "RDS_RDMA_" + rdmaStatusNames[s]
	}
	return fmt.Sprintf("RDMAStatus(%d)", int32(s))
}

// RDMALimits are the RDMA tunables of a transport, the kernel's rds_rdma
// module parameters.
type RDMALimits struct {
	// MaxBytes is the largest mapping and the largest op
	// (fmr_message_size; default 1 MiB).
	MaxBytes int
	// MaxMRs is how many mappings a node may hold at once
	// (fmr_pool_size; default 2048).
	MaxMRs int
}

// Defaults of RDMALimits, from rds-rdma(7).
const (
	DefaultRDMAMaxBytes = 1 << 20
	DefaultRDMAMaxMRs   = 2048
)

// WithDefaults fills zero fields with the defaults.
func (l RDMALimits) WithDefaults() RDMALimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultRDMAMaxBytes
	}
	if l.MaxMRs <= 0 {
		l.MaxMRs = DefaultRDMAMaxMRs
	}
	return l
}

// rdmaCapable is the optional nodeTransport ability to carry RDMA. Such
// a transport registers memory for peers (RegisterMR) and, for every
// message whose RDMA method returns an op, posts the op before the
// message's SENDs on the same connection, then reports the outcome
// exactly once with (*rdmaOp).Complete. It must not transmit the message
// when the op failed before being posted. The core never resends a
// message with an op: after its path went down, the message is either
// acknowledged by the next connection's handshake or dropped.
type rdmaCapable interface {
	RDMALimits() RDMALimits
	// RegisterMR makes mem readable by peers of the node, and writable
	// with RDMAReadWrite, until the MR is freed; nothing outside mem is
	// reachable through it. With RDMAUseOnce the MR serves one op at
	// most (the core releases it when that op's message arrives). mem
	// stays referenced until the MR is freed.
	RegisterMR(mem []byte, flags RDMAFlags) (rdmaMR, error)
}

// rdmaMR is a registration made by rdmaCapable.RegisterMR.
type rdmaMR interface {
	// RKey names the MR in a peer's RDMA op (the rmr_context).
	RKey() uint32
	// Addr is the address peers name the MR's first byte with (0 for a
	// zero-based MR). It travels with the cookie (wire.ExtRDMAAddr).
	Addr() uint64
	// Offset is the offset in the MR's cookie (xport.MR.Offset).
	Offset() uint32
	// Free revokes the MR: once it returns, no peer access succeeds.
	// A transport that lets ops through by checking them with this node
	// first (dat) waits for the ops it let through to end.
	Free() error
}

// rdmaOp is an RDMA operation tied to a message (the kernel's
// rm_rdma_op), built by the core from an RDMAArgs control message and
// executed by the transport. It is stored in its message and recycled
// with it: a transport that uses the op after giving the message back
// (TxDone) holds a reference to the message until then.
type rdmaOp struct {
	rdmaOpArgs
	localBuf [4][]byte // local's storage for up to 4 iovecs
	// parts counts what success waits for: the transport's report and,
	// unless silent, the peer's ack of the message.
	parts atomic.Int32
	// outcome is 0 while pending, else the RDMAStatus plus one.
	outcome atomic.Int32

	// check is the transport's state for the op (xport.RDMAOp.Check).
	check xport.OpCheck
}

// rdmaOpArgs are what SendMsg's RDMAArgs make of an op.
type rdmaOpArgs struct {
	write  bool
	fence  bool
	silent bool
	rkey   uint32
	raddr  uint64
	n      int
	local  [][]byte
	// pin, if set, keeps local mapped: the op's message holds it from
	// init until it is freed, the last moment a transport may touch
	// local (it holds the message while a work request is posted).
	pin memPin

	sock   *sock
	token  uint64
	notify bool          // NOTIFY_ME: report success too
	recver bool          // RDS_RECVERR when the op was sent: report failures
	stats  *nodeCounters // the sending node's, counting outcomes
}

// memPin keeps memory that is not the Go heap's mapped (a daemon
// client's shared region, shmring.RegionTable) while an op may reach it.
type memPin interface {
	Hold()
	Release()
}

// init makes o the op of args; args.local is copied.
func (o *rdmaOp) init(args *rdmaOpArgs) {
	o.rdmaOpArgs = *args
	o.local = append(o.localBuf[:0], args.local...)
	if o.pin != nil {
		o.pin.Hold()
	}
	o.outcome.Store(0)
	o.check = xport.OpCheck{}
	if o.silent {
		o.parts.Store(1)
	} else {
		o.parts.Store(2)
	}
}

// Write reports an RDMA WRITE (local buffers to the peer's memory);
// otherwise the op is an RDMA READ (the peer's memory into them).
func (o *rdmaOp) Write() bool { return o.write }

// Fence asks that the message's SENDs start only after the op completed.
func (o *rdmaOp) Fence() bool { return o.fence }

// Silent reports that the message carries nothing for the peer: the
// transport posts the op and no SEND.
func (o *rdmaOp) Silent() bool { return o.silent }

// RKey and RemoteAddr name the peer's memory: the MR's R_Key and the
// address of the first byte to move.
func (o *rdmaOp) RKey() uint32       { return o.rkey }
func (o *rdmaOp) RemoteAddr() uint64 { return o.raddr }

// Len is the number of bytes to move, the total of Local.
func (o *rdmaOp) Len() int { return o.n }

// Local returns the server's buffers, in order (the local iovecs).
func (o *rdmaOp) Local() [][]byte { return o.local }

// Complete records the op's outcome; only the first final one counts.
// The transport calls it once the op's work requests completed, with the
// status they had; the core calls it with RDMADropped or RDMACanceled
// when it drops the message. Success is final only once the peer has
// also acknowledged the message (at once for a silent op): an RDMA WRITE
// that completed locally has not necessarily reached the peer's memory,
// while the peer acknowledging the SEND that followed it on the same
// connection proves it has. The final outcome queues the sender's
// notification if it asked for one.
func (o *rdmaOp) Complete(st RDMAStatus) {
	if st == RDMASuccess && o.parts.Add(-1) > 0 {
		return
	}
	if !o.outcome.CompareAndSwap(0, int32(st)+1) {
		return
	}
	if o.stats != nil {
		o.stats.countRDMA(st, o.n)
	}
	if o.sock != nil && (o.notify || (st != RDMASuccess && o.recver)) {
		o.sock.rdmaNotify(RDMANotify{UserToken: o.token, Status: st})
	}
}

// acked is the peer's ack of the op's message; nil is none. A silent
// op's success waits for the transport alone: its message never went.
func (o *rdmaOp) acked() {
	if o != nil && !o.silent {
		o.Complete(RDMASuccess)
	}
}

// connLost is the transport's report on an op whose last work request
// its broken connection flushed or never completed. For a WRITE whose
// message was sent, the peer's ack of the message is the proof that the
// data arrived (it came first on the connection), so the op's outcome
// is left to that ack, or to the message being dropped unacknowledged.
// Anything else is RDS_RDMA_DROPPED: a READ's data may not have come
// back, a silent op has no message to be acked.
func (o *rdmaOp) connLost() {
	if o.write && !o.silent {
		o.Complete(RDMASuccess) // the transport's part; the ack decides
		return
	}
	o.Complete(RDMADropped)
}

// dropped completes an op whose message the core dropped; nil is none.
func (o *rdmaOp) dropped() {
	if o != nil {
		o.Complete(RDMADropped)
	}
}

// Status returns the recorded outcome and whether there is one yet.
func (o *rdmaOp) Status() (RDMAStatus, bool) {
	v := o.outcome.Load()
	return RDMAStatus(v - 1), v != 0
}

// RDMA returns the RDMA op the transport must post before the message's
// SENDs, or nil (xport.Msg).
func (m *message) RDMA() xport.RDMAOp {
	if m.rdma == nil {
		return nil
	}
	return (*xop)(m.rdma)
}
