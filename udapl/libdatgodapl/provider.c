//go:build udapl && cgo

/*
 * The DAT_PROVIDER table libdat2 dispatches through. Most entries are the
 * Go exports themselves; the few whose arguments are unions or structs
 * passed by value (cookies, contexts, region descriptions, proxy agents)
 * go through a wrapper here that hands Go plain integers and pointers.
 */
#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "_cgo_export.h"

typedef void (*gd_fn)(void);

static DAT_RETURN DAT_API w_set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c)
{
	return gd_set_consumer_context(h, c.as_64);
}

static DAT_RETURN DAT_API w_get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c)
{
	return gd_get_consumer_context(h, (uint64_t *)c);
}

static DAT_RETURN DAT_API w_cno_create(DAT_IA_HANDLE ia, DAT_OS_WAIT_PROXY_AGENT a, DAT_CNO_HANDLE *cno)
{
	return gd_cno_create(ia, a.instance_data, (void *)a.proxy_agent_func, cno);
}

static DAT_RETURN DAT_API w_cno_modify_agent(DAT_CNO_HANDLE cno, DAT_OS_WAIT_PROXY_AGENT a)
{
	return gd_cno_modify_agent(cno, a.instance_data, (void *)a.proxy_agent_func);
}

static DAT_RETURN DAT_API w_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return gd_ep_post_send(ep, n, iov, c.as_64, f);
}

static DAT_RETURN DAT_API w_ep_post_send_inv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					     DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f, DAT_BOOLEAN inv,
					     DAT_RMR_CONTEXT ctx)
{
	return gd_ep_post_send_inv(ep, n, iov, c.as_64, f, inv, ctx);
}

static DAT_RETURN DAT_API w_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return gd_ep_post_recv(ep, n, iov, c.as_64, f);
}

static DAT_RETURN DAT_API w_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					      DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r, DAT_COMPLETION_FLAGS f)
{
	return gd_ep_post_rdma(ep, 0, n, iov, c.as_64, (DAT_RMR_TRIPLET *)r, f);
}

static DAT_RETURN DAT_API w_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					       DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r, DAT_COMPLETION_FLAGS f)
{
	return gd_ep_post_rdma(ep, 1, n, iov, c.as_64, (DAT_RMR_TRIPLET *)r, f);
}

static DAT_RETURN DAT_API w_ep_post_rdma_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *l,
						     DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r,
						     DAT_COMPLETION_FLAGS f)
{
	return gd_ep_post_rdma_read_to_rmr(ep, (DAT_RMR_TRIPLET *)l, c.as_64, (DAT_RMR_TRIPLET *)r, f);
}

static DAT_RETURN DAT_API w_srq_post_recv(DAT_SRQ_HANDLE srq, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					  DAT_DTO_COOKIE c)
{
	return gd_srq_post_recv(srq, n, iov, c.as_64);
}

static DAT_RETURN DAT_API w_rmr_bind(DAT_RMR_HANDLE rmr, DAT_LMR_HANDLE lmr, const DAT_LMR_TRIPLET *t,
				     DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va, DAT_EP_HANDLE ep,
				     DAT_RMR_COOKIE c, DAT_COMPLETION_FLAGS f, DAT_RMR_CONTEXT *ctx)
{
	return gd_rmr_bind(rmr, lmr, (DAT_LMR_TRIPLET *)t, priv, va, ep, c.as_64, f, ctx);
}

static DAT_RETURN DAT_API w_lmr_create(DAT_IA_HANDLE ia, DAT_MEM_TYPE mt, DAT_REGION_DESCRIPTION r,
				       DAT_VLEN len, DAT_PZ_HANDLE pz, DAT_MEM_PRIV_FLAGS priv,
				       DAT_VA_TYPE va, DAT_LMR_HANDLE *lmr, DAT_LMR_CONTEXT *lctx,
				       DAT_RMR_CONTEXT *rctx, DAT_VLEN *rlen, DAT_VADDR *raddr)
{
	void *p = mt == DAT_MEM_TYPE_LMR ? r.for_lmr_handle : r.for_va;
	return gd_lmr_create(ia, mt, p, len, pz, priv, va, lmr, lctx, rctx, rlen, raddr);
}

static DAT_RETURN DAT_API w_not_implemented(void)
{
	return DAT_CLASS_ERROR | DAT_NOT_IMPLEMENTED;
}

/* gd_new_provider builds the table for one IA name: libdat2 names the IA
 * of a handle by its provider's device_name, so each name has its own. */
