// Package evd holds DAT's event dispatchers (EVD) and consumer
// notification objects (CNO).
//
// An EVD collects the event streams its flags accept: DTO and RMR-bind
// completions (through a verbs CQ the EVD owns), connection requests,
// connection events, async errors and software events. Events come out
// with Dequeue (never blocks, never allocates) or Wait (blocks until a
// threshold of events is queued, bounded by a context). A CNO lets one
// goroutine wait for several EVDs.
//
// Ordering: events of one stream come out in order; DTO completions of an
// EP that precede its DISCONNECTED event on a shared EVD come out before
// it. An EVD is larger than its qlen by the DTO queues of the EPs attached
// to it, so DTO completions are never lost; a connection, CR or async
// event that finds qlen events queued is lost and reported on the IA's
// async EVD as DAT_ASYNC_ERROR_EVD_OVERFLOW, and PostSE gets
// DAT_QUEUE_FULL.
package evd
