/*
 * dtobench: times DTO paths of a uDAPL provider through libdat2, for
 * udapltest's benchmarks, which time the same loops through godapl's Go
 * API in the same run.
 *
 *   dtobench IA dequeue N         N dat_evd_dequeue calls on an empty EVD
 *   dtobench IA write N SIZE QUAL N RDMA Writes of SIZE bytes, 8 in flight,
 *                                 between two EPs of the IA connected over
 *                                 a PSP on QUAL, each completion reaped
 *                                 with dat_evd_wait
 *
 * Prints "ns/op X cs/op Y" (Y: the process's context switches, voluntary
 * and not, per operation: its threads' sleeps and wake-ups) and exits 0,
 * or prints the failing call and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <dat2/udat.h>
#include "datwait.h"

#define DEPTH 8

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double switches(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_nvcsw + ru.ru_nivcsw;
}

static void report(double t0, double cs0, long n)
{
	printf("ns/op %.1f cs/op %.3f\n", (now() - t0) / n, (switches() - cs0) / n);
}

/*
 * expect waits for event n on evd for up to timeout microseconds. The
 * DTO loop waits without one, as the Go loop it is compared with does
 * (a wait with a deadline takes other paths in the provider); the
 * harness bounds the whole run.
 */
static void expect(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER n, DAT_TIMEOUT timeout, const char *what)
{
	DAT_EVENT ev;
	DAT_COUNT more;

	must(what, dat_evd_wait(evd, timeout, 1, &ev, &more));
	if (ev.event_number != n) {
		printf("%s: event %#x, want %#x\n", what, ev.event_number, n);
		exit(1);
	}
	if (n == DAT_DTO_COMPLETION_EVENT && ev.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS) {
		printf("%s: DTO status %d\n", what, ev.event_data.dto_completion_event_data.status);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, sevd, cevd;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE sep, cep;
	DAT_PSP_HANDLE psp;
	DAT_LMR_HANDLE slmr, dlmr;
	DAT_LMR_CONTEXT sctx, dctx;
	DAT_RMR_CONTEXT rctx, drctx;
	DAT_VLEN len;
	DAT_VADDR saddr, daddr;
	DAT_REGION_DESCRIPTION region;
	DAT_IA_ATTR attr;
	DAT_EVENT ev;
	DAT_COUNT more;
	DAT_CR_HANDLE cr;
	DAT_LMR_TRIPLET iov;
	DAT_RMR_TRIPLET rmr;
	DAT_DTO_COOKIE cookie;
	long n, i, size;
	double t0, cs0;
	char *src, *dst;

	if (argc < 4) {
		fprintf(stderr, "usage: dtobench IA dequeue N | dtobench IA write N SIZE QUAL\n");
		return 2;
	}
	n = atol(argv[3]);
	must("dat_ia_open", dat_ia_open(argv[1], 8, &async, &ia));
	must("dat_evd_create", dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DEFAULT_FLAG, &sevd));
	if (strcmp(argv[2], "dequeue") == 0) {
		cs0 = switches();
		t0 = now();
		for (i = 0; i < n; i++)
			if (DAT_GET_TYPE(dat_evd_dequeue(sevd, &ev)) != DAT_QUEUE_EMPTY)
				must("dat_evd_dequeue", DAT_INTERNAL_ERROR);
		report(t0, cs0, n);
		return 0;
	}
	if (strcmp(argv[2], "write") != 0 || argc != 6) {
		fprintf(stderr, "unknown mode %s\n", argv[2]);
		return 2;
	}
	size = atol(argv[4]);
	must("dat_evd_create", dat_evd_create(ia, 256, DAT_HANDLE_NULL, DAT_EVD_DEFAULT_FLAG, &cevd));
	must("dat_pz_create", dat_pz_create(ia, &pz));
	must("dat_ep_create", dat_ep_create(ia, pz, sevd, sevd, sevd, NULL, &sep));
	must("dat_ep_create", dat_ep_create(ia, pz, cevd, cevd, cevd, NULL, &cep));
	/* Data are not checked: a Write's completion is local (dapltest -V
	 * checks transfers). */
	src = calloc(1, size);
	dst = calloc(1, size);
	if (src == NULL || dst == NULL) {
		printf("out of memory\n");
		return 1;
	}
	region.for_va = src;
	must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, size, pz, DAT_MEM_PRIV_ALL_FLAG,
					      DAT_VA_TYPE_VA, &slmr, &sctx, &rctx, &len, &saddr));
	region.for_va = dst;
	must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, size, pz, DAT_MEM_PRIV_ALL_FLAG,
					      DAT_VA_TYPE_VA, &dlmr, &dctx, &drctx, &len, &daddr));
	must("dat_psp_create", dat_psp_create(ia, atol(argv[5]), sevd, DAT_PSP_CONSUMER_FLAG, &psp));
	must("dat_ia_query", dat_ia_query(ia, NULL, DAT_IA_ALL, &attr, 0, NULL));
	must("dat_ep_connect", dat_ep_connect(cep, attr.ia_address_ptr, atol(argv[5]), DAT_TIMEOUT_INFINITE, 0, NULL,
					      DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	must("dat_evd_wait", dat_evd_wait(sevd, 10000000, 1, &ev, &more));
	if (ev.event_number != DAT_CONNECTION_REQUEST_EVENT) {
		printf("event %#x, want a connection request\n", ev.event_number);
		return 1;
	}
	cr = ev.event_data.cr_arrival_event_data.cr_handle;
	must("dat_cr_accept", dat_cr_accept(cr, sep, 0, NULL));
	expect(sevd, DAT_CONNECTION_EVENT_ESTABLISHED, 10000000, "server established");
	expect(cevd, DAT_CONNECTION_EVENT_ESTABLISHED, 10000000, "client established");

	iov.virtual_address = saddr;
	iov.segment_length = size;
	iov.lmr_context = sctx;
	rmr.virtual_address = daddr;
	rmr.segment_length = size;
	rmr.rmr_context = drctx;
	cs0 = switches();
	t0 = now();
	for (i = 0; i < n; i++) {
		if (i >= DEPTH)
			expect(cevd, DAT_DTO_COMPLETION_EVENT, DAT_TIMEOUT_INFINITE, "dat_evd_wait");
		cookie.as_64 = i;
		must("dat_ep_post_rdma_write", dat_ep_post_rdma_write(cep, 1, &iov, cookie, &rmr, DAT_COMPLETION_DEFAULT_FLAG));
	}
	for (i = n < DEPTH ? n : DEPTH; i > 0; i--)
		expect(cevd, DAT_DTO_COMPLETION_EVENT, DAT_TIMEOUT_INFINITE, "dat_evd_wait");
	report(t0, cs0, n);
	dat_ep_disconnect(cep, DAT_CLOSE_ABRUPT_FLAG);
	must("dat_ia_close", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
	return 0;
}
