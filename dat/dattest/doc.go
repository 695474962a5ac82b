// Package dattest is the conformance suite of the DAT object model, in the
// spirit of the reference implementation's dapltest and dtest, and the
// helpers it is built from.
//
// Run takes a Harness that opens two IAs that can reach each other and
// exercises the whole of dat/: handles and return codes of every object,
// the EP state machine with the exact DAT_INVALID_STATE subtypes,
// connection setup with private data, rejects and teardown, Send/Receive,
// RDMA Read and Write with data checks, RMR binds, flushes, EVD and CNO
// semantics, limits, connection storms and multi-goroutine transactions.
// The suite runs over the in-memory provider (dat/dattest tests) and over
// soft-iWARP on the loopback interface; each sub-test checks for leaked
// goroutines. Over the in-memory provider each sub-test runs in a
// testing/synctest bubble (Harness.Bubble), so its timeouts cost no real
// time. Like verbs/verbstest, the files are ordinary Go files so
// that other packages can use the helpers.
package dattest