DAT_PROVIDER *gd_new_provider(const char *ia_name)
{
	DAT_PROVIDER *p = calloc(1, sizeof *p);
	if (p == NULL)
		return NULL;
	p->device_name = strdup(ia_name);
	if (p->device_name == NULL) {
		free(p);
		return NULL;
	}
	p->ia_open_func = (DAT_IA_OPEN_FUNC)gd_ia_open;
	p->ia_query_func = (DAT_IA_QUERY_FUNC)gd_ia_query;
	p->ia_close_func = (DAT_IA_CLOSE_FUNC)gd_ia_close;
	p->set_consumer_context_func = w_set_consumer_context;
	p->get_consumer_context_func = w_get_consumer_context;
	p->get_handle_type_func = (DAT_GET_HANDLE_TYPE_FUNC)gd_get_handle_type;
	p->cno_create_func = w_cno_create;
	p->cno_modify_agent_func = w_cno_modify_agent;
	p->cno_query_func = (DAT_CNO_QUERY_FUNC)gd_cno_query;
	p->cno_free_func = (DAT_CNO_FREE_FUNC)gd_cno_free;
	p->cno_wait_func = (DAT_CNO_WAIT_FUNC)gd_cno_wait;
	p->cr_query_func = (DAT_CR_QUERY_FUNC)gd_cr_query;
	p->cr_accept_func = (DAT_CR_ACCEPT_FUNC)gd_cr_accept;
	p->cr_reject_func = (DAT_CR_REJECT_FUNC)gd_cr_reject;
	p->cr_handoff_func = (DAT_CR_HANDOFF_FUNC)gd_cr_handoff;
	p->evd_create_func = (DAT_EVD_CREATE_FUNC)gd_evd_create;
	p->evd_query_func = (DAT_EVD_QUERY_FUNC)gd_evd_query;
	p->evd_modify_cno_func = (DAT_EVD_MODIFY_CNO_FUNC)gd_evd_modify_cno;
	p->evd_enable_func = (DAT_EVD_ENABLE_FUNC)gd_evd_enable;
	p->evd_disable_func = (DAT_EVD_DISABLE_FUNC)gd_evd_disable;
	p->evd_wait_func = (DAT_EVD_WAIT_FUNC)gd_evd_wait;
	p->evd_resize_func = (DAT_EVD_RESIZE_FUNC)gd_evd_resize;
	p->evd_post_se_func = (DAT_EVD_POST_SE_FUNC)gd_evd_post_se;
	p->evd_dequeue_func = (DAT_EVD_DEQUEUE_FUNC)gd_evd_dequeue;
	p->evd_free_func = (DAT_EVD_FREE_FUNC)gd_evd_free;
	p->ep_create_func = (DAT_EP_CREATE_FUNC)gd_ep_create;
	p->ep_query_func = (DAT_EP_QUERY_FUNC)gd_ep_query;
	p->ep_modify_func = (DAT_EP_MODIFY_FUNC)gd_ep_modify;
	p->ep_connect_func = (DAT_EP_CONNECT_FUNC)gd_ep_connect;
	p->ep_dup_connect_func = (DAT_EP_DUP_CONNECT_FUNC)gd_ep_dup_connect;
	p->ep_disconnect_func = (DAT_EP_DISCONNECT_FUNC)gd_ep_disconnect;
	p->ep_post_send_func = w_ep_post_send;
	p->ep_post_recv_func = w_ep_post_recv;
	p->ep_post_rdma_read_func = w_ep_post_rdma_read;
	p->ep_post_rdma_write_func = w_ep_post_rdma_write;
	p->ep_get_status_func = (DAT_EP_GET_STATUS_FUNC)gd_ep_get_status;
	p->ep_free_func = (DAT_EP_FREE_FUNC)gd_ep_free;
	p->lmr_create_func = w_lmr_create;
	p->lmr_query_func = (DAT_LMR_QUERY_FUNC)gd_lmr_query;
	p->lmr_free_func = (DAT_LMR_FREE_FUNC)gd_lmr_free;
	p->rmr_create_func = (DAT_RMR_CREATE_FUNC)gd_rmr_create;
	p->rmr_query_func = (DAT_RMR_QUERY_FUNC)gd_rmr_query;
	p->rmr_bind_func = w_rmr_bind;
	p->rmr_free_func = (DAT_RMR_FREE_FUNC)gd_rmr_free;
	p->psp_create_func = (DAT_PSP_CREATE_FUNC)gd_psp_create;
	p->psp_query_func = (DAT_PSP_QUERY_FUNC)gd_psp_query;
	p->psp_free_func = (DAT_PSP_FREE_FUNC)gd_psp_free;
	p->rsp_create_func = (DAT_RSP_CREATE_FUNC)gd_rsp_create;
	p->rsp_query_func = (DAT_RSP_QUERY_FUNC)gd_rsp_query;
	p->rsp_free_func = (DAT_RSP_FREE_FUNC)gd_rsp_free;
	p->pz_create_func = (DAT_PZ_CREATE_FUNC)gd_pz_create;
	p->pz_query_func = (DAT_PZ_QUERY_FUNC)gd_pz_query;
	p->pz_free_func = (DAT_PZ_FREE_FUNC)gd_pz_free;
	p->psp_create_any_func = (DAT_PSP_CREATE_ANY_FUNC)gd_psp_create_any;
	p->ep_reset_func = (DAT_EP_RESET_FUNC)gd_ep_reset;
	p->evd_set_unwaitable_func = (DAT_EVD_SET_UNWAITABLE_FUNC)gd_evd_set_unwaitable;
	p->evd_clear_unwaitable_func = (DAT_EVD_CLEAR_UNWAITABLE_FUNC)gd_evd_clear_unwaitable;
	p->lmr_sync_rdma_read_func = (DAT_LMR_SYNC_RDMA_READ_FUNC)gd_lmr_sync_rdma_read;
	p->lmr_sync_rdma_write_func = (DAT_LMR_SYNC_RDMA_WRITE_FUNC)gd_lmr_sync_rdma_write;
	p->ep_create_with_srq_func = (DAT_EP_CREATE_WITH_SRQ_FUNC)gd_ep_create_with_srq;
	p->ep_recv_query_func = (DAT_EP_RECV_QUERY_FUNC)gd_ep_recv_query;
	p->ep_set_watermark_func = (DAT_EP_SET_WATERMARK_FUNC)gd_ep_set_watermark;
	p->srq_create_func = (DAT_SRQ_CREATE_FUNC)gd_srq_create;
	p->srq_free_func = (DAT_SRQ_FREE_FUNC)gd_srq_free;
	p->srq_post_recv_func = w_srq_post_recv;
	p->srq_query_func = (DAT_SRQ_QUERY_FUNC)gd_srq_query;
	p->srq_resize_func = (DAT_SRQ_RESIZE_FUNC)gd_srq_resize;
	p->srq_set_lw_func = (DAT_SRQ_SET_LW_FUNC)gd_srq_set_lw;
	p->csp_create_func = (DAT_CSP_CREATE_FUNC)gd_csp_create;
	p->csp_query_func = (DAT_CSP_QUERY_FUNC)gd_csp_query;
	p->csp_free_func = (DAT_CSP_FREE_FUNC)gd_csp_free;
	p->ep_common_connect_func = (DAT_EP_COMMON_CONNECT_FUNC)gd_ep_common_connect;
	p->rmr_create_for_ep_func = (DAT_RMR_CREATE_FOR_EP_FUNC)gd_rmr_create;
	p->ep_post_send_with_invalidate_func = w_ep_post_send_inv;
	p->ep_post_rdma_read_to_rmr_func = w_ep_post_rdma_read_to_rmr;
	/* A CNO is waited on in Go; no file descriptor becomes readable. */
	p->cno_fd_create_func = (DAT_CNO_FD_CREATE_FUNC)(gd_fn)w_not_implemented;
	p->cno_trigger_func = (DAT_CNO_TRIGGER_FUNC)gd_cno_trigger;
	p->ia_ha_related_func = (DAT_IA_HA_RELATED_FUNC)gd_ia_ha_related;
	/* godapl offers no IB or iWARP extension operations (extension_supported
	 * is DAT_EXTENSION_NONE). */
	p->handle_extendedop_func = (DAT_HANDLE_EXTENDEDOP_FUNC)(gd_fn)w_not_implemented;
	return p;
}

