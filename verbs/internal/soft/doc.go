// Package soft is the software RDMA engine shared by godapl's software
// providers (verbs/siw and verbs/mem): everything a queue pair is apart from
// the wire.
//
// It implements the verbs objects a provider does not need to specialise —
// protection domains, memory registrations and windows with their STag
// table, completion queues, shared receive queues, and the queue pair's
// state machine, send and receive queues, completion and flush rules — and
// leaves one seam: a Link, the provider's half of a connected QP, which
// moves posted work to the peer. A provider embeds *Device in its own
// device type and adds the connection manager (Listen, Connect); its
// listeners share ListenQueue, the backlog and the close that rejects what
// it holds, and add how requests arrive.
//
// # How a provider drives a QP
//
// The connection manager calls QP.Connect with its Link when the stream is
// up. After every post the engine calls Link.Kick outside its locks; the
// provider then takes work with QP.NextSend, resolves memory with
// QP.ResolveSGE and Device.ResolveRemote, and reports results with
// QP.CompleteSend. Inbound Sends take a receive with QP.TakeRecv (from the
// QP's receive queue or its SRQ), place the payload with a Placer and
// finish with QP.CompleteRecv. When the stream dies the provider calls
// QP.Fail, which moves the QP to ERROR and flushes every outstanding work
// request; the provider must itself complete (with flush status) any
// receive it took and had not finished.
//
// Every resolution of memory returns a Hold (a Placer keeps its own): the
// provider releases it as soon as its copy is done, and never holds one
// while it waits for anything but its socket. Invalidating or
// deregistering an STag waits for the holds on it, so once Dereg returns
// the application may free the memory (hold.go).
//
// A Link that also implements InlineReceiver lets a goroutine blocked in
// CQ.Wait run the stream's receive side itself, when the CQ serves that
// QP alone (inline.go); CQ pushes from other goroutines interrupt it.
// One that implements InlineTransmitter lets such a goroutine send, before
// it sleeps, the work a poster left it.
//
// Lock order: QP.mu before CQ.mu and SRQ.mu; Device.mu is never held while
// taking another lock. The engine never calls a Link while holding a lock.
package soft
