// Package rping is the protocol engine of cmd/rping: rdma-core's rping
// (librdmacm/examples/rping.c) over any verbs.Device, so that the same
// code runs against the kernel's rping over soft-iWARP and, in tests, over
// the in-memory provider.
//
// It sits on top of the verbs layer and below nothing: cmd/rping only
// parses flags, opens a device and calls Client or Serve.
//
// # The protocol (iwarp-wire.md section 8)
//
// The peers exchange one message type, Info: struct rping_rdma_info, 16
// big-endian bytes naming a buffer by address (the tagged offset), STag and
// size. Each side keeps exactly one 16-byte receive posted and re-posts it
// as soon as it completes; any receive of another length ends the run
// ("Received bogus data"). One ping, with the client's buffers start (the
// source) and rdma (the sink), each -S bytes:
//
//	client                                   server
//	fill start: "rdma-ping-<n>: " + pattern
//	Send Info{start}        ------------->   RDMA Read start into its buffer
//	                        <-------------   Send go-ahead (16 zero bytes)
//	Send Info{rdma}         ------------->   RDMA Write its buffer into rdma
//	                        <-------------   Send go-ahead
//	-V: compare start and rdma
//
// The client stops after -C pings (0: never) and disconnects; the server
// serves until the client disconnects. The server's RDMA Write carries
// strlen+1 bytes of what it read, as rping's does, which is -S bytes for a
// well-formed ping.
//
// # Differences from rping.c
//
// The flow is sequential: where rping's CQ thread hands states to the main
// thread through a semaphore, this engine polls the CQ from the one
// goroutine that drives the connection and consumes Send completions on
// the way. Every wait is bounded (Config.StepTimeout), and every failure
// is a non-nil error, including the cases where rping.c returns 0 because
// a DISCONNECTED event arrived while it waited: a server whose client goes
// away in the middle of a ping, and a client whose server goes away before
// -C pings are done. A client running forever (-C 0) ends successfully
// when the server disconnects, as rping's does.
package rping
