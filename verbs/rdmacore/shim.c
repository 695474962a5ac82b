//go:build rdmacore

#include <errno.h>
#include <string.h>
#include "shim.h"

static enum ibv_wr_opcode gd_wr_opcode(uint8_t op)
{
	switch (op) {
	case GD_OP_SEND_INV:
		return IBV_WR_SEND_WITH_INV;
	case GD_OP_WRITE:
		return IBV_WR_RDMA_WRITE;
	case GD_OP_READ:
		return IBV_WR_RDMA_READ;
	case GD_OP_BIND_MW:
		return IBV_WR_BIND_MW;
	case GD_OP_LOCAL_INV:
		return IBV_WR_LOCAL_INV;
	}
	return IBV_WR_SEND;
}

static unsigned int gd_send_flags(uint8_t f)
{
	unsigned int r = 0;
	if (f & GD_F_SIGNALED)
		r |= IBV_SEND_SIGNALED;
	if (f & GD_F_SOLICITED)
		r |= IBV_SEND_SOLICITED;
	if (f & GD_F_FENCE)
		r |= IBV_SEND_FENCE;
	if (f & GD_F_INLINE)
		r |= IBV_SEND_INLINE;
	return r;
}

int64_t gd_post_send(uintptr_t sqp, int n)
{
	struct gd_sq *sq = (struct gd_sq *)sqp;
	struct gd_swr *w = sq->w;
	struct ibv_sge *sge = sq->sge;
	struct ibv_send_wr *scratch = sq->scratch;
	struct ibv_send_wr *badwr = NULL;
	int i, ret;

	for (i = 0; i < n; i++) {
		struct ibv_send_wr *wr = &scratch[i];
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = w[i].id;
		wr->next = i + 1 < n ? &scratch[i + 1] : NULL;
		wr->sg_list = w[i].num_sge ? sge : NULL;
		wr->num_sge = w[i].num_sge;
		sge += w[i].num_sge;
		wr->opcode = gd_wr_opcode(w[i].opcode);
		wr->send_flags = gd_send_flags(w[i].flags);
		switch (w[i].opcode) {
		case GD_OP_WRITE:
		case GD_OP_READ:
			wr->wr.rdma.remote_addr = w[i].remote_addr;
			wr->wr.rdma.rkey = w[i].rkey;
			break;
		case GD_OP_SEND_INV:
		case GD_OP_LOCAL_INV:
			wr->invalidate_rkey = w[i].inv_rkey;
			break;
		case GD_OP_BIND_MW:
			wr->bind_mw.mw = w[i].mw;
			wr->bind_mw.rkey = w[i].rkey;
			wr->bind_mw.bind_info.mr = w[i].mr;
			wr->bind_mw.bind_info.addr = w[i].bind_addr;
			wr->bind_mw.bind_info.length = w[i].bind_len;
			wr->bind_mw.bind_info.mw_access_flags = w[i].bind_access;
			break;
		}
	}
	ret = ibv_post_send(sq->qp, scratch, &badwr);
	if (ret == 0)
		return n;
	return ((int64_t)ret << 32) | (uint32_t)(badwr ? badwr - scratch : 0);
}

static void gd_fill_recv(struct gd_rwr *w, struct ibv_sge *sge, int n, struct ibv_recv_wr *scratch)
{
	int i;

	for (i = 0; i < n; i++) {
		struct ibv_recv_wr *wr = &scratch[i];
		wr->wr_id = w[i].id;
		wr->next = i + 1 < n ? &scratch[i + 1] : NULL;
		wr->sg_list = w[i].num_sge ? sge : NULL;
		wr->num_sge = w[i].num_sge;
		sge += w[i].num_sge;
	}
}

