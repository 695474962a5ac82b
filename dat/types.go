package dat

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// HandleType is the kind of a DAT object (DAT_HANDLE_TYPE), with DAT's values.
type HandleType uint8

const (
	HandleTypeCR HandleType = iota
	HandleTypeEP
	HandleTypeEVD
	HandleTypeIA
	HandleTypeLMR
	HandleTypePSP
	HandleTypePZ
	HandleTypeRMR
	HandleTypeRSP
	HandleTypeCNO
	HandleTypeSRQ
	HandleTypeCSP
)

var handleTypeNames = [...]string{"CR", "EP", "EVD", "IA", "LMR", "PSP", "PZ", "RMR", "RSP", "CNO", "SRQ", "CSP"}

func (t HandleType) String() string {
	if int(t) < len(handleTypeNames) {
		return handleTypeNames[t]
	}
	return fmt.Sprintf("HandleType(%d)", uint8(t))
}

// Handle is what every DAT object is: a typed handle carrying one consumer
// context (dat_get_handle_type, dat_set/get_consumer_context). A freed
// object keeps its type but every operation on it fails with
// DAT_INVALID_HANDLE.
type Handle interface {
	HandleType() HandleType
	SetConsumerContext(ctx any) error
	ConsumerContext() (any, error)
}

// ConnQual is a connection qualifier (DAT_CONN_QUAL): the service a PSP or
// RSP listens on. For iWARP it is the TCP port, so it must fit 16 bits.
type ConnQual uint64

// DTOCookie is the consumer's value returned in a DTO completion
// (DAT_DTO_COOKIE); the provider never interprets it.
type DTOCookie uint64

// LMRContext names an LMR in local IOVs (the local key).
type LMRContext uint32

// RMRContext is what a peer puts in a remote triplet to reach an LMR or an
// RMR (the iWARP STag).
type RMRContext uint32

// VAddr is an address in an LMR's or RMR's address space (DAT_VADDR).
type VAddr uint64

// LMRTriplet names SegmentLength bytes at VirtualAddress inside the LMR
// whose context is LMRContext (DAT_LMR_TRIPLET, 2.0 layout). A zero
// length makes the other fields irrelevant.
type LMRTriplet struct {
	VirtualAddress VAddr
	SegmentLength  uint32
	LMRContext     LMRContext
}

// RecvPost is one receive buffer of a list posted in one call
// (srq.SRQ.PostRecvList, a godapl extension): the iov and cookie that
// dat_srq_post_recv takes for one buffer.
type RecvPost struct {
	IOV    []LMRTriplet
	Cookie DTOCookie
}

// SendPost is one Send of a send list (ep.EP.PostSendList, a godapl
// extension): the segments, cookie and completion flags of one
// ep_post_send.
type SendPost struct {
	IOV    []LMRTriplet
	Cookie DTOCookie
	Flags  CompletionFlags
}

// RMRTriplet names peer memory for RDMA (DAT_RMR_TRIPLET, 2.0 layout).
type RMRTriplet struct {
	VirtualAddress VAddr
	SegmentLength  uint32
	RMRContext     RMRContext
}

// RMRTripletSize is the size of an encoded RMR triplet.
const RMRTripletSize = 16

// Offsets of the fields of an encoded RMR triplet. DAT leaves the wire
// format to the consumer; this is dtest's: the 2.0 layout, big-endian.
const (
	rmrTripletVAOffset  = 0
	rmrTripletLenOffset = 8
	rmrTripletCtxOffset = 12
)

// Encode writes t into b[:RMRTripletSize] so that it can be sent to the
// peer. It panics if b is shorter, like binary.BigEndian.PutUint64.
func (t RMRTriplet) Encode(b []byte) {
	_ = b[RMRTripletSize-1]
	binary.BigEndian.PutUint64(b[rmrTripletVAOffset:], uint64(t.VirtualAddress))
	binary.BigEndian.PutUint32(b[rmrTripletLenOffset:], t.SegmentLength)
	binary.BigEndian.PutUint32(b[rmrTripletCtxOffset:], uint32(t.RMRContext))
}

