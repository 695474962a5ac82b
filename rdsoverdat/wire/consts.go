package wire

// Specification constants (include/uapi/linux/rds.h and net/rds/rds.h).
const (
	// ProtocolVersion is RDS_PROTOCOL_3_1, the version every mainline
	// transport announces (IB private data; the unused VERSION extension).
	ProtocolVersion = 0x0301

	// TCPPort is RDS_TCP_PORT: every rds_tcp path connects to it.
	TCPPort = 16385
	// RDMAPort is RDS_PORT, the historical RDS-over-IB rdma_cm port
	// (the DAT transport's PSP conn_qual).
	RDMAPort = 18634

	// MaxMsgSize is RDS_MAX_MSG_SIZE: larger payloads fail with EMSGSIZE.
	MaxMsgSize = 1 << 20
	// FragShift and FragSize are RDS_FRAG_SHIFT/RDS_FRAG_SIZE: the
	// payload carried by one fragment on fragmenting transports (IB, DAT).
	FragShift = 12
	FragSize  = 1 << FragShift

	// MPathWorkers is RDS_MPATH_WORKERS, the most paths a connection has.
	MPathWorkers = 8
	// MaxAdvCredit is RDS_MAX_ADV_CREDIT, the most credits one header
	// advertises (h_credit is one byte).
	MaxAdvCredit = 255
)

// Socket level and option numbers (uapi). The Go API uses typed options;
// these are the numbers the kernel backend and rds-info speak.
const (
	SOL_RDS = 276

	RDS_CANCEL_SENT_TO        = 1
	RDS_GET_MR                = 2
	RDS_FREE_MR               = 3
	RDS_RECVERR               = 5
	RDS_CONG_MONITOR          = 6
	RDS_GET_MR_FOR_DEST       = 7
	SO_RDS_TRANSPORT          = 8
	SO_RDS_MSG_RXPATH_LATENCY = 10
	// 4 was RDS_BARRIER (deprecated, never reuse); 9 is unused.

	RDS_INFO_COUNTERS          = 10000
	RDS_INFO_CONNECTIONS       = 10001
	RDS_INFO_SEND_MESSAGES     = 10003
	RDS_INFO_RETRANS_MESSAGES  = 10004
	RDS_INFO_RECV_MESSAGES     = 10005
	RDS_INFO_SOCKETS           = 10006
	RDS_INFO_TCP_SOCKETS       = 10007
	RDS_INFO_IB_CONNECTIONS    = 10008
	RDS_INFO_CONNECTION_STATS  = 10009
	RDS_INFO_IWARP_CONNECTIONS = 10010
	// 10002 was RDS_INFO_FLOWS (deprecated).
)

// Control message types (cmsg_type at level SOL_RDS).
const (
	RDS_CMSG_RDMA_ARGS          = 1
	RDS_CMSG_RDMA_DEST          = 2
	RDS_CMSG_RDMA_MAP           = 3
	RDS_CMSG_RDMA_STATUS        = 4
	RDS_CMSG_CONG_UPDATE        = 5
	RDS_CMSG_ATOMIC_FADD        = 6
	RDS_CMSG_ATOMIC_CSWP        = 7
	RDS_CMSG_MASKED_ATOMIC_FADD = 8
	RDS_CMSG_MASKED_ATOMIC_CSWP = 9
	RDS_CMSG_RXPATH_LATENCY     = 11
	RDS_CMSG_ZCOPY_COOKIE       = 12
	RDS_CMSG_ZCOPY_COMPLETION   = 13
	// 10 is unused in mainline (UEK: RDS_CMSG_ASYNC_SEND).
)

// Transport numbers for SO_RDS_TRANSPORT.
const (
	RDS_TRANS_IB    = 0
	RDS_TRANS_IWARP = 1 // RDS_TRANS_GAP; deprecated alias
	RDS_TRANS_TCP   = 2
	RDS_TRANS_COUNT = 3
	// RDS_TRANS_LOOP is the kernel-internal number of the loopback
	// transport (rds.h); not settable through the uapi.
	RDS_TRANS_LOOP = 3
	RDS_TRANS_NONE = ^uint32(0)
)

// RDMA op flags and completion status (uapi), kept for the RDMA
// control messages of the DAT transport.
const (
	RDS_RDMA_READWRITE  = 0x01
	RDS_RDMA_FENCE      = 0x02
	RDS_RDMA_INVALIDATE = 0x04
	RDS_RDMA_USE_ONCE   = 0x08
	RDS_RDMA_DONTWAIT   = 0x10
	RDS_RDMA_NOTIFY_ME  = 0x20
	RDS_RDMA_SILENT     = 0x40

	RDS_RDMA_SUCCESS      = 0
	RDS_RDMA_REMOTE_ERROR = 1
	RDS_RDMA_CANCELED     = 2
	RDS_RDMA_DROPPED      = 3
	RDS_RDMA_OTHER_ERROR  = 4
)
