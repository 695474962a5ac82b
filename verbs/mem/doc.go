// Package mem is an in-memory verbs provider: queue pairs of one process
// connected without sockets.
//
// A Provider is a private fabric: devices opened from the same Provider
// reach each other's listeners by address, devices of different Providers
// never meet. Data moves by copying from the sender's registered memory
// straight into the receiver's, in the poster's goroutine, so the provider
// has no goroutines of its own, runs deterministically, and keeps unit and
// property tests of the layers above fast. It follows the same rules as
// the soft-iWARP provider — the same engine (verbs/internal/soft) checks
// keys, bounds and rights, and a fault ends the connection with the same
// Terminate codes — and passes the same conformance suite
// (verbs/verbstest).
package mem