// DecodeRMRTriplet reads a triplet written by Encode; b comes from the
// peer, so a short b is an error, never a panic.
func DecodeRMRTriplet(b []byte) (RMRTriplet, error) {
	if len(b) < RMRTripletSize {
		return RMRTriplet{}, fmt.Errorf("dat: RMR triplet needs %d bytes, got %d", RMRTripletSize, len(b))
	}
	return RMRTriplet{
		VirtualAddress: VAddr(binary.BigEndian.Uint64(b[rmrTripletVAOffset:])),
		SegmentLength:  binary.BigEndian.Uint32(b[rmrTripletLenOffset:]),
		RMRContext:     RMRContext(binary.BigEndian.Uint32(b[rmrTripletCtxOffset:])),
	}, nil
}

// MemPriv is a set of memory privileges (DAT_MEM_PRIV_FLAGS).
type MemPriv uint32

const (
	MemPrivNone        MemPriv = 0x00
	MemPrivLocalRead   MemPriv = 0x01
	MemPrivRemoteRead  MemPriv = 0x02
	MemPrivLocalWrite  MemPriv = 0x10
	MemPrivRemoteWrite MemPriv = 0x20
	MemPrivAll         MemPriv = 0x33
	MemPrivRead                = MemPrivLocalRead | MemPrivRemoteRead   // 1.x DAT_MEM_PRIV_READ_FLAG
	MemPrivWrite               = MemPrivLocalWrite | MemPrivRemoteWrite // 1.x DAT_MEM_PRIV_WRITE_FLAG
)

func (p MemPriv) String() string {
	if p == MemPrivNone {
		return "NONE"
	}
	var parts []string
	for _, f := range [...]struct {
		bit  MemPriv
		name string
	}{{MemPrivLocalRead, "LOCAL_READ"}, {MemPrivRemoteRead, "REMOTE_READ"}, {MemPrivLocalWrite, "LOCAL_WRITE"}, {MemPrivRemoteWrite, "REMOTE_WRITE"}} {
		if p&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	if rest := p &^ MemPrivAll; rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(rest)))
	}
	return strings.Join(parts, "|")
}

// VAType says how remote addresses of a region are formed (DAT_VA_TYPE).
type VAType uint8

const (
	VATypeVA VAType = 0 // virtual address: the address of the byte
	VATypeZB VAType = 1 // zero based: the offset into the region
)

// MemType is the kind of region an LMR registers (DAT_MEM_TYPE).
type MemType uint8

const (
	MemTypeVirtual       MemType = 0
	MemTypeLMR           MemType = 1
	MemTypeSharedVirtual MemType = 2
)

// CompletionFlags modify a DTO or RMR bind (DAT_COMPLETION_FLAGS), and as
// EP attributes choose the notification model of its queues.
type CompletionFlags uint8

const (
	CompletionDefault CompletionFlags = 0x00
	// CompletionSuppress: no completion event if the DTO succeeds.
	CompletionSuppress CompletionFlags = 0x01
	// CompletionSolicitedWait: on a Send, ask the peer to notify (Send with
	// Solicited Event); as a recv attribute, receive completions wake
	// waiters only for solicited Sends.
	CompletionSolicitedWait CompletionFlags = 0x02
	// CompletionUnsignalled: the completion is queued but does not
	// trigger the CNO; allowed only if the EP's attribute says so.
	CompletionUnsignalled CompletionFlags = 0x04
	// CompletionBarrierFence: do not start until every earlier RDMA Read
	// of the EP completed.
	CompletionBarrierFence CompletionFlags = 0x08
	// CompletionEVDThreshold: as an EP attribute, wake-ups are governed
	// by the Wait threshold.
	CompletionEVDThreshold CompletionFlags = 0x10
)

// DTOOp is the operation of a completed DTO (DAT_DTOS).
type DTOOp uint8

const (
	DTOSend                  DTOOp = 0
	DTORDMAWrite             DTOOp = 1
	DTORDMARead              DTOOp = 2
	DTOReceive               DTOOp = 3
	DTOReceiveWithInvalidate DTOOp = 4
	DTOBindMW                DTOOp = 5
)

var dtoOpNames = [...]string{"SEND", "RDMA_WRITE", "RDMA_READ", "RECEIVE", "RECEIVE_WITH_INVALIDATE", "BIND_MW"}

func (o DTOOp) String() string {
	if int(o) < len(dtoOpNames) {
		return "DAT_DTO_" + dtoOpNames[o]
	}
	return fmt.Sprintf("DTOOp(%d)", uint8(o))
}

// DTOStatus is the outcome of a DTO (DAT_DTO_COMPLETION_STATUS).
type DTOStatus uint8

