/* Thread pool: every thread runs, splits cover [0, n) exactly once. */
#include <criterion/criterion.h>
#include <stdatomic.h>

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
