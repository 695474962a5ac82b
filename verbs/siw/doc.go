// Package siw is godapl's default verbs provider: a pure-Go soft-iWARP
// that speaks RDMAP (RFC 5040), DDP (RFC 5041) and MPA (RFC 5044, with the
// RFC 6581 enhanced connection setup) over TCP, byte for byte like the
// Linux kernel's siw driver, so that a Go program and a kernel rdma_cm
// application (rping, perftest with -R) talk to each other.
//
// It sits under verbs/ like any provider. The objects that do not touch
// the wire — PDs, MRs and memory windows with their STags, CQs, SRQs and
// the QP state machine with its queues — are the shared software engine
// (verbs/internal/soft); wire encoding is verbs/siw/internal/iwarp. This
// package adds what is iWARP about a QP, split the way the kernel splits
// siw:
//
//	provider.go  Provider, Options, device names ("siw", "siw_<ifname>"), limits
//	device.go    Device: the engine's device plus listeners and connections
//	cm.go        listening, the MPA Request handshake of incoming connections
//	cm_accept.go ConnRequest: IRD/ORD negotiation, MPA Reply, reject
//	cm_connect.go Connect: MPA Request, Reply checks, error classification
//	conn.go      verbs.Conn
//	qp.go        the stream of a connected QP: goroutines, teardown
//	qp_tx.go     transmit: segmentation into FPDUs, batching, Read Responses
//	qp_txdirect.go transmit from the posting goroutine when the link is idle
//	qp_rx.go     receive: validation and direct placement, Terminates
//	qp_rxinline.go receive run by the goroutine waiting on the QP's CQ
//	qp_read.go   the inbound and outbound RDMA Read queues
//	terminate.go which Terminate each fault sends
//
// # Connections
//
// One TCP connection carries one QP (the TCP port is the rdma_cm port).
// Connect sends an MPA rev 2 Request with IRD/ORD (and C when Options.CRC
// asks for CRC); by default it also requests peer-to-peer mode, offering
// a zero-length RDMA Write or Read as the ready-to-receive (RTR) frame,
// which it sends right after a good Reply. A responder echoes the request's
// revision and flags, negotiates IRD/ORD like siw ("relaxed"), and holds
// its FPDUs until the initiator's first FPDU has arrived: the RTR in
// peer-to-peer mode, the first real message otherwise (a siw initiator
// fails if FPDU bytes follow the Reply before it has parsed it). A rev 1
// request carries no IRD/ORD; the ConnRequest then reports 0/0, like siw,
// and the accepting QP takes the application's values (0 meaning 1).
//
// Peer-to-peer mode is what lets a Go responder start sending without
// waiting for application data from the initiator. The kernel's siw
// responder implements it (it echoes P2P, picks the Write RTR and waits
// for it), but mainline siw initiators never request it; should a kernel
// peer ever mishandle the request, Options.NoPeerToPeer turns it off and
// the Go initiator then sends exactly what a siw initiator sends.
//
// # Data path
//
// Each connected QP has a transmit goroutine (runTx) and a receive
// goroutine (runRx), owned by the Device. A post that finds the link
// idle transmits a few small messages itself with one non-blocking write
// (saving a goroutine wakeup per message); otherwise runTx drains the
// send queue when kicked (with Options.TransmitInWait a post leaves a
// large message to the next goroutine waiting on the QP's CQ instead),
// segments messages into FPDUs of at most
// Options.MaxULPDU bytes, and writes many FPDUs per writev, referencing
// large payloads in registered memory instead of copying them; Sends and Writes complete
// when handed to TCP, as in siw. runRx reads FPDUs through a buffered
// frame reader that lets large payloads go straight from the socket into
// their destination (once a stream has carried a large payload, each read
// also brings up to 256 KiB of the FPDUs behind it, placed after their
// headers are checked: a syscall per several FPDUs, no speculation),
// checks everything siw checks, and ends the stream with a Terminate (and
// a *verbs.TerminateError on the QP and Conn) on any protocol or
// protection violation. When the QP's CQ serves that QP alone, a
// goroutine blocked in CQ.Wait takes the receive side over from runRx
// and reads, places and completes the FPDUs itself, so that the network
// wakes the waiter directly (one wakeup per message instead of two);
// runRx takes the socket back when no waiter comes for a while. Nothing
// on the path allocates, the read-ahead buffers (once per stream) aside.
package siw
