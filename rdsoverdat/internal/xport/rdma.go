package xport

import (
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// RDMA ops (rds-rdma(7)): the core builds an op from a sender's RDMAArgs
// and ties it to a message; a transport with the RDMACapable ability
// posts it before the message's SENDs on the same connection and reports
// its outcome once.

// RDMACapable is the optional NodeTransport ability to carry RDMA. Such
// a transport registers memory for peers (RegisterMR) and, for every
// message whose RDMA method returns an op, posts the op before the
// message's SENDs, then reports the outcome exactly once with
// RDMAOp.Complete or RDMAOp.ConnLost. It must not transmit the message
// when the op failed before being posted.
type RDMACapable interface {
	// RDMALimits are the transport's limits; zero fields take the
	// core's defaults.
	RDMALimits() RDMALimits
	// RegisterMR makes mem readable by peers of the node, and writable
	// if write, until the MR is freed; nothing outside mem is reachable
	// through it. A useOnce MR serves one op at most.
	RegisterMR(mem []byte, write, useOnce bool) (MR, error)
}

// RDMALimits are the RDMA tunables of a transport (the kernel's rds_rdma
// module parameters fmr_message_size and fmr_pool_size).
type RDMALimits struct {
	MaxBytes int // the largest mapping and the largest op
	MaxMRs   int // how many mappings a node may hold at once
}

// MR is a registration made by RDMACapable.RegisterMR.
type MR interface {
	// RKey names the MR in a peer's RDMA op (the rmr_context).
	RKey() uint32
	// Addr is the address peers name the MR's first byte with (0 for a
	// zero-based MR).
	Addr() uint64
	// Offset is the cookie's offset (rds_rdma_cookie_offset): a peer's
	// op at remote address a reaches mem[a] as Addr()+Offset()+a of the
	// MR. It is not 0 only for an MR zero-based at the start of mem's
	// first page, as the kernel's are: mem's offset in that page.
	Offset() uint32
	// Free revokes the MR: once it returns, no peer access succeeds.
	Free() error
}

// RDMAOp is an RDMA operation tied to a message (the kernel's
// rm_rdma_op). It lives and is recycled with its message: a transport
// that uses the op after TxDone holds a reference to the message.
type RDMAOp interface {
	// Write reports an RDMA WRITE (local buffers to the peer's memory);
	// otherwise the op is an RDMA READ.
	Write() bool
	// Fence asks that the message's SENDs start only after the op
	// completed.
	Fence() bool
	// Silent reports that the message carries nothing for the peer: the
	// transport posts the op and no SEND.
	Silent() bool
	// RKey and RemoteAddr name the peer's memory.
	RKey() uint32
	RemoteAddr() uint64
	// Len is the number of bytes to move, the total of Local.
	Len() int
	// Local returns the local buffers, in order.
	Local() [][]byte
	// Complete reports the outcome of the op's work requests.
	Complete(st RDMAStatus)
	// ConnLost reports an op whose last work request the transport's
	// broken connection flushed or never completed.
	ConnLost()
	// Check is the transport's own state for the op, reset with it.
	Check() *OpCheck
}

// OpCheck is a transport's per-op state, kept in the op so that tracking
// an op allocates nothing: the dat transport's in-band check of the op
// with the peer.
type OpCheck struct {
	EP     any    // the transport connection that checks the op
	ID     uint32 // the check's id on EP
	Leased bool   // granted by a lease rather than a check
	State  atomic.Uint32
}

// RDMAStatus is an op's outcome (RDS_RDMA_*).
type RDMAStatus int32

const (
	RDMASuccess     RDMAStatus = wire.RDS_RDMA_SUCCESS
	RDMARemoteError RDMAStatus = wire.RDS_RDMA_REMOTE_ERROR
	RDMACanceled    RDMAStatus = wire.RDS_RDMA_CANCELED
	RDMADropped     RDMAStatus = wire.RDS_RDMA_DROPPED
	RDMAOtherError  RDMAStatus = wire.RDS_RDMA_OTHER_ERROR
)
