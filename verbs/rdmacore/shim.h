// The C half of the rdmacore provider: compact request and completion
// records that Go fills or reads in memory C owns, and the loops that turn
// them into libibverbs' linked work requests, so that a whole list crosses
// from Go to C in one call.
#ifndef GODAPL_RDMACORE_SHIM_H
#define GODAPL_RDMACORE_SHIM_H

#include <stdint.h>
#include <stdlib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

// Opcodes and flags as package verbs numbers them.
enum {
	GD_OP_SEND = 0,
	GD_OP_SEND_INV = 1,
	GD_OP_WRITE = 2,
	GD_OP_READ = 3,
	GD_OP_BIND_MW = 4,
	GD_OP_LOCAL_INV = 5,
};
enum {
	GD_F_SIGNALED = 1,
	GD_F_SOLICITED = 2,
	GD_F_FENCE = 4,
	GD_F_INLINE = 8,
};

// gd_swr is one send work request; its SGEs are the next num_sge entries
// of the SGE array passed beside it.
struct gd_swr {
	uint64_t id;
	uint64_t remote_addr;
	uint64_t bind_addr;
	uint64_t bind_len;
	struct ibv_mw *mw;
	struct ibv_mr *mr;
	uint32_t rkey;
	uint32_t inv_rkey;
	uint32_t bind_access;
	uint32_t num_sge;
	uint8_t opcode;
	uint8_t flags;
};

// gd_rwr is one receive work request.
struct gd_rwr {
	uint64_t id;
	uint32_t num_sge;
};

// gd_wc is a work completion laid out for Go (verbs.WC's fields).
struct gd_wc {
	uint64_t id;
	uint32_t byte_len;
	uint32_t qpn;
	uint32_t inv_rkey;
	uint32_t vendor_err;
	uint8_t status;
	uint8_t opcode;
	uint8_t flags;
};

// Sizes of the C arrays below, which package rdmacore mirrors: the
// requests one post call takes, the SGEs per request (verbs.MaxSGE) and
// the completions one poll call takes.
#define GD_POST_BATCH 64
#define GD_MAX_SGE 6
#define GD_POLL_BATCH 64

// gd_sq is the C half of a QP's send queue: the QP and the records one
// post call fills. gd_rq is a receive queue's (qp, or srq when qp is
// NULL), gd_cq a CQ's with the records one poll call fills. Go keeps each
// in C memory and passes its address as an integer, so that cgo has no
// pointer argument to check on the hot path.
struct gd_sq {
	struct ibv_qp *qp;
	struct gd_swr w[GD_POST_BATCH];
	struct ibv_sge sge[GD_POST_BATCH * GD_MAX_SGE];
	struct ibv_send_wr scratch[GD_POST_BATCH];
};
struct gd_rq {
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct gd_rwr w[GD_POST_BATCH];
	struct ibv_sge sge[GD_POST_BATCH * GD_MAX_SGE];
	struct ibv_recv_wr scratch[GD_POST_BATCH];
};
struct gd_cq {
	struct ibv_cq *cq;
	struct ibv_wc raw[GD_POLL_BATCH];
	struct gd_wc out[GD_POLL_BATCH];
};

// The post functions post the first n records of sq or rq. They return
// how many requests the device took in the low 32 bits and the errno of
// the one it refused in the high 32 bits, so that Go passes no pointer to
// its own memory (which would move the variable to the heap on every
// post).
int64_t gd_post_send(uintptr_t sq, int n);
int64_t gd_post_recv(uintptr_t rq, int n);
// gd_poll_cq polls up to n completions of cq into its out records. When
// the CQ is empty it polls again, up to spins more times, before it
// returns 0: one crossing from Go then covers many empty polls.
int gd_poll_cq(uintptr_t cq, int n, int spins);
int gd_req_notify(uintptr_t cq, int solicited);
// gd_take_cq_event takes a completion event from a non-blocking channel
// and acknowledges it: 1, or 0 when none is pending, or -errno. A CQ
// armed once has one event at most: reading on to EAGAIN would cost a
// system call per wake-up.
int gd_take_cq_event(struct ibv_comp_channel *ch);
int gd_query_port_gids(struct ibv_context *ctx, uint8_t port, union ibv_gid *gids, int n);
int gd_errno(void);
// gd_probe_inline returns the largest inline data a QP of ctx takes.
int gd_probe_inline(struct ibv_context *ctx);
// gd_probe_resize reports whether the device can resize a CQ.
int gd_probe_resize(struct ibv_context *ctx);
int gd_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
int gd_modify_qp_state(struct ibv_qp *qp, enum ibv_qp_state s, int port, int access);
// GD_MIN_RNR_TIMER is the minimum RNR timer of connected QPs (IB
// encoding 10: 0.32 ms). rdma_cm gives a userspace RC QP the encoding 0,
// which IB reads as 655.36 ms: a Send that finds the receive queue empty
// waited that long before its retry, as over rxe the peer that sends
// without credits (the kernel's rds_rdma, and godapl on its wire) did
// whenever the receiver fell behind. 0.32 ms is what the kernel's RDS
// asks of rdma_cm for its own QPs (rdma_set_min_rnr_timer).
#define GD_MIN_RNR_TIMER 10

// gd_qp_path is what ibv_query_qp reports of a connected QP's path and
// transport timers, for the tests to compare with other programs'.
struct gd_qp_path {
	int path_mtu; // bytes
	int timeout; // IB encoding: 4.096 us << timeout
	int retry_cnt;
	int rnr_retry;
	int min_rnr_timer;
	int max_rd_atomic;
	int max_dest_rd_atomic;
};

int gd_query_path(struct ibv_qp *qp, struct gd_qp_path *out);

int gd_cm_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state s,
		 int resp_res, int init_depth);

// gd_cm_event is an rdma_cm event copied out of librdmacm's, so that the
// event can be acknowledged at once.
struct gd_cm_event {
	struct rdma_cm_id *id;
	struct rdma_cm_id *listen_id;
	uintptr_t handle; // the id's context: the Go handle of its owner
	int type;
	int status;
	int pd_len;
	int resp_res;
	int init_depth;
	uint32_t qpn;
	uint8_t pd[256];
};

// gd_get_cm_event takes one event from a non-blocking channel and acks it:
// 1 when *out is filled, 0 when none is pending, -errno on failure.
int gd_get_cm_event(struct rdma_event_channel *ch, struct gd_cm_event *out);
void gd_set_handle(struct rdma_cm_id *id, uintptr_t h);

// gd_async_event is an async event copied out of libibverbs'.
struct gd_async_event {
	int type;
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	int port;
	uint32_t qpn;
};

int gd_get_async_event(struct ibv_context *ctx, struct gd_async_event *out);

#endif
