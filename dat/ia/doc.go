// Package ia is the entry point of the DAT object model: interface
// adapters (IA) and protection zones (PZ).
//
// An IA is opened by name from a registry (dat.Registry, like dat.conf):
// Open uses the process-wide default registry of dat/providers, OpenIn a
// given one. The IA owns the verbs device under it and everything created
// on it; Close with dat.CloseAbrupt destroys all of that in DAT's cascade
// order, with dat.CloseGraceful only succeeds once the consumer freed it
// all. Its async event stream (DAT_ASYNC_ERROR_* events) is an EVD of
// package evd, reached with evd.Async(ia): EVDs are built on IAs, so the
// IA type cannot name them without an import cycle.
//
// Layers: dat (codes, types, registry) < ia < evd < ep < lmr, all over
// dat/internal/core, which holds the objects' state, over verbs.
package ia