/*
 * libdat2 looks an IA up by name, version and thread safety, and consumers
 * ask for either (dtest and dapltest ask for a non-thread-safe one). Every
 * godapl IA is thread safe, so it is registered under both.
 */
DAT_RETURN gd_register(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	DAT_PROVIDER_INFO other = *info;
	DAT_RETURN r = dat_registry_add_provider(p, info);

	if (r != DAT_SUCCESS)
		return r;
	other.is_thread_safe = info->is_thread_safe ? DAT_FALSE : DAT_TRUE;
	(void)dat_registry_add_provider(p, &other);
	return DAT_SUCCESS;
}

DAT_RETURN gd_unregister(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info)
{
	DAT_PROVIDER_INFO other = *info;

	other.is_thread_safe = info->is_thread_safe ? DAT_FALSE : DAT_TRUE;
	(void)dat_registry_remove_provider(p, &other);
	return dat_registry_remove_provider(p, info);
}

/* The registry's entry points: libdat2 finds them with dlsym. */
void DAT_API dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data)
{
	gd_provider_init((DAT_PROVIDER_INFO *)info, (char *)instance_data);
}

void DAT_API dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	gd_provider_fini((DAT_PROVIDER_INFO *)info);
}

/*
 * Provider-specific attributes that dat_ia_query reports. Programs written
 * for the reference provider look them up by name: dtest runs its RDMA
 * Read phase only where DAT_IB_RDMA_READ is "TRUE", so a provider that
 * leaves it out makes dtest skip the phase on its side while a peer on
 * the reference provider runs it and waits for a message that never comes.
 */
static DAT_NAMED_ATTR gd_provider_specific[] = {
	{ "DAT_IB_RDMA_READ", "TRUE" },
};

void gd_fill_provider_specific(DAT_PROVIDER_ATTR *p)
{
	p->num_provider_specific_attr = sizeof(gd_provider_specific) / sizeof(gd_provider_specific[0]);
	p->provider_specific_attr = gd_provider_specific;
}
