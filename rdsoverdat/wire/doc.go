// Package wire holds the bytes RDS puts on a connection: the 48-byte
// struct rds_header of the Linux kernel (net/rds/rds.h), its extension
// headers, the 8 KiB congestion map and the ping/probe port conventions.
//
// It sits at the bottom of rdsoverdat: every transport (tcp, loop, and the
// later DAT transport) frames messages with these types, and the RDS core
// reads them to sequence, acknowledge, route and congestion-control
// messages. Nothing here knows about sockets or connections.
//
// Layouts and numbers follow docs/WIRE.md (R1 header and extension
// headers, R3 congestion map) and the kernel's uapi rds.h. All multi-byte header
// fields are big-endian. Headers are byte-slice types with offset constants
// and accessors, never structs read with encoding/binary, so that decoding a
// header costs no allocation and malformed input can only produce an error.
package wire
