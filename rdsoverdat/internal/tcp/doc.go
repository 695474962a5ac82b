// Package tcp is RDS's tcp transport, byte-compatible with the Linux
// kernel's rds_tcp module (tcp.go lists the wire rules it keeps).
//
// It sits below the RDS core (package rdsoverdat) and beside the dat
// transport, as rds_tcp sits beside rds_rdma below the kernel's rds
// module: the core reaches it only through the transport interfaces of
// package xport, and it reaches the core only through xport's Node,
// Conn, Path, Msg and Receiver, so besides xport it imports the wire
// codecs and system packages only. rdsoverdat.TCP wraps New for users.
package tcp
