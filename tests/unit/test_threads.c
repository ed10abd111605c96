/* Thread pool: every thread runs, splits cover [0, n) exactly once. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <time.h>

#include "threads.h"

typedef struct {
    atomic_int hits[8];
    int cover[1000];
} pool_probe;

static void probe_task(void *ctx, int ith, int nth) {
    pool_probe *p = ctx;
    atomic_fetch_add(&p->hits[ith], 1);
    int b, e;
    pool_split(1000, 16, ith, nth, &b, &e);
    for (int i = b; i < e; i++) p->cover[i] += 1;
}

Test(threads, every_thread_runs_and_split_covers) {
    for (int n = 1; n <= 4; n++) {
        thread_pool *tp = pool_new(n);
        cr_assert_not_null(tp);
        for (int rep = 0; rep < 50; rep++) {
            pool_probe p = {0};
            pool_run(tp, probe_task, &p);
            for (int i = 0; i < n; i++) cr_expect_eq(atomic_load(&p.hits[i]), 1);
            for (int i = 0; i < 1000; i++) cr_expect_eq(p.cover[i], 1, "n=%d i=%d", n, i);
        }
        pool_free(tp);
    }
}

Test(threads, split_is_aligned) {
    int b, e;
    pool_split(100, 16, 0, 2, &b, &e);
    cr_expect_eq(b, 0);
    cr_expect_eq(e % 16, 0);
    pool_split(100, 16, 1, 2, &b, &e);
    cr_expect_eq(e, 100);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Workers that waited long enough to sleep on the condition variable, and a
 * caller that sleeps while a slow worker finishes: no wake-up may be lost (a
 * lost one hangs this test). */
static void slow_worker_task(void *ctx, int ith, int nth) {
    (void)nth;
    atomic_int *done = ctx;
    if (ith == 1) sleep_ms(60);
    atomic_fetch_add(done, 1);
}

Test(threads, sleeping_workers_and_caller_are_woken, .timeout = 30) {
    thread_pool *tp = pool_new(3);
    cr_assert_not_null(tp);
    for (int rep = 0; rep < 6; rep++) {
        atomic_int done = 0;
        pool_run(tp, slow_worker_task, &done);
        cr_expect_eq(atomic_load(&done), 3, "rep %d", rep);
        if (rep % 2) sleep_ms(100); /* long enough for the workers to go to sleep */
    }
    pool_free(tp);
}
