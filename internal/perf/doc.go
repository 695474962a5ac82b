// Package perf holds the workloads of cmd/rdma-perf: RDMA Write
// bandwidth, Send message rate and Send round-trip latency over any verbs
// provider, and the same workloads over a plain TCP connection as the
// baseline, so that every figure is a ratio measured in one run on one
// machine.
//
// A test runs on one connection. The client names the test and its
// parameters in the connection's private data; the server answers with the
// address and key of a buffer it registered for the test. The wire format
// of that exchange is this package's own (big-endian, fixed size), and both
// ends must run the same version of it.
package perf
