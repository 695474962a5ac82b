/*
 * datwait.h: what the C programs that test the library share: must() for
 * setup calls that have to succeed, and a thread parked in dat_evd_wait
 * (start_waiter). Included by testdata/badinput.c, testdata/dtobench.c
 * and lab/iarelease.c.
 */
#ifndef GODAPL_DATWAIT_H
#define GODAPL_DATWAIT_H

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <dat2/udat.h>

/* must ends the program when a setup call fails. */
static inline void must(const char *what, DAT_RETURN r)
{
	if (r != DAT_SUCCESS) {
		const char *m = "", *s = "";
		dat_strerror(r, &m, &s);
		printf("FAIL setup %s: %s %s\n", what, m, s);
		exit(1);
	}
}

/* A waiter is a thread in dat_evd_wait on evd with no timeout; r and ev
 * are what the wait returned. */
struct waiter {
	DAT_EVD_HANDLE evd;
	DAT_RETURN r;
	DAT_EVENT ev;
};

static inline void *wait_forever(void *arg)
{
	struct waiter *w = arg;
	DAT_COUNT n;

	w->r = dat_evd_wait(w->evd, DAT_TIMEOUT_INFINITE, 1, &w->ev, &n);
	return NULL;
}

/* start_waiter starts a thread in dat_evd_wait on w->evd and returns once
 * it owns the EVD (a dequeue meets its waiter), or 0 if it never does. */
static inline int start_waiter(struct waiter *w, pthread_t *th)
{
	DAT_EVENT ev;
	long i;

	if (pthread_create(th, NULL, wait_forever, w) != 0) {
		printf("FAIL pthread_create\n");
		exit(1);
	}
	for (i = 0; i < 100000000; i++) {
		if (DAT_GET_TYPE(dat_evd_dequeue(w->evd, &ev)) == DAT_INVALID_STATE)
			return 1;
		sched_yield();
	}
	return 0;
}

#endif
