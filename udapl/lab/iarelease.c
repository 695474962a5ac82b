/*
 * iarelease: checks that C threads blocked in dat_evd_wait on an IA of a
 * real device cost no extra OS thread each inside the provider (their
 * waits park on Go's netpoller, not in a blocking call into libibverbs),
 * and that dat_ia_close wakes them and releases the device: no file of
 * /dev/infiniband stays open and no descriptor is leaked, round after
 * round. Usage: iarelease IA [ROUNDS]. Built and run by udapl/lab/rxe.sh.
 * Prints one line per check and exits 1 if any failed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dat2/udat.h>
#include "../udapltest/testdata/datwait.h"

#define WAITERS 16

static int failed;

static void check(int ok, const char *fmt, long a, long b)
{
	printf("%s ", ok ? "ok  " : "FAIL");
	printf(fmt, a, b);
	printf("\n");
	if (!ok)
		failed = 1;
}

/* fds counts this process's open descriptors, and in *dev those open on
 * files under /dev/infiniband (uverbs, rdma_cm). */
static long fds(long *dev)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char target[256];
	long n = 0;
	ssize_t l;

	*dev = 0;
	if (d == NULL) {
		perror("opendir");
		exit(1);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		l = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
		if (l < 0)
			continue;
		target[l] = 0;
		n++;
		if (strncmp(target, "/dev/infiniband/", 16) == 0)
			(*dev)++;
	}
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

static long threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long n = -1;

	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	static char buf[WAITERS][4096];
	struct waiter w[WAITERS];
	pthread_t th[WAITERS];
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async = DAT_HANDLE_NULL, conn;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE ep;
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
	DAT_VLEN rlen;
	DAT_VADDR raddr;
	DAT_REGION_DESCRIPTION region;
	long first = -1, total, dev, t0, t1;
	int rounds = argc > 2 ? atoi(argv[2]) : 5, r, i;

	if (argc < 2 || argc > 3 || rounds < 2) {
		fprintf(stderr, "usage: iarelease IA [ROUNDS >= 2]\n");
		return 2;
	}
	for (r = 1; r <= rounds; r++) {
		must("dat_ia_open", dat_ia_open(argv[1], 8, &async, &ia));
		must("dat_pz_create", dat_pz_create(ia, &pz));
		must("dat_evd_create", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn));
		for (i = 0; i < WAITERS; i++) {
			must("dat_evd_create", dat_evd_create(ia, 8, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &w[i].evd));
			must("dat_ep_create", dat_ep_create(ia, pz, w[i].evd, w[i].evd, conn, NULL, &ep));
			region.for_va = buf[i];
			must("dat_lmr_create", dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, sizeof buf[i], pz,
							      DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr, &lctx, &rctx,
							      &rlen, &raddr));
		}
		total = fds(&dev);
		check(dev > 0, "round %ld: %ld files of /dev/infiniband open with the IA", (long)r, dev);
		t0 = threads();
		for (i = 0; i < WAITERS; i++) {
			if (!start_waiter(&w[i], &th[i])) {
				printf("FAIL waiter %d never waits\n", i);
				exit(1);
			}
		}
		/* Each waiter is a thread of its own; anything beyond those is the
		 * provider's, and one per waiter would be a wait blocked in C. */
		t1 = threads();
		check(t1 - t0 <= WAITERS + WAITERS / 4, "%ld threads more with 16 C threads in dat_evd_wait (at most 20), %ld before",
		      t1 - t0, t0);
		must("dat_ia_close", dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG));
		for (i = 0; i < WAITERS; i++) {
			pthread_join(th[i], NULL);
			if (DAT_GET_TYPE(w[i].r) != DAT_ABORT)
				check(0, "waiter %ld woken by dat_ia_close with 0x%lx, want DAT_ABORT", (long)i, (long)w[i].r);
		}
		total = fds(&dev);
		check(dev == 0, "round %ld: %ld files of /dev/infiniband open after dat_ia_close", (long)r, dev);
		/* The first round opens what the process keeps (the Go runtime's
		 * poller, libdat2's state): count from its end. */
		if (first < 0)
			first = total;
		else
			check(total == first, "round end: %ld descriptors open, %ld after the first round", total, first);
	}
	printf("%s\n", failed ? "FAILED" : "PASSED");
	return failed;
}
