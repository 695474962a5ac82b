// Package rdsoverdat implements RDS (Reliable Datagram Sockets, rds(7)) in
// user space: reliable, ordered datagrams between sockets of any number of
// processes, carried over one connection per pair of nodes.
//
// Layers. The exported API is the socket API only: Stack, Socket,
// Config and the transports' configurations, Msg and the control
// messages, the socket options, errors, and the Info and statistics
// snapshots. A Stack is the RDS instance of a process (the kernel
// module's counterpart); it owns one node per local IPv4 address that a
// Socket has bound to. Sockets send to any RDS address (IPv4 address and
// RDS port); the node keeps one connection per remote address and
// transport, brought up by the first send and kept for good, each with
// one or more paths. A Socket is a handle on one of two backends
// (socket.go): this package's own RDS (sock.go), the host kernel's
// AF_RDS (kernel*.go) or the rdsd daemon's (daemon*.go). Below the API, unexported, the core (sock.go,
// node.go, conn.go, message.go, send.go, recv*.go, cong.go, rdma*.go)
// owns sequence numbers, retransmission after reconnects, duplicate
// suppression, SO_SNDBUF/SO_RCVBUF accounting, congestion maps and pings;
// transports only bring paths up and move headers and payloads. The
// seam between them is the internal package rdsoverdat/internal/xport,
// modelled on the kernel's struct rds_transport and the core functions
// its transport modules call: an ops table the core drives, and the
// core's nodes, connections, paths, messages and sockets as interfaces,
// which are all a transport uses of the core (xport.go implements them,
// transport_*.go wire the configurations in):
//
//   - loop (loop.go): nodes of the same Stack, no network (net/rds/loop.c);
//   - tcp (package rdsoverdat/internal/tcp): byte-compatible with the
//     Linux kernel's rds_tcp, so a Go node and a kernel exchange
//     datagrams;
//   - dat (package rdsoverdat/internal/dat): RDS over the DAT API
//     (package dat), modelled on rds_ib: one EP per node pair receiving
//     through one SRQ per node, fragments of 4 KiB, credits, acks by
//     sequence number; configured with DAT's names (a registry and an IA
//     name), soft-iWARP by default, the in-memory IA in tests, and it
//     reaches nothing below DAT. It answers to TransIB, the kernel's RDMA
//     transport number.
//
// The wire format (headers, extension headers, congestion maps) lives in
// rdsoverdat/wire and is shared by all transports.
//
// RDMA zerocopy (rds-rdma(7); rdma*.go, internal/dat/dat_rdma*.go). A
// client maps memory (GetMR, or an RDMAMap control message on its
// request) and sends the cookie; the server replies with an RDMAArgs
// control message, and the transport moves the bytes with an RDMA READ
// or WRITE posted before the reply on the same connection, so the reply
// arrives only after the data. Outcomes come back as RDMANotify control
// messages. Only transports with the RDMA ability (xport.RDMACapable)
// carry RDMA (dat, like the kernel's rds_rdma); elsewhere the calls fail
// with EOPNOTSUPP. Over dat the memory's owner checks every op in-band
// before it is posted (internal/dat/dat_rdma_check.go), so a bad, freed
// or used-once cookie fails with RDS_RDMA_REMOTE_ERROR and the
// connection stays up.
//
// Backends. NewStack(Config{Kernel: true}) returns a Stack whose Sockets
// are the host kernel's own AF_RDS sockets (kernel.go) behind the same
// API, so a program moves between in-kernel RDS and rdsoverdat by its
// Config alone; KernelAvailable says whether the host has the rds module.
// NewStack(Config{Daemon: path}) (or $RDSD_SOCKET) returns a Stack whose
// Sockets are run by the rdsd daemon listening on path (daemon_client.go),
// which owns the host's nodes so that every process shares one
// connection per node pair; a Daemon (daemon.go) serves a Stack's sockets
// that way, cmd/rdsd runs one. Their protocol is the internal package
// rdsoverdat/internal/rdsdproto, over a unix socket and the shared-memory
// rings of rdsoverdat/internal/shmring (docs/RDSD.md).
//
// Multipath with a Linux 6.1 kernel: the kernel has no SPORT_IDX, so it
// puts each incoming lane on its first free slot, not on the lane this
// side meant; TCPConfig.Paths 1 (the default) keeps a kernel peer
// single-path, which is exact. Between Go nodes lanes are matched by
// source port.
//
// Errors carry the errno the kernel returns in the same case
// (errors.Is(err, syscall.ENOBUFS)); see errors.go.
package rdsoverdat
