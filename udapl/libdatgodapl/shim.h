/*
 * Declarations shared by the C half of the provider (the DAT_PROVIDER
 * table, the wrappers for the entries whose arguments cgo cannot take by
 * value, the event writers) and the Go half, which includes this file in
 * its cgo preamble.
 */
#ifndef GODAPL_SHIM_H
#define GODAPL_SHIM_H

#define DAT_EXTENSIONS 1
#include <stdint.h>
#include <netinet/in.h>
#include <dat2/udat.h>
#include <dat2/dat_registry.h>

/*
 * A handle given to C is the address of one 16-byte slot in a region the
 * Go half maps once: its first word is the DAT_PROVIDER of the handle's
 * IA, as libdat2 requires of every handle, the second the slot's index.
 * The object itself stays on the Go side, found by that index.
 */
struct gd_slot {
	DAT_PROVIDER *provider;
	uint64_t index;
};

/*
 * The C memory an object lends to the consumer through pointers in its
 * query results and events: addresses, private data. It lives as long as
 * the object.
 */
#define GD_PRIVATE_DATA_MAX 256
struct gd_box {
	struct sockaddr_in local;
	struct sockaddr_in remote;
	DAT_COUNT pd_len;
	unsigned char pd[GD_PRIVATE_DATA_MAX];
};

DAT_PROVIDER *gd_new_provider(const char *ia_name);
DAT_RETURN gd_register(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info);
DAT_RETURN gd_unregister(DAT_PROVIDER *p, const DAT_PROVIDER_INFO *info);
void gd_fill_provider_specific(DAT_PROVIDER_ATTR *p);

void gd_event_dto(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE ep, uint64_t cookie,
		  uint32_t status, uint32_t len, uint32_t op, uint32_t rmr_ctx);
void gd_event_rmr(DAT_EVENT *ev, DAT_HANDLE evd, DAT_HANDLE rmr, uint64_t cookie, uint32_t status);
void gd_event_cr(DAT_EVENT *ev, DAT_HANDLE evd, DAT_HANDLE sp, struct sockaddr_in *local,
		 uint64_t qual, DAT_HANDLE cr);
void gd_event_conn(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE ep, DAT_COUNT len, void *pd);
void gd_event_async(DAT_EVENT *ev, DAT_EVENT_NUMBER n, DAT_HANDLE evd, DAT_HANDLE h, DAT_COUNT reason);
void gd_event_se(DAT_EVENT *ev, DAT_HANDLE evd, void *p);
void *gd_event_se_pointer(const DAT_EVENT *ev);

#endif
