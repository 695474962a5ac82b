// Package shmring is the shared-memory data path between an RDS client
// process and the host's RDS daemon: the layer under the daemon backend
// of the socket API (package rdsoverdat) and its daemon, beside their
// control connection, a unix socket. It knows nothing of RDS: it moves
// records and maps memory, and trusts nothing the other process wrote.
//
// A Ring is a single-producer single-consumer ring of variable-length
// records in a sealed memfd mapped by both processes, with an eventfd per
// direction for wake-ups (layout.go, wait.go). One side creates it and
// sends its Files over the control socket (SendFiles, RecvFiles with
// SCM_RIGHTS); the other attaches. A busy stream makes no system call
// per record: a side writes its peer's eventfd only when the peer has
// announced in shared memory that it is going to sleep, and a sleeping
// side blocks in Go's netpoller, not in a system call. Close on either
// side wakes the other's blocked calls; Shutdown tells a ring that the
// peer is gone (its control socket ended) so that nothing waits for it.
// Beside the records, the consumer publishes one count of its own (an
// ack, ack.go) that the producer reads with no record or wake-up, and
// asks to be told of only when it waits for it.
//
// A Region is the client's shared allocator for RDMA zerocopy: a memfd
// that the daemon maps too (RegionTable) and registers with verbs, so
// that the daemon reaches a client's buffer by (region id, offset,
// length). Memory outside a region the daemon was given is refused
// (ErrNotShared). An operation that may outlive the client's regions
// (an RDMA op already posted) holds the table, which keeps them mapped
// until it is done.
//
// The peer may be hostile. Every shared memfd must be sealed against
// shrinking (a shrunk file would make accesses fault); every index and
// length read from shared memory is bounded by what this side mapped,
// read once, and a violation makes the ring fail with ErrCorrupt rather
// than read outside the mapping or loop; a client reaches only the
// regions in its own RegionTable.
//
// Isolation between clients rests on descriptors: a memfd reaches only
// the processes it is sent to (they are close-on-exec), and another
// process can open one through /proc only with ptrace rights over a
// holder, which a client of another user does not have over the daemon
// or over other clients. Clients of one user can already reach each
// other's memory by ptrace; the daemon keeps them apart only in what
// it does for them (one RegionTable, one set of rings per client).
//
// Linux only (memfd, eventfd, seals).
package shmring