int64_t gd_post_recv(uintptr_t rqp, int n)
{
	struct gd_rq *rq = (struct gd_rq *)rqp;
	struct ibv_recv_wr *scratch = rq->scratch;
	struct ibv_recv_wr *badwr = NULL;
	int ret;

	gd_fill_recv(rq->w, rq->sge, n, scratch);
	if (rq->qp)
		ret = ibv_post_recv(rq->qp, scratch, &badwr);
	else
		ret = ibv_post_srq_recv(rq->srq, scratch, &badwr);
	if (ret == 0)
		return n;
	return ((int64_t)ret << 32) | (uint32_t)(badwr ? badwr - scratch : 0);
}

// Completion opcodes as package verbs numbers them.
static uint8_t gd_wc_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND:
		return 0;
	case IBV_WC_RDMA_WRITE:
		return 1;
	case IBV_WC_RDMA_READ:
		return 2;
	case IBV_WC_BIND_MW:
		return 3;
	case IBV_WC_LOCAL_INV:
		return 4;
	default:
		break;
	}
	if (op & IBV_WC_RECV)
		return 5;
	return 0;
}

int gd_poll_cq(uintptr_t cqp, int n, int spins)
{
	struct gd_cq *cq = (struct gd_cq *)cqp;
	struct ibv_wc *raw = cq->raw;
	struct gd_wc *out = cq->out;
	int i, got = ibv_poll_cq(cq->cq, n, raw);

	while (got == 0 && spins-- > 0)
		got = ibv_poll_cq(cq->cq, n, raw);

	for (i = 0; i < got; i++) {
		struct ibv_wc *wc = &raw[i];
		struct gd_wc *o = &out[i];
		o->id = wc->wr_id;
		o->status = (uint8_t)wc->status;
		o->opcode = gd_wc_opcode(wc->opcode);
		o->byte_len = wc->byte_len;
		o->qpn = wc->qp_num;
		o->vendor_err = wc->vendor_err;
		o->flags = 0;
		o->inv_rkey = 0;
		if (wc->status == IBV_WC_SUCCESS && (wc->wc_flags & IBV_WC_WITH_INV)) {
			o->flags = 1;
			o->inv_rkey = wc->invalidated_rkey;
		}
	}
	return got;
}

int gd_req_notify(uintptr_t cqp, int solicited)
{
	return ibv_req_notify_cq(((struct gd_cq *)cqp)->cq, solicited);
}

int gd_take_cq_event(struct ibv_comp_channel *ch)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(ch, &cq, &ctx) == 0) {
		ibv_ack_cq_events(cq, 1);
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return 0;
	return -errno;
}

int gd_query_port_gids(struct ibv_context *ctx, uint8_t port, union ibv_gid *gids, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (ibv_query_gid(ctx, port, i, &gids[i]))
			break;
	}
	return i;
}

int gd_errno(void)
{
	return errno;
}

int gd_modify_qp_state(struct ibv_qp *qp, enum ibv_qp_state s, int port, int access)
{
	struct ibv_qp_attr attr;
	int mask = IBV_QP_STATE;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = s;
	if (s == IBV_QPS_INIT) {
		attr.port_num = port;
		attr.pkey_index = 0;
		attr.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
		if (qp->context->device->transport_type == IBV_TRANSPORT_IB)
			mask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
	}
	return ibv_modify_qp(qp, &attr, mask) ? errno : 0;
}

// gd_cm_modify moves qp to s with the attributes rdma_cm computed for the
// connection of id, as librdmacm does for the QPs it creates itself. A
// transition the connection manager drives in the kernel (iWARP's RTR and
// RTS) comes back with no attributes and is left to it.
int gd_cm_modify(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state s,
		 int resp_res, int init_depth)
{
	struct ibv_qp_attr attr;
	int mask = 0;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = s;
	if (rdma_init_qp_attr(id, &attr, &mask))
		return errno;
	if (mask == 0)
		return 0;
	if (s == IBV_QPS_RTR && resp_res > 0)
		attr.max_dest_rd_atomic = resp_res;
	if (s == IBV_QPS_RTR && (mask & IBV_QP_MIN_RNR_TIMER))
		attr.min_rnr_timer = GD_MIN_RNR_TIMER;
	if (s == IBV_QPS_RTS && init_depth > 0)
		attr.max_rd_atomic = init_depth;
#ifdef GD_ACK_TIMEOUT
	// A build for comparisons may give the QPs another local ACK
	// timeout than the one rdma_cm derives from the path.
	if (s == IBV_QPS_RTS && (mask & IBV_QP_TIMEOUT))
		attr.timeout = GD_ACK_TIMEOUT;
#endif
	return ibv_modify_qp(qp, &attr, mask) ? errno : 0;
}