const (
	DTOSuccess             DTOStatus = 0
	DTOErrFlushed          DTOStatus = 1
	DTOErrLocalLength      DTOStatus = 2
	DTOErrLocalEP          DTOStatus = 3
	DTOErrLocalProtection  DTOStatus = 4
	DTOErrBadResponse      DTOStatus = 5
	DTOErrRemoteAccess     DTOStatus = 6
	DTOErrRemoteResponder  DTOStatus = 7
	DTOErrTransport        DTOStatus = 8
	DTOErrReceiverNotReady DTOStatus = 9
	DTOErrPartialPacket    DTOStatus = 10
	RMROperationFailed     DTOStatus = 11
	DTOErrLocalMMError     DTOStatus = 12
)

var dtoStatusNames = [...]string{
	"DAT_DTO_SUCCESS", "DAT_DTO_ERR_FLUSHED", "DAT_DTO_ERR_LOCAL_LENGTH", "DAT_DTO_ERR_LOCAL_EP",
	"DAT_DTO_ERR_LOCAL_PROTECTION", "DAT_DTO_ERR_BAD_RESPONSE", "DAT_DTO_ERR_REMOTE_ACCESS",
	"DAT_DTO_ERR_REMOTE_RESPONDER", "DAT_DTO_ERR_TRANSPORT", "DAT_DTO_ERR_RECEIVER_NOT_READY",
	"DAT_DTO_ERR_PARTIAL_PACKET", "DAT_RMR_OPERATION_FAILED", "DAT_DTO_ERR_LOCAL_MM_ERROR",
}

func (s DTOStatus) String() string {
	if int(s) < len(dtoStatusNames) {
		return dtoStatusNames[s]
	}
	return fmt.Sprintf("DTOStatus(%d)", uint8(s))
}

// EPState is an endpoint's state (DAT_EP_STATE), with DAT's values. The
// UNCONFIGURED_* and *_PATH states exist for completeness; like the
// reference implementation, this one never enters them.
type EPState uint8

const (
	EPStateUnconnected                EPState = 0
	EPStateUnconfiguredUnconnected    EPState = 1
	EPStateReserved                   EPState = 2
	EPStateUnconfiguredReserved       EPState = 3
	EPStatePassiveConnectionPending   EPState = 4
	EPStateUnconfiguredPassive        EPState = 5
	EPStateActiveConnectionPending    EPState = 6
	EPStateTentativeConnectionPending EPState = 7
	EPStateUnconfiguredTentative      EPState = 8
	EPStateConnected                  EPState = 9
	EPStateDisconnectPending          EPState = 10
	EPStateDisconnected               EPState = 11 // also DAT_EP_STATE_ERROR
	EPStateCompletionPending          EPState = 12
	EPStateConnectedSinglePath        EPState = 13
	EPStateConnectedMultiPath         EPState = 14
)

var epStateNames = [...]string{
	"UNCONNECTED", "UNCONFIGURED_UNCONNECTED", "RESERVED", "UNCONFIGURED_RESERVED",
	"PASSIVE_CONNECTION_PENDING", "UNCONFIGURED_PASSIVE", "ACTIVE_CONNECTION_PENDING",
	"TENTATIVE_CONNECTION_PENDING", "UNCONFIGURED_TENTATIVE", "CONNECTED", "DISCONNECT_PENDING",
	"DISCONNECTED", "COMPLETION_PENDING", "CONNECTED_SINGLE_PATH", "CONNECTED_MULTI_PATH",
}

func (s EPState) String() string {
	if int(s) < len(epStateNames) {
		return "DAT_EP_STATE_" + epStateNames[s]
	}
	return fmt.Sprintf("EPState(%d)", uint8(s))
}

// StateSubtype is the DAT_INVALID_STATE subtype that names state s, the
// one a call refused in state s reports.
func (s EPState) StateSubtype() Subtype {
	switch s {
	case EPStateUnconnected:
		return InvalidStateEPUnconnected
	case EPStateReserved:
		return InvalidStateEPReserved
	case EPStatePassiveConnectionPending:
		return InvalidStateEPPassConnPending
	case EPStateActiveConnectionPending:
		return InvalidStateEPActConnPending
	case EPStateTentativeConnectionPending:
		return InvalidStateEPTentConnPending
	case EPStateConnected, EPStateConnectedSinglePath, EPStateConnectedMultiPath:
		return InvalidStateEPConnected
	case EPStateDisconnectPending:
		return InvalidStateEPDiscPending
	case EPStateDisconnected:
		return InvalidStateEPDisconnected
	case EPStateCompletionPending:
		return InvalidStateEPComplPending
	case EPStateUnconfiguredUnconnected:
		return InvalidStateEPUnconfigured
	case EPStateUnconfiguredReserved:
		return InvalidStateEPUnconfReserved
	case EPStateUnconfiguredPassive:
		return InvalidStateEPUnconfPassive
	case EPStateUnconfiguredTentative:
		return InvalidStateEPUnconfTentative
	}
	return NoSubtype
}

