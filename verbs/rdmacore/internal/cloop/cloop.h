// ib_send_bw's two loops in C, run on queue pairs that package rdmacore
// created, so that a benchmark can tell the cost of the provider's Go
// half from the cost of the queue pairs themselves.
#ifndef GODAPL_CLOOP_H
#define GODAPL_CLOOP_H

#include <stdint.h>
#include <infiniband/verbs.h>

// cl_state is shared by a sender and a receiver, each of which may run in
// C (cl_send, cl_recv) or in Go: the counters the other end reads are
// atomics in C memory.
struct cl_state {
	// The sender: its QP and CQ, and the one SGE every Send carries.
	struct ibv_qp *sqp;
	struct ibv_cq *scq;
	uint64_t saddr;
	uint32_t slkey;
	uint32_t size;
	// The receiver: its QP and CQ, and the receive buffers, receive i
	// at raddr + i*size.
	struct ibv_qp *rqp;
	struct ibv_cq *rcq;
	uint64_t raddr;
	uint32_t rlkey;
	// The run: n Sends, depth in flight, one in every signalled, the
	// sender staying within rdepth - gap of the receiver's progress.
	int64_t n;
	int depth;
	int every;
	int rdepth;
	int gap;
	// Shared between the two ends, each written on a cache line of its
	// own so that the other end's reads of the fields above stay hits.
	int32_t failed; // nonzero stops both ends (atomic)
	// What went wrong: the errno of a post or the status of a
	// completion, and which.
	int32_t err;
	int32_t err_where;
	int64_t received __attribute__((aligned(64))); // Receives completed (atomic)
	// Counts, for the benchmark's metrics: the sender's, the
	// receiver's.
	int64_t tx_polls __attribute__((aligned(64)));
	int64_t rx_polls __attribute__((aligned(64)));
	int64_t rx_empty;
	int64_t rx_posts;
};

enum {
	CL_ERR_POST_SEND = 1,
	CL_ERR_SEND_WC = 2,
	CL_ERR_POST_RECV = 3,
	CL_ERR_RECV_WC = 4,
};

// cl_send posts st->n Sends, one per ibv_post_send, as ib_send_bw's
// client does, and returns once every one has completed or either end
// failed. cl_recv polls the receive CQ and reposts what completed until
// st->n Receives have completed. Both spin.
void cl_send(uintptr_t st);
void cl_recv(uintptr_t st);

// The steps of the two loops, one cgo call each, for loops written in
// Go that bypass the provider's Go code: cl_post_one posts Send id
// (signalled or not) and returns the errno of ibv_post_send; cl_reap_one
// polls the send CQ once and returns how many Sends are retired (or -1
// on a failed completion); cl_recv_one polls the receive CQ once,
// reposts what completed as one list and returns how many (or -1).
int cl_post_one(uintptr_t st, uint64_t id, int signaled);
int64_t cl_reap_one(uintptr_t st, int64_t retired);
int cl_recv_one(uintptr_t st);

#endif
