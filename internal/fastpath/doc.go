// Package fastpath is the contract between godapl's DAT layer
// (dat/internal/core) and its software verbs providers (verbs/internal/soft,
// and through it verbs/mem and verbs/siw), beside the public verbs model.
//
// Public verbs is the libibverbs object model and nothing else. DAT's data
// path on a software provider goes further: it borrows the provider's queue
// and CQ locks to do its own bookkeeping of a post or a poll under them
// (SendQueueLocker, RecvQueueLocker, CQLocker and the forms that lend the
// mutex itself), takes completions in place from the provider's CQRing,
// leaves SGL checks to a provider that makes them (SGLChecker), and asks a
// QP how many SRQ receives it holds (RecvInProgress). Every one of these is
// an optional interface that a provider may implement and DAT probes with a
// type assertion. They are no part of the public API, so a provider outside
// this module (a hardware one) does without them, and DAT then takes locks
// and makes checks of its own.
//
// The package lives outside verbs/ so that both sides can import it: Go's
// internal rule would keep a package under verbs/internal from dat/.
package fastpath
