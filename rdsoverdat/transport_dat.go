package rdsoverdat

import (
	"time"

	"github.com/godapl/godapl/dat"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
)

// DATConfig configures the dat transport with DAT's own names: a registry
// and an IA name. The zero value is usable: soft-iWARP on each node's own
// address.
type DATConfig struct {
	// Registry holds the IAs (default: the process-wide registry of
	// dat/providers). Nodes of one transport value open their IAs from
	// it, so with the in-memory provider they share one fabric.
	Registry *dat.Registry
	// IA names the registry entry whose provider and device every node
	// opens. Each node opens its own IA at its own address, whatever
	// address the entry names, since an RDS node is an address (rds_ib
	// likewise binds its listener to the address, on whichever device
	// holds it). Empty means the registry's soft-iWARP provider on its
	// device that spans every local address, so that nodes on any
	// address, loopback aliases included, need no entry of their own.
	IA string
	// Port is the PSP's connection qualifier (default wire.RDMAPort,
	// 18634); both ends must agree.
	Port int
	// RecvDepth is the number of receive buffers posted on each node's
	// SRQ (default 1024, RDS_IB_DEFAULT_RECV_WR), and the step by which
	// the SRQ grows when connections need more.
	RecvDepth int
	// ConnCredits is the share of the SRQ one connection grants its peer
	// (default RecvDepth/4 up to 64, at least 2): its receive window of
	// 4 KiB fragments. A connection that finds fewer buffers free grows
	// the SRQ; if that fails it gets what is left, none below 2 (it then
	// retries).
	ConnCredits int
	// SendDepth is the number of fragments a connection may have posted
	// and not completed (default 256, RDS_IB_DEFAULT_SEND_WR).
	SendDepth int
	// ConnectTimeout bounds one connection attempt (default 5 s).
	ConnectTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the randomized exponential
	// reconnect backoff (defaults 1 ms and 1 s, as for tcp).
	ReconnectMin, ReconnectMax time.Duration
	// RDMA are the zerocopy limits (rds_rdma's fmr_message_size and
	// fmr_pool_size); zero fields take the defaults (RDMALimits).
	RDMA RDMALimits
}

// DAT returns the dat transport.
func DAT(cfg DATConfig) Transport {
	return xportTransport{rdsdat.New(rdsdat.Config{
		Registry: cfg.Registry, IA: cfg.IA, Port: cfg.Port, RecvDepth: cfg.RecvDepth,
		ConnCredits: cfg.ConnCredits, SendDepth: cfg.SendDepth, ConnectTimeout: cfg.ConnectTimeout,
		ReconnectMin: cfg.ReconnectMin, ReconnectMax: cfg.ReconnectMax,
		RDMA: xport.RDMALimits{MaxBytes: cfg.RDMA.MaxBytes, MaxMRs: cfg.RDMA.MaxMRs},
	})}
}
