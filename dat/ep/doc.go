// Package ep holds DAT endpoints (EP), the service points that accept
// connections to them (PSP, RSP) and connection requests (CR).
//
// An EP is a verbs RC queue pair with DAT's state machine around it.
// Every operation is legal only in some states; an illegal call fails with
// DAT_INVALID_STATE and the subtype of the state the EP is in. The
// transitions (dat-api.md section 4):
//
//	from                          trigger                      to                            event on the connect EVD
//	(none)                        Create                       UNCONNECTED
//	UNCONNECTED                   Connect, DupConnect          ACTIVE_CONNECTION_PENDING
//	ACTIVE_CONNECTION_PENDING     peer accepts                 CONNECTED                     ESTABLISHED (peer's private data)
//	ACTIVE_CONNECTION_PENDING     reject/no listener/timeout   DISCONNECTED                  PEER_REJECTED, NON_PEER_REJECTED, UNREACHABLE, TIMED_OUT
//	ACTIVE_CP, COMPLETION_PENDING Disconnect (any flag)        DISCONNECTED                  DISCONNECTED
//	UNCONNECTED                   CreateRSP                    RESERVED
//	RESERVED                      RSP.Free                     UNCONNECTED
//	RESERVED                      request arrives on the RSP   PASSIVE_CONNECTION_PENDING    CONNECTION_REQUEST (on the RSP's EVD)
//	(provider)                    request on a PSPProvider PSP TENTATIVE_CONNECTION_PENDING  CONNECTION_REQUEST (CR carries the EP)
//	UNCONNECTED, PASSIVE_CP,
//	  TENTATIVE_CP                CR.Accept                    COMPLETION_PENDING
//	COMPLETION_PENDING            stream established           CONNECTED                     ESTABLISHED
//	COMPLETION_PENDING            setup fails                  DISCONNECTED                  ACCEPT_COMPLETION_ERROR
//	PASSIVE_CP                    CR.Reject                    UNCONNECTED
//	TENTATIVE_CP                  CR.Reject                    (freed: back to the provider)
//	CONNECTED                     Disconnect graceful          DISCONNECT_PENDING → DISCONNECTED  DISCONNECTED
//	CONNECTED, DISCONNECT_PENDING Disconnect abrupt            DISCONNECTED                  DISCONNECTED (outstanding DTOs flushed)
//	CONNECTED                     peer disconnects             DISCONNECTED                  DISCONNECTED
//	CONNECTED                     transport error              DISCONNECTED                  BROKEN (and ASYNC_ERROR_EP_BROKEN for a Terminate)
//	DISCONNECTED                  Reset                        UNCONNECTED
//	all but RESERVED, PASSIVE_CP,
//	  TENTATIVE_CP                Free                         (freed)
//
// Legality: PostSend, PostRDMARead/Write and RMR binds need CONNECTED or
// DISCONNECTED (where they are flushed at once, completing with
// DAT_DTO_ERR_FLUSHED); PostRecv is legal in every state; Connect needs
// UNCONNECTED; Query and Status work in every state.
//
// DTOs: each post names local memory by LMR triplets, checked against the
// EP's PZ and the LMR's privileges (DAT_PRIVILEGES_VIOLATION for an unknown
// context or a missing privilege, DAT_PROTECTION_VIOLATION for an LMR of
// another PZ, DAT_INVALID_PARAMETER for a segment outside its LMR). The
// DTO cookie comes back in the completion event; the EP maps verbs work
// request IDs to cookies through preallocated tables, so posting allocates
// nothing. Completion flags: CompletionSuppress drops the event of a DTO
// that succeeds, CompletionSolicitedWait sends with a solicited event,
// CompletionBarrierFence waits for earlier RDMA Reads (verbs SendFence),
// CompletionUnsignalled queues the event without triggering the CNO.
//
// Shared receive queues: CreateWithSRQ makes an EP that takes its receive
// buffers from a dat/srq SRQ while CONNECTED or DISCONNECT_PENDING. Such
// an EP has no receive queue of its own (PostRecv: DAT_INVALID_STATE /
// SRQ_IN_USE); the buffers it takes complete to its recv EVD, signalled,
// following its recv completion flags, and the ones it holds when it
// disconnects are flushed there. RecvQuery and SetWatermark report and
// bound the buffers an EP holds (see the srq package doc for the event
// numbers).
package ep
