package dat

import "net/netip"

// IAAttr are an IA's attributes and limits (DAT_IA_ATTR). The limits come
// from the verbs device under the IA.
type IAAttr struct {
	AdapterName     string
	VendorName      string
	HardwareVersion string
	Address         netip.Addr // the IA address (DAT_IA_ADDRESS_PTR)

	MaxEPs                 int
	MaxDTOPerEP            int
	MaxRDMAReadPerEPIn     int
	MaxRDMAReadPerEPOut    int
	MaxEVDs                int
	MaxEVDQLen             int
	MaxIOVSegmentsPerDTO   int
	MaxLMRs                int
	MaxLMRBlockSize        uint64
	MaxLMRVirtualAddress   uint64
	MaxPZs                 int
	MaxMessageSize         uint64
	MaxRDMASize            uint64
	MaxRMRs                int
	MaxRMRTargetAddress    uint64
	MaxSRQs                int
	MaxEPPerSRQ            int
	MaxRecvPerSRQ          int
	MaxIOVSegmentsPerRead  int // local segments of one RDMA Read
	MaxIOVSegmentsPerWrite int
	MaxRDMAReadIn          int
	MaxRDMAReadOut         int
	ZBSupported            bool
}

// ProviderAttr are the provider's attributes (DAT_PROVIDER_ATTR), the
// answers to what a portable consumer must not assume.
type ProviderAttr struct {
	ProviderName         string
	ProviderVersionMajor int
	ProviderVersionMinor int
	DAPLVersionMajor     int
	DAPLVersionMinor     int
	// LMRMemTypes lists the memory types lmr_create accepts.
	LMRMemTypes []MemType
	// CompletionFlagsSupported is the set of completion flags posts accept.
	CompletionFlagsSupported CompletionFlags
	IsThreadSafe             bool
	MaxPrivateDataSize       int
	SupportsMultipath        bool
	// PSPCreatesEP is the ep_creator attribute: false here means
	// DAT_PSP_CREATES_EP_IFASKED (PSPProvider is honoured).
	PSPCreatesEP           bool
	OptimalBufferAlignment int
	SRQSupported           bool
	// LMRSyncRequired is false: lmr_sync_rdma_read/write only check
	// their arguments, software providers have no caches to flush.
	LMRSyncRequired bool
	// RDMAReadLMRRMRContextExposure is true for iWARP: the sink of an RDMA
	// Read is reached through an STag the peer sees.
	RDMAReadLMRRMRContextExposure bool
	// RMRSupported says whether memory windows exist (the verbs device
	// has them).
	RMRSupported bool
	// Specific are the provider-specific name/value attributes.
	Specific map[string]string
}

// EPAttr are an EP's attributes (DAT_EP_ATTR). The zero value of a field
// means "provider default" when passed to ep.Create.
type EPAttr struct {
	ServiceType    ServiceType
	MaxMessageSize uint64
	MaxRDMASize    uint64
	QoS            QoS
	// RecvCompletionFlags and RequestCompletionFlags choose each queue's
	// notification model: CompletionDefault, CompletionSolicitedWait
	// (recv only), CompletionUnsignalled or CompletionEVDThreshold. Posts
	// may use CompletionUnsignalled only on a queue whose model it is.
	RecvCompletionFlags    CompletionFlags
	RequestCompletionFlags CompletionFlags
	MaxRecvDTOs            int
	MaxRequestDTOs         int
	MaxRecvIOV             int
	MaxRequestIOV          int
	// MaxRDMAReadIn (IRD) and MaxRDMAReadOut (ORD) are the inbound and
	// outbound RDMA Reads the EP handles at once. Unlike the man pages'
	// advice, 0 means the provider default of 4 each: over soft-iWARP an
	// ORD of 0 forbids RDMA Reads altogether.
	MaxRDMAReadIn   int
	MaxRDMAReadOut  int
	SRQSoftHW       int
	MaxRDMAReadIOV  int
	MaxRDMAWriteIOV int
}
