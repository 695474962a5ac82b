// Package dat is RDS's RDMA transport over the DAT API (package
// github.com/godapl/godapl/dat), modelled on the Linux kernel's rds_ib
// (dat.go lists the rules it keeps).
//
// It sits below the RDS core (package rdsoverdat) and beside the tcp
// transport, as rds_rdma sits beside rds_tcp below the kernel's rds
// module: the core reaches it only through the transport interfaces of
// package xport, and it reaches the core only through xport's Node,
// Conn, Path, Msg and RDMAOp, so besides xport it imports the wire
// codecs, the DAT API, the module's ring buffer, its unmap notices
// (memhook, which its cache of local registrations follows) and the
// standard library only: nothing below DAT. rdsoverdat.DAT wraps New for users.
package dat