int gd_query_path(struct ibv_qp *qp, struct gd_qp_path *out)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int mask = IBV_QP_PATH_MTU | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC;

	memset(&attr, 0, sizeof(attr));
	if (ibv_query_qp(qp, &attr, mask, &init))
		return errno;
	out->path_mtu = attr.path_mtu ? 128 << attr.path_mtu : 0;
	out->timeout = attr.timeout;
	out->retry_cnt = attr.retry_cnt;
	out->rnr_retry = attr.rnr_retry;
	out->min_rnr_timer = attr.min_rnr_timer;
	out->max_rd_atomic = attr.max_rd_atomic;
	out->max_dest_rd_atomic = attr.max_dest_rd_atomic;
	return 0;
}

int gd_get_cm_event(struct rdma_event_channel *ch, struct gd_cm_event *out)
{
	struct rdma_cm_event *ev;
	int n;

	if (rdma_get_cm_event(ch, &ev)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	memset(out, 0, sizeof(*out));
	out->id = ev->id;
	out->listen_id = ev->listen_id;
	out->type = ev->event;
	out->status = ev->status;
	// A connect request's id is new: it carries the context of the
	// listener it came through.
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && ev->listen_id)
		out->handle = (uintptr_t)ev->listen_id->context;
	else
		out->handle = (uintptr_t)ev->id->context;
	n = ev->param.conn.private_data_len;
	if (n > (int)sizeof(out->pd))
		n = sizeof(out->pd);
	if (ev->param.conn.private_data && n > 0)
		memcpy(out->pd, ev->param.conn.private_data, n);
	else
		n = 0;
	out->pd_len = n;
	out->resp_res = ev->param.conn.responder_resources;
	out->init_depth = ev->param.conn.initiator_depth;
	out->qpn = ev->param.conn.qp_num;
	rdma_ack_cm_event(ev);
	return 1;
}

void gd_set_handle(struct rdma_cm_id *id, uintptr_t h)
{
	id->context = (void *)h;
}

int gd_get_async_event(struct ibv_context *ctx, struct gd_async_event *out)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(ctx, &ev)) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
	memset(out, 0, sizeof(*out));
	out->type = ev.event_type;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		out->qp = ev.element.qp;
		out->qpn = ev.element.qp->qp_num;
		break;
	case IBV_EVENT_CQ_ERR:
		out->cq = ev.element.cq;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		out->srq = ev.element.srq;
		break;
	default:
		out->port = ev.element.port_num;
		break;
	}
	ibv_ack_async_event(&ev);
	return 1;
}

int gd_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr) ? errno : 0;
}

int gd_probe_inline(struct ibv_context *ctx)
{
	static const int sizes[] = {1024, 512, 256, 128, 64, 32, 0};
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 1, NULL, NULL, 0) : NULL;
	int i, got = 0;

	for (i = 0; cq && sizes[i]; i++) {
		struct ibv_qp_init_attr ia;
		struct ibv_qp *qp;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 1;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = sizes[i];
		qp = ibv_create_qp(pd, &ia);
		if (qp) {
			got = ia.cap.max_inline_data;
			ibv_destroy_qp(qp);
			break;
		}
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return got;
}

int gd_probe_resize(struct ibv_context *ctx)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	int ok;

	if (!cq)
		return 0;
	ok = ibv_resize_cq(cq, 4) == 0;
	ibv_destroy_cq(cq);
	return ok;
}
