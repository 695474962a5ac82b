// Package srq holds DAT shared receive queues (SRQ): one pool of receive
// buffers, in one PZ, that any EP created with it (ep.CreateWithSRQ) takes
// from while it is CONNECTED or DISCONNECT_PENDING.
//
// It sits beside dat/ep above the verbs SRQ of the provider; the engine
// is in dat/internal/core. Semantics, after dat_srq_post_recv(3DAT) and
// the rest of the dat_srq_* family:
//
//   - PostRecv is legal in every SRQ state, allocates nothing and waits for
//     nothing but a short lock; it is safe from many goroutines. A buffer
//     is filled front to back: leading segments full, at most one partial,
//     the rest untouched; the completion reports the bytes received. A nil
//     or all-empty vector receives a zero-size message. The vector itself
//     is copied during the call: the consumer owns it again once PostRecv
//     returns (the memory it names stays the provider's until the
//     completion). The cookie is the consumer's: 0 and repeated values
//     come back as given.
//   - PostRecvList, a godapl extension, posts a list of buffers in one
//     call with PostRecv's checks and errors per entry, handing them to
//     the provider in chunks (one ibv_post_srq_recv per chunk on
//     rdmacore). Entries go in order; at the first refused one it stops:
//     the entries before it stay posted, it and those after it are not,
//     and the call returns how many were posted with the refused entry's
//     error.
//   - The completion goes to the recv EVD of the EP that took the buffer,
//     in the order its peer posted the Sends; there is no order across
//     connections. Buffers carry no completion flags and complete
//     signalled; the EP's recv flags decide the rest (SOLICITED_WAIT: the
//     Send's solicited bit wakes waiters; EVD_THRESHOLD: evd_wait's
//     threshold does). UNSIGNALLED, DAT's default for SRQ EPs, still
//     completes signalled.
//   - When an EP becomes DISCONNECTED, the buffers it took and did not
//     complete are flushed (DAT_DTO_ERR_FLUSHED) to its recv EVD; buffers
//     still on the SRQ stay posted for the other EPs.
//   - Query reports available (posted, not taken) and outstanding (posted,
//     taken, or completed but not yet dequeued) as one snapshot:
//     available <= outstanding <= max_recv_dtos. Resize never goes below
//     the outstanding buffers or the low watermark (DAT_INVALID_STATE,
//     SRQ unchanged); shrinking the underlying queue is best effort, the
//     reported max_recv_dtos is exact.
//   - Free fails with DAT_INVALID_STATE / SRQ_IN_USE while an EP created
//     with the SRQ exists.
//   - Errors of PostRecv leave the SRQ as it was: DAT_INVALID_HANDLE for a
//     freed SRQ, DAT_INVALID_PARAMETER for too many segments or a segment
//     outside its LMR, DAT_PRIVILEGES_VIOLATION for an unknown LMR context
//     or an LMR without local write, DAT_PROTECTION_VIOLATION for an LMR
//     of another PZ, DAT_INSUFFICIENT_RESOURCES when max_recv_dtos buffers
//     are outstanding.
//
// # Low watermark event
//
// SetLW(lw) arms a one-shot event: it fires the first time fewer than lw
// buffers are available — at once, during SetLW, if that is already so,
// or later when an EP takes a buffer — and then not again until SetLW is
// called again (which re-arms whether or not the previous arm fired).
// lw 0 (dat.SRQLWDefault) disarms. This is the DESCRIPTION's meaning of
// dat_srq_set_lw; its USAGE paragraph, which says the opposite
// comparison, is taken to be a copy slip from the high-watermark page.
// A low watermark given to Create is armed the same way, so anything but
// 0 fires at once on the new, empty SRQ.
//
// DAT defines the reason code (DAT_SRQ_LOW_WATERMARK_EVENT, 2) but no
// event number. godapl reports it on the IA's async EVD as
//
//	dat.AsyncSRQLowWatermark = 0x08006
//
// with Async.Handle the *SRQ and Async.Reason dat.ReasonSRQWatermark. The
// number follows DAT's async-error range (0x08001..0x08005), so
// EventNumber.Stream says EVDAsync, and it will not change. The EP soft
// high watermark of ep.SetWatermark is dat.AsyncEPSoftHighWatermark =
// 0x08007 with the *ep.EP as handle and the same reason.
package srq
