// Package lmr holds DAT's memory objects: local memory regions (LMR),
// registrations of consumer memory, and remote memory regions (RMR),
// windows onto part of an LMR that a peer may access.
//
// An LMR has an lmr_context that local triplets name, and, with a remote
// privilege, an rmr_context a peer puts in remote triplets. Memory comes
// from the consumer (Create, which keeps the slice referenced; Go memory
// never moves) or from an mmap allocator outside the Go heap (Alloc, freed
// with the LMR).
//
// RMRs are memory windows. Linux's siw has none; godapl's software verbs
// engine implements them for both of its providers, so an RMR bind here
// is a verbs MW bind: posted on an EP's request queue, completed with an
// RMR-bind event there, and granting exactly the bound range and rights
// under a fresh context that dies with an unbind, a rebind or the peer's
// Send with Invalidate.
package lmr
