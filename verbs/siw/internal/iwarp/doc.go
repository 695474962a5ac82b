// Package iwarp is the wire layer of the soft-iWARP provider (verbs/siw):
// it encodes, decodes and validates the bytes that iWARP puts on a TCP
// connection, and nothing else.
//
// The layers, bottom up, and where each lives here:
//
//	TCP byte stream
//	  MPA (RFC 5044, RFC 6581)  mpa.go: Request/Reply frames with the v2 IRD/ORD block
//	                            fpdu.go, reader.go, writer.go: FPDU framing, pad, CRC32c (crc.go)
//	    DDP (RFC 5041)          ddp.go: control word, tagged and untagged headers
//	      RDMAP (RFC 5040)      rdmap.go: opcode table, Read Request, header validation
//	                            terminate.go: Terminate message and its error causes
//
// Every multi-byte field is big-endian (network order), with one exception:
// the MPA CRC32c is stored least-significant byte first, as Linux siw does.
// Headers are byte-slice types (Header, TaggedHeader, UntaggedHeader,
// ReadRequestHeader, TerminateHeader, MPAHeader) whose views start at the
// first byte of the FPDU's ULPDU_Length field, so every offset in this
// package matches the tables of the RFCs and of docs/WIRE.md.
//
// The package is byte-compatible with the Linux kernel's siw driver: where
// the RFCs leave room, it follows what siw sends and accepts (PD_Length at
// most 256, no markers, zeros in the CRC field when CRC is off, siw's rules
// for which headers a Terminate carries). Malformed input from the peer is
// reported as a *ProtocolError carrying the Terminate cause siw would send,
// so the QP layer can terminate with the right reason; it never panics.
//
// What is not here: connection management and QP state (verbs/siw), MSN and
// MO bookkeeping, memory checks, and goroutines. FrameReader and FrameWriter
// are single-owner objects, meant to be driven by the QP's receive and
// transmit goroutines respectively; neither allocates per frame.
package iwarp
