//go:build udapl && cgo

/*
 * Writers of DAT_EVENT: its event_data is a union, which cgo shows Go
 * only as bytes, so the Go half hands the members' values to C.
 */
#include <string.h>
#include "shim.h"

void gd_event_dto(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE ep, uint64_t cookie,
		  uint32_t status, uint32_t len, uint32_t op, uint32_t rmr_ctx)
{
	DAT_DTO_COMPLETION_EVENT_DATA *d = &ev->event_data.dto_completion_event_data;

	ev->event_number = n;
	ev->evd_handle = evd;
	d->ep_handle = ep;
	d->user_cookie.as_64 = cookie;
	d->status = (DAT_DTO_COMPLETION_STATUS)status;
	d->transfered_length = len;
	d->operation = (DAT_DTOS)op;
	d->rmr_context = rmr_ctx;
}

void gd_event_rmr(DAT_EVENT *ev, DAT_HANDLE evd, DAT_HANDLE rmr, uint64_t cookie, uint32_t status)
{
	DAT_RMR_BIND_COMPLETION_EVENT_DATA *d = &ev->event_data.rmr_completion_event_data;

	ev->event_number = DAT_RMR_BIND_COMPLETION_EVENT;
	ev->evd_handle = evd;
	d->rmr_handle = rmr;
	d->user_cookie.as_64 = cookie;
	d->status = (DAT_RMR_BIND_COMPLETION_STATUS)status;
}

void gd_event_cr(DAT_EVENT *ev, DAT_HANDLE evd, DAT_HANDLE sp, struct sockaddr_in *local,
		 uint64_t qual, DAT_HANDLE cr)
{
	DAT_CR_ARRIVAL_EVENT_DATA *d = &ev->event_data.cr_arrival_event_data;

	ev->event_number = DAT_CONNECTION_REQUEST_EVENT;
	ev->evd_handle = evd;
	d->sp_handle.psp_handle = sp;
	d->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)local;
	d->conn_qual = qual;
	d->cr_handle = cr;
	d->truncate_flag = DAT_FALSE;
}

void gd_event_conn(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE ep, DAT_COUNT len, void *pd)
{
	DAT_CONNECTION_EVENT_DATA *d = &ev->event_data.connect_event_data;

	ev->event_number = n;
	ev->evd_handle = evd;
	d->ep_handle = ep;
	d->private_data_size = len;
	d->private_data = pd;
}

void gd_event_async(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE h, DAT_COUNT reason)
{
	DAT_ASYNCH_ERROR_EVENT_DATA *d = &ev->event_data.asynch_error_event_data;

	ev->event_number = n;
	ev->evd_handle = evd;
	d->dat_handle = h;
	d->reason = reason;
}

void gd_event_se(DAT_EVENT *ev, DAT_HANDLE evd, void *p)
{
	ev->event_number = DAT_SOFTWARE_EVENT;
	ev->evd_handle = evd;
	ev->event_data.software_event_data.pointer = p;
}

void *gd_event_se_pointer(const DAT_EVENT *ev)
{
	return ev->event_data.software_event_data.pointer;
}