// CloseFlags choose how an IA closes or an EP disconnects.
type CloseFlags uint8

const (
	CloseAbrupt   CloseFlags = 0 // DAT_CLOSE_ABRUPT_FLAG (the default)
	CloseGraceful CloseFlags = 1 // DAT_CLOSE_GRACEFUL_FLAG
)

// ConnectFlags modify ep_connect (DAT_CONNECT_FLAGS).
type ConnectFlags uint8

const (
	ConnectDefault            ConnectFlags = 0
	ConnectMultipathRequested ConnectFlags = 1
	ConnectMultipathRequired  ConnectFlags = 2
)

// QoS is a quality of service class (DAT_QOS). iWARP over TCP has one
// service; every class is accepted and served best effort.
type QoS uint8

const (
	QoSBestEffort     QoS = 0
	QoSHighThroughput QoS = 1
	QoSLowLatency     QoS = 2
	QoSEconomy        QoS = 4
	QoSPremium        QoS = 8
)

// EVDFlags choose the event streams an EVD accepts (DAT_EVD_FLAGS).
type EVDFlags uint16

const (
	EVDSoftware   EVDFlags = 0x001
	EVDCR         EVDFlags = 0x010
	EVDDTO        EVDFlags = 0x020
	EVDConnection EVDFlags = 0x040
	EVDRMRBind    EVDFlags = 0x080
	EVDAsync      EVDFlags = 0x100
	EVDDefault    EVDFlags = 0x1F0 // every DAT stream, no software events
	evdAll                 = EVDSoftware | EVDDefault
)

// Valid reports whether f names only known streams and at least one.
func (f EVDFlags) Valid() bool { return f != 0 && f&^evdAll == 0 }

// EVDState is an EVD's state bits (DAT_EVD_STATE).
type EVDState uint8

const (
	EVDStateEnabled         EVDState = 0x01
	EVDStateDisabled        EVDState = 0x02
	EVDStateWaitable        EVDState = 0x04
	EVDStateUnwaitable      EVDState = 0x08
	EVDStateConfigNotify    EVDState = 0x10
	EVDStateConfigSolicited EVDState = 0x20
	EVDStateConfigThreshold EVDState = 0x30
)

// SRQState is a shared receive queue's state (DAT_SRQ_STATE).
type SRQState uint8

const (
	SRQStateError       SRQState = 0
	SRQStateOperational SRQState = 1
	SRQStateShutdown    SRQState = 2
)

func (s SRQState) String() string {
	switch s {
	case SRQStateError:
		return "DAT_SRQ_STATE_ERROR"
	case SRQStateOperational:
		return "DAT_SRQ_STATE_OPERATIONAL"
	case SRQStateShutdown:
		return "DAT_SRQ_STATE_SHUTDOWN"
	}
	return fmt.Sprintf("SRQState(%d)", uint8(s))
}

// PSPFlags say who creates the EP for a request on a PSP (DAT_PSP_FLAGS).
type PSPFlags uint8

const (
	PSPConsumer PSPFlags = 0 // the consumer passes an EP to cr_accept
	PSPProvider PSPFlags = 1 // the provider creates one EP per request
)

// ServiceType is an EP's transport service. Only reliable connections exist.
type ServiceType uint8

const ServiceTypeRC ServiceType = 1

// Special counts (dat.h).
const (
	ValueUnknown      = -2 // DAT_VALUE_UNKNOWN
	WatermarkInfinite = -1 // DAT_WATERMARK_INFINITE, also DAT_HW_DEFAULT
	SRQLWDefault      = 0  // DAT_SRQ_LW_DEFAULT
	NameMaxLength     = 256
	OptimalAlignment  = 256
	VersionMajor      = 2
	VersionMinor      = 0
)
