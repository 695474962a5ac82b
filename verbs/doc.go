// Package verbs is the provider-neutral RDMA verbs layer of godapl: the
// bottom of the stack, beneath dat/ and rdsoverdat/.
//
// It mirrors the libibverbs object model in Go. A Provider opens Devices;
// a Device allocates protection domains (PD), completion queues (CQ) and
// connections through its connection manager; a PD registers memory (MR),
// allocates memory windows (MW) and creates reliable-connected queue pairs
// (QP) and shared receive queues (SRQ). Work is posted to a QP's send and
// receive queues, or to an SRQ, as work requests (SendWR, RecvWR) whose
// scatter/gather lists name registered memory by address and local key;
// results come back as work completions (WC) on a CQ. Errors that happen
// asynchronously (a QP terminated by its peer, a CQ overflow, an SRQ that
// fell below its limit) are delivered as AsyncEvents on the Device.
//
// Providers live in their own packages and are passed in as values; this
// package never imports one. verbs/siw is the default, a pure-Go
// soft-iWARP speaking RDMAP/DDP/MPA over TCP; verbs/mem connects queue pairs
// inside one process without sockets and exists to keep tests fast and
// deterministic. verbs/verbstest holds the conformance suite every provider
// must pass.
//
// # Contracts shared by all providers
//
// Posting (QP.PostSend, QP.PostRecv, SRQ.PostRecv) never blocks and never
// allocates: the provider copies each work request, including its
// scatter/gather list, into preallocated queue slots before it returns, so
// the caller may reuse its slices at once. Memory named by a posted work
// request belongs to the provider until the request completes.
//
// Completion status is data, not a Go error: a failed transfer produces a WC
// whose Status says why. Synchronous errors (a full queue, an illegal state,
// an invalid key) are returned as one of the sentinel errors of this
// package, usable with errors.Is, and leave the queue unchanged.
//
// All objects are safe for concurrent use. Close, Destroy, Dereg and
// Dealloc make blocked calls on the object return ErrClosed.
package verbs
