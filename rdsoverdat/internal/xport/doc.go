// Package xport is the seam between the RDS core (package rdsoverdat)
// and the transports that carry its messages, modelled on the kernel's
// struct rds_transport and the rds core functions its transport modules
// call.
//
// Two directions meet here. Downwards, a Transport attaches to a node
// and returns a NodeTransport, the ops table the core drives (Connect,
// Kick, Reset, Close, plus optional abilities found by type assertion).
// Upwards, the core hands the transport its own objects only through the
// Node, Conn, Path, Msg and Receiver interfaces, so that a transport
// package imports this package and the wire codecs and nothing of the
// core: the core owns sockets, connections, paths, sequence numbers,
// retransmission, congestion maps and pings; a transport only brings
// paths up and down and moves headers and payloads.
//
// It also holds what the transports share beside the seam: the reconnect
// backoff (Backoff) and the state machine of a role a transport's
// goroutine lends to a socket's receivers (Role: the tcp reader role, the
// dat event role).
package xport
