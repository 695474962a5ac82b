//go:build rdmacore

#include <string.h>
#include "cloop.h"

#define CL_POLL_BATCH 16

static int cl_stopped(struct cl_state *st)
{
	return __atomic_load_n(&st->failed, __ATOMIC_RELAXED) != 0;
}

static void cl_fail(struct cl_state *st, int where, int err)
{
	int32_t zero = 0;

	if (__atomic_compare_exchange_n(&st->failed, &zero, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		st->err = err;
		st->err_where = where;
	}
}

// cl_reap polls the send CQ once; a signalled Send retires every Send
// posted before it.
static void cl_reap(struct cl_state *st, struct ibv_wc *wc, int64_t *retired)
{
	int i, k = ibv_poll_cq(st->scq, CL_POLL_BATCH, wc);

	st->tx_polls++;
	for (i = 0; i < k; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			cl_fail(st, CL_ERR_SEND_WC, wc[i].status);
			return;
		}
		*retired = (int64_t)wc[i].wr_id + 1;
	}
}

void cl_send(uintptr_t p)
{
	struct cl_state *st = (struct cl_state *)p;
	struct ibv_wc wc[CL_POLL_BATCH];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int64_t posted = 0, retired = 0;
	int ret;

	memset(&wr, 0, sizeof(wr));
	sge.addr = st->saddr;
	sge.length = st->size;
	sge.lkey = st->slkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	while (posted < st->n && !cl_stopped(st)) {
		// Room in flight, and receives the peer has posted.
		while (!cl_stopped(st) && (posted - retired >= st->depth ||
			posted - __atomic_load_n(&st->received, __ATOMIC_ACQUIRE) >= st->rdepth - st->gap))
			cl_reap(st, wc, &retired);
		wr.wr_id = (uint64_t)posted;
		wr.send_flags = 0;
		if (posted % st->every == st->every - 1 || posted == st->n - 1)
			wr.send_flags = IBV_SEND_SIGNALED;
		ret = ibv_post_send(st->sqp, &wr, &bad);
		if (ret) {
			cl_fail(st, CL_ERR_POST_SEND, ret);
			break;
		}
		posted++;
	}
	while (retired < posted && !cl_stopped(st))
		cl_reap(st, wc, &retired);
}

// cl_recv_step polls the receive CQ once and reposts what completed as
// one list, as the Go receiver of the benchmark does: how many, or -1.
static int cl_recv_step(struct cl_state *st)
{
	struct ibv_wc wc[CL_POLL_BATCH];
	struct ibv_sge sge[CL_POLL_BATCH];
	struct ibv_recv_wr wr[CL_POLL_BATCH], *bad;
	int i, k, ret;

	k = ibv_poll_cq(st->rcq, CL_POLL_BATCH, wc);
	st->rx_polls++;
	if (k == 0) {
		st->rx_empty++;
		return 0;
	}
	if (k < 0) {
		cl_fail(st, CL_ERR_RECV_WC, -1);
		return -1;
	}
	for (i = 0; i < k; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			cl_fail(st, CL_ERR_RECV_WC, wc[i].status);
			return -1;
		}
		// Receive i takes slot i of the buffer again.
		sge[i].addr = st->raddr + wc[i].wr_id * st->size;
		sge[i].length = st->size;
		sge[i].lkey = st->rlkey;
		wr[i].wr_id = wc[i].wr_id;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
	}
	st->rx_posts++;
	ret = ibv_post_recv(st->rqp, wr, &bad);
	if (ret) {
		cl_fail(st, CL_ERR_POST_RECV, ret);
		return -1;
	}
	return k;
}

void cl_recv(uintptr_t p)
{
	struct cl_state *st = (struct cl_state *)p;
	int64_t n = 0;
	int k;

	while (n < st->n && !cl_stopped(st)) {
		k = cl_recv_step(st);
		if (k < 0)
			return;
		if (k > 0) {
			n += k;
			__atomic_store_n(&st->received, n, __ATOMIC_RELEASE);
		}
	}
}

int cl_recv_one(uintptr_t p)
{
	return cl_recv_step((struct cl_state *)p);
}

int cl_post_one(uintptr_t p, uint64_t id, int signaled)
{
	struct cl_state *st = (struct cl_state *)p;
	struct ibv_sge sge = {.addr = st->saddr, .length = st->size, .lkey = st->slkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	return ibv_post_send(st->sqp, &wr, &bad);
}

int64_t cl_reap_one(uintptr_t p, int64_t retired)
{
	struct cl_state *st = (struct cl_state *)p;
	struct ibv_wc wc[CL_POLL_BATCH];

	cl_reap(st, wc, &retired);
	return cl_stopped(st) ? -1 : retired;
}
