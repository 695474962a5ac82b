package iwarp

// Specification constants. Their values are fixed by RFC 5044 (MPA),
// RFC 6581 (MPA v2), RFC 5041 (DDP), RFC 5040 (RDMAP) or by what Linux siw
// accepts on the wire; changing one breaks interoperability.
const (
	// MPAKeyLen is the length of the ASCII key that opens an MPA frame.
	MPAKeyLen = 16
	// MPAHeaderLen is the fixed part of an MPA Request/Reply frame:
	// key, flags, revision and PD_Length.
	MPAHeaderLen = 20

	// MPARev1 is RFC 5044 MPA; MPARev2 is RFC 6581 enhanced connection
	// setup. siw accepts revisions 0, 1 and 2 and rejects anything higher.
	MPARev1 = 1
	MPARev2 = 2
	// MPAMaxRev is the highest revision this package (and siw) parses.
	MPAMaxRev = MPARev2

	// MPAMaxPrivateData is the RFC 5044 limit on PD_Length.
	MPAMaxPrivateData = 512
	// MaxPrivateData is the PD_Length limit siw enforces
	// (RDMA_MAX_PRIVATE_DATA); larger frames are a protocol error, so this
	// package refuses them too.
	MaxPrivateData = 256
	// IRDORDLen is the size of the RFC 6581 IRD/ORD block that leads the
	// private data of a rev 2 frame with the enhanced flag.
	IRDORDLen = 4
	// MaxUserPrivateData is what remains for the application next to the
	// IRD/ORD block within MaxPrivateData.
	MaxUserPrivateData = MaxPrivateData - IRDORDLen

	// DDPVersion and RDMAPVersion are the only versions defined; the
	// control word carries both in 2-bit fields.
	DDPVersion   = 1
	RDMAPVersion = 1

	// ULPDULengthLen is the size of the MPA ULPDU_Length field that opens
	// every FPDU. All header lengths below count it.
	ULPDULengthLen = 2
	// CRCLen is the size of the MPA CRC field that closes every FPDU; it
	// is present even when CRC was not negotiated.
	CRCLen = 4
	// MaxULPDULength is the largest ULPDU one FPDU can carry.
	MaxULPDULength = 0xFFFF

	// TaggedHeaderLen is ULPDU_Length + control + STag + TO (RDMA Write,
	// RDMA Read Response).
	TaggedHeaderLen = 16
	// UntaggedHeaderLen is ULPDU_Length + control + ULP word + QN + MSN +
	// MO (the Send family).
	UntaggedHeaderLen = 20
	// ReadRequestHeaderLen is the untagged header plus the 28-byte RDMAP
	// Read Request header. A Read Request carries no payload.
	ReadRequestHeaderLen = 48
	// TerminateHeaderLen is the untagged header plus the 4-byte Terminate
	// control word; copied headers of the offending segment may follow.
	TerminateHeaderLen = 24
	// MinHeaderLen is the smallest DDP/RDMAP header (tagged).
	MinHeaderLen = TaggedHeaderLen
	// MaxHeaderLen is the largest fixed DDP/RDMAP header (Read Request).
	MaxHeaderLen = ReadRequestHeaderLen
)

// Implementation tunables: defaults of this package, free to change without
// affecting the wire.
const (
	// DefaultReadBufferSize is the FrameReader buffer. Large reads amortise
	// the syscall over many small FPDUs; payloads larger than a few KiB
	// bypass the buffer and are read straight into the destination.
	DefaultReadBufferSize = 64 << 10
	// DefaultWriteBufferSize is the FrameWriter batch buffer: headers,
	// trailers and copied small payloads of all FPDUs queued before Flush.
	DefaultWriteBufferSize = 64 << 10
	// DefaultCopyThreshold is the largest payload FrameWriter copies into
	// its buffer; larger payloads are written from the caller's memory
	// with writev. Copying 1 KiB costs less than an extra iovec entry.
	DefaultCopyThreshold = 1 << 10
	// DefaultMaxSegments bounds the iovec list of one Flush.
	DefaultMaxSegments = 64
	// DefaultMaxULPDU is the ULPDU size the sender segments messages at
	// unless told otherwise. siw accepts any FPDU up to MaxULPDULength,
	// and fewer, larger FPDUs mean fewer headers and CRC setups.
	DefaultMaxULPDU = MaxULPDULength

	// minReadBufferSize must hold the largest MPA frame this package
	// accepts and the largest header plus trailer.
	minReadBufferSize = MPAHeaderLen + MaxPrivateData
	// minWriteBufferSize must hold a maximal header plus trailer.
	minWriteBufferSize = 256
	// directReadMin is the remaining payload size from which ReadPayload
	// reads straight into the destination instead of through the buffer.
	directReadMin = 4 << 10
)
