/*
 * badinput: calls a uDAPL provider through libdat2 with bad input (NULL,
 * foreign, wrongly typed and freed handles, calls in the wrong EP state,
 * triplets outside their LMR, bad arguments) and checks the DAT return
 * codes; then checks that a thread blocked in dat_evd_wait blocks no other
 * thread, owns the EVD while it sleeps, and is woken by
 * dat_evd_set_unwaitable and by dat_ia_close. Built and run by udapltest's
 * TestBadInput: usage badinput IA.
 * Prints one line per case and exits 1 if any case failed.
 */
#include <pthread.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dat2/udat.h>
#include "datwait.h"

static int failed;

/* check compares r with the wanted major code and, unless sub is -1, subtype. */
static void check(const char *what, DAT_RETURN r, DAT_RETURN major, int sub)
{
	const char *m = "", *s = "";
	int ok = DAT_GET_TYPE(r) == major && (sub < 0 || (int)DAT_GET_SUBTYPE(r) == sub);

	dat_strerror(r, &m, &s);
	printf("%s %s: %s %s\n", ok ? "ok  " : "FAIL", what, m, s);
	if (!ok)
		failed = 1;
}

int main(int argc, char **argv)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, evd, evd2, freed_evd;
	DAT_PZ_HANDLE pz, pz2;
	DAT_EP_HANDLE ep, freed_ep;
	DAT_LMR_HANDLE lmr, freed_lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rlen;
	DAT_VADDR raddr;
	DAT_REGION_DESCRIPTION region;
	DAT_LMR_TRIPLET iov;
	DAT_DTO_COOKIE cookie = {.as_64 = 7};
	DAT_EVENT ev;
	DAT_COUNT n;
	DAT_CONTEXT ctx;
	DAT_HANDLE_TYPE type;
	DAT_EP_PARAM ep_param;
	struct { void *provider; uint64_t index; } foreign;
	static char buf[4096], buf2[64];

	if (argc != 2) {
		fprintf(stderr, "usage: badinput IA\n");
		return 2;
	}
	must("dat_ia_open", dat_ia_open(argv[1], 8, &async, &ia));
	must("dat_pz_create", dat_pz_create(ia, &pz));
	must("dat_evd_create", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG | DAT_EVD_CONNECTION_FLAG | DAT_EVD_SOFTWARE_FLAG, &evd));
	must("dat_evd_create", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &evd2));
	must("dat_ep_create", dat_ep_create(ia, pz, evd, evd, evd, NULL, &ep));
	region.for_va = buf;
	must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf, pz, DAT_MEM_PRIV_ALL_FLAG,
					      DAT_VA_TYPE_VA, &lmr, &lctx, &rctx, &rlen, &raddr));
	check("registered in place", raddr == (DAT_VADDR)(uintptr_t)buf && rlen == sizeof buf ? DAT_SUCCESS : DAT_INTERNAL_ERROR,
	      DAT_SUCCESS, -1);

	/* NULL handles: libdat2 refuses them before the provider. */
	iov.virtual_address = (DAT_VADDR)(uintptr_t)buf;
	iov.segment_length = 64;
	iov.lmr_context = lctx;
	check("NULL EP", dat_ep_post_send(DAT_HANDLE_NULL, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);

	/* A foreign handle: the provider word is right, the rest is not ours. */
	foreign.provider = *(void **)ep;
	foreign.index = 12345;
	check("foreign EP", dat_ep_post_send((DAT_EP_HANDLE)&foreign, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	check("foreign handle type", dat_get_handle_type((DAT_HANDLE)&foreign, &type), DAT_INVALID_HANDLE, -1);
	check("foreign EVD wait", dat_evd_wait((DAT_EVD_HANDLE)&foreign, 1000, 1, &ev, &n), DAT_INVALID_HANDLE, -1);

	/* Handles of the wrong type. */
	check("EVD as EP", dat_ep_post_send((DAT_EP_HANDLE)evd, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	check("EP as EVD", dat_evd_dequeue((DAT_EVD_HANDLE)ep, &ev), DAT_INVALID_HANDLE, -1);
	check("LMR as PZ", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf, (DAT_PZ_HANDLE)lmr,
					  DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &freed_lmr, &lctx, &rctx, &rlen, &raddr),
	      DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	check("PZ as LMR", dat_lmr_free((DAT_LMR_HANDLE)pz), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
	check("handle type of EP", dat_get_handle_type(ep, &type) == DAT_SUCCESS && type == DAT_HANDLE_TYPE_EP ?
	      DAT_SUCCESS : DAT_INTERNAL_ERROR, DAT_SUCCESS, -1);

	/* Freed handles. */
	must("dat_evd_create", dat_evd_create(ia, 4, DAT_HANDLE_NULL, DAT_EVD_SOFTWARE_FLAG, &freed_evd));
	must("dat_evd_free", dat_evd_free(freed_evd));
	check("freed EVD dequeue", dat_evd_dequeue(freed_evd, &ev), DAT_INVALID_HANDLE, -1);
	check("freed EVD free", dat_evd_free(freed_evd), DAT_INVALID_HANDLE, -1);
	must("dat_ep_create", dat_ep_create(ia, pz, evd, evd, evd, NULL, &freed_ep));
	must("dat_ep_free", dat_ep_free(freed_ep));
	check("freed EP query", dat_ep_query(freed_ep, DAT_EP_FIELD_ALL, &ep_param), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	region.for_va = buf2;
	must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf2, pz, DAT_MEM_PRIV_ALL_FLAG,
					      DAT_VA_TYPE_VA, &freed_lmr, &lctx, &rctx, &rlen, &raddr));
	must("dat_lmr_free", dat_lmr_free(freed_lmr));
	check("freed LMR free", dat_lmr_free(freed_lmr), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
	must("dat_pz_create", dat_pz_create(ia, &pz2));
	must("dat_pz_free", dat_pz_free(pz2));
	check("freed PZ free", dat_pz_free(pz2), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	check("freed handle context", dat_get_consumer_context(pz2, &ctx), DAT_INVALID_HANDLE, -1);

	/* Calls in the wrong EP state. */
	iov.lmr_context = 0;
	must("dat_lmr_query", DAT_SUCCESS);
	region.for_va = buf;
	{
		DAT_LMR_PARAM lp;
		must("dat_lmr_query", dat_lmr_query(lmr, DAT_LMR_FIELD_ALL, &lp));
		iov.lmr_context = lp.lmr_context;
	}
	check("send on an unconnected EP", dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	{
		DAT_RMR_TRIPLET r = {.virtual_address = 4096, .segment_length = 64, .rmr_context = 1};
		check("RDMA Write on an unconnected EP", dat_ep_post_rdma_write(ep, 1, &iov, cookie, &r, DAT_COMPLETION_DEFAULT_FLAG),
		      DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	}
	check("disconnect an unconnected EP", dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG), DAT_INVALID_STATE, -1);

	/* Triplets outside their LMR, and bad arguments. */
	iov.virtual_address = (DAT_VADDR)(uintptr_t)buf + sizeof buf - 16;
	check("triplet past the LMR's end", dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	iov.virtual_address = (DAT_VADDR)(uintptr_t)buf;
	iov.lmr_context ^= 0x5a5a5a;
	check("triplet with a foreign lmr_context", dat_ep_post_recv(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_PRIVILEGES_VIOLATION, DAT_PRIVILEGES_WRITE);
	iov.lmr_context ^= 0x5a5a5a;
	{
		DAT_PZ_HANDLE pz3;
		DAT_LMR_HANDLE lmr3;
		DAT_LMR_TRIPLET t3;

		must("dat_pz_create", dat_pz_create(ia, &pz3));
		region.for_va = buf2;
		must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf2, pz3, DAT_MEM_PRIV_ALL_FLAG,
						      DAT_VA_TYPE_VA, &lmr3, &t3.lmr_context, &rctx, &rlen, &raddr));
		t3.virtual_address = raddr;
		t3.segment_length = 16;
		check("triplet of another PZ's LMR", dat_ep_post_recv(ep, 1, &t3, cookie, DAT_COMPLETION_DEFAULT_FLAG),
		      DAT_PROTECTION_VIOLATION, DAT_PROTECTION_WRITE);
		check("freeing a PZ that holds an LMR", dat_pz_free(pz3), DAT_INVALID_STATE, -1);
		must("dat_lmr_free", dat_lmr_free(lmr3));
		must("dat_pz_free", dat_pz_free(pz3));
		region.for_va = buf;
	}
	check("negative segment count", dat_ep_post_recv(ep, -1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG),
	      DAT_INVALID_PARAMETER, -1);
	check("NULL iov", dat_ep_post_recv(ep, 2, NULL, cookie, DAT_COMPLETION_DEFAULT_FLAG), DAT_INVALID_PARAMETER, -1);
	check("connect to no address", dat_ep_connect(ep, NULL, 1, DAT_TIMEOUT_INFINITE, 0, NULL, DAT_QOS_BEST_EFFORT,
						     DAT_CONNECT_DEFAULT_FLAG), DAT_INVALID_ADDRESS, -1);
	check("zero-length LMR", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, 0, pz, DAT_MEM_PRIV_ALL_FLAG,
						DAT_VA_TYPE_VA, &freed_lmr, &lctx, &rctx, &rlen, &raddr), DAT_LENGTH_ERROR, -1);
	check("NULL EVD out", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, NULL), DAT_INVALID_PARAMETER, -1);
	check("IA query into NULL", dat_ia_query(ia, NULL, DAT_IA_ALL, NULL, 0, NULL), DAT_INVALID_PARAMETER, -1);
	check("context into NULL", dat_get_consumer_context(ep, NULL), DAT_INVALID_PARAMETER, -1);
	check("wait threshold above qlen", dat_evd_wait(evd2, 1000, 100, &ev, &n), DAT_INVALID_PARAMETER, -1);
	check("dequeue from an empty EVD", dat_evd_dequeue(evd2, &ev), DAT_QUEUE_EMPTY, -1);
	check("wait on an empty EVD", dat_evd_wait(evd2, 1000, 1, &ev, &n), DAT_TIMEOUT_EXPIRED, -1);
	check("post_se of a DTO event", (ev.event_number = DAT_DTO_COMPLETION_EVENT, dat_evd_post_se(evd2, &ev)),
	      DAT_INVALID_PARAMETER, -1);

	/* A thread blocked in dat_evd_wait blocks no other thread. */
	{
		struct waiter w = {.evd = evd2};
		pthread_t th;
		DAT_EVENT se;

		check("a waiter owns the EVD", start_waiter(&w, &th) ? DAT_SUCCESS : DAT_INTERNAL_ERROR, DAT_SUCCESS, -1);
		check("dequeue under a waiter", dat_evd_dequeue(evd2, &ev), DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_WAITER);
		check("a second waiter", dat_evd_wait(evd2, 1000, 1, &ev, &n), DAT_INVALID_STATE,
		      DAT_INVALID_STATE_EVD_WAITER);
		check("free under a waiter", dat_evd_free(evd2), DAT_INVALID_STATE, -1);
		memset(&se, 0, sizeof se);
		se.event_number = DAT_SOFTWARE_EVENT;
		se.event_data.software_event_data.pointer = buf;
		must("dat_evd_post_se", dat_evd_post_se(evd, &se));
		check("dequeue while another thread waits", dat_evd_dequeue(evd, &ev), DAT_SUCCESS, -1);
		check("software event pointer", ev.event_data.software_event_data.pointer == buf &&
		      ev.evd_handle == evd ? DAT_SUCCESS : DAT_INTERNAL_ERROR, DAT_SUCCESS, -1);
		must("dat_evd_post_se", dat_evd_post_se(evd2, &se));
		pthread_join(th, NULL);
		check("the waiter wakes with the event", w.r == DAT_SUCCESS && w.ev.event_number == DAT_SOFTWARE_EVENT ?
		      DAT_SUCCESS : DAT_INTERNAL_ERROR, DAT_SUCCESS, -1);
	}

	/* dat_evd_set_unwaitable wakes a waiter, which returns DAT_INVALID_STATE. */
	{
		struct waiter w = {.evd = evd2};
		pthread_t th;

		check("a waiter owns the EVD again", start_waiter(&w, &th) ? DAT_SUCCESS : DAT_INTERNAL_ERROR,
		      DAT_SUCCESS, -1);
		must("dat_evd_set_unwaitable", dat_evd_set_unwaitable(evd2));
		pthread_join(th, NULL);
		check("unwaitable wakes the waiter", w.r, DAT_INVALID_STATE, DAT_INVALID_STATE_EVD_UNWAITABLE);
		must("dat_evd_clear_unwaitable", dat_evd_clear_unwaitable(evd2));
	}

	/* Closing the IA wakes a waiter, which returns DAT_ABORT. */
	struct waiter closing = {.evd = evd2};
	pthread_t closing_th;

	check("a waiter owns the EVD at close", start_waiter(&closing, &closing_th) ? DAT_SUCCESS : DAT_INTERNAL_ERROR,
	      DAT_SUCCESS, -1);

	/* Handles of a closed IA. */
	must("dat_ia_close", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	pthread_join(closing_th, NULL);
	check("closing the IA aborts the waiter", closing.r, DAT_ABORT, -1);
	check("EVD of a closed IA", dat_evd_dequeue(evd, &ev), DAT_INVALID_HANDLE, -1);
	check("EP of a closed IA", dat_ep_free(ep), DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);

	printf("%s\n", failed ? "FAILED" : "PASSED");
	return failed;
}
