/* Thread pool: every thread runs, splits cover [0, n) exactly once. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "base/threads.h"

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

/* pool_claim: pieces are aligned, never overlap and cover [0, n) exactly once,
 * whatever the order in which threads ask; the owner's first piece starts its
 * part; a thread that finishes early takes over what is left of another's. */
Test(threads, claims_cover_once_in_any_order) {
    static pool_queue q;
    int sizes[] = {1, 15, 16, 17, 100, 1000, 4096 + 48};
    for (int si = 0; si < 7; si++) {
        for (int nth = 1; nth <= 4; nth++) {
            for (int pieces = 1; pieces <= 64; pieces *= 4) {
                int n = sizes[si], cover[4200] = {0}, b, e;
                pool_queue_init(&q, n, 16, pieces, nth);
                int first0 = -1, calls = 0;
                /* thread 0 asks three times as often as the others */
                for (int k = 0;; k++) {
                    int ith = k % 4 < 3 ? 0 : (k / 4) % nth, got = pool_claim(&q, ith, &b, &e);
                    if (!got) {
                        int any = 0;
                        for (int i = 0; i < nth; i++) any |= pool_claim(&q, i, &b, &e) ? (e - b) : 0;
                        cr_assert_eq(any, 0, "all taken but a claim succeeded");
                        break;
                    }
                    if (first0 < 0 && ith == 0) first0 = b;
                    cr_assert(b < e && e <= n && b % 16 == 0 && (e % 16 == 0 || e == n), "[%d, %d) n=%d", b, e, n);
                    for (int i = b; i < e; i++) cover[i]++;
                    cr_assert(++calls < 10000);
                }
                for (int i = 0; i < n; i++) cr_assert_eq(cover[i], 1, "n=%d nth=%d pieces=%d i=%d", n, nth, pieces, i);
                cr_expect_eq(first0, 0);
            }
        }
    }
}

typedef struct {
    pool_queue q;
    atomic_int cover[5000];
} claim_probe;

static void claim_task(void *ctx, int ith, int nth) {
    (void)nth;
    claim_probe *p = ctx;
    int b, e;
    while (pool_claim(&p->q, ith, &b, &e)) {
        if (ith == 1) sleep_ms(1); /* a slow thread: the others take over its part */
        for (int i = b; i < e; i++) atomic_fetch_add(&p->cover[i], 1);
    }
}

Test(threads, claims_cover_once_with_threads) {
    static claim_probe p;
    for (int n = 2; n <= 3; n++) {
        thread_pool *tp = pool_new(n);
        cr_assert_not_null(tp);
        for (int rep = 0; rep < 5; rep++) {
            for (int i = 0; i < 5000; i++) atomic_init(&p.cover[i], 0);
            pool_queue_init(&p.q, 5000, 16, 8, n);
            pool_run(tp, claim_task, &p);
            for (int i = 0; i < 5000; i++) cr_assert_eq(atomic_load(&p.cover[i]), 1, "n=%d i=%d", n, i);
        }
        pool_free(tp);
    }
}

/* Each thread's first piece is the start of its own static part, and the
 * first piece is half of it (the owner's stream stays contiguous). */
Test(threads, claims_start_on_own_part) {
    static pool_queue q;
    for (int nth = 1; nth <= 4; nth++) {
        pool_queue_init(&q, 4096, 16, 1000, nth); /* smallest piece: 1 unit */
        for (int ith = 0; ith < nth; ith++) {
            int b, e, p0, p1;
            pool_split(4096, 16, ith, nth, &p0, &p1);
            cr_assert(pool_claim(&q, ith, &b, &e));
            cr_expect_eq(b, p0, "nth=%d ith=%d", nth, ith);
            cr_expect_eq(e - b, ((p1 - p0) / 16 + 1) / 2 * 16, "nth=%d ith=%d", nth, ith); /* half, rounded up to whole units */
        }
    }
}

static void count_task(void *ctx, int ith, int nth) {
    (void)ith, (void)nth;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

/* Jobs spaced below, around and above the time a wait spins before it sleeps, with
 * more threads than this machine has CPUs (so some are preempted mid-wait), and
 * after pool_park: every job runs on every thread, and no wake-up is lost (a lost
 * one hangs this test). */
Test(threads, waits_that_spin_sleep_and_park, .timeout = 60) {
    const long gaps_us[] = {0, 20, 60, 200, 2000};
    for (int n = 2; n <= 8; n *= 2) {
        thread_pool *tp = pool_new(n);
        cr_assert_not_null(tp);
        for (int rep = 0; rep < 300; rep++) {
            atomic_int done = 0;
            if (rep % 7 == 3) pool_park(tp);
            pool_run(tp, count_task, &done);
            cr_assert_eq(atomic_load(&done), n, "n=%d rep %d", n, rep);
            long us = gaps_us[rep % 5];
            struct timespec ts = {0, us * 1000L};
            if (us) nanosleep(&ts, NULL);
        }
        pool_free(tp);
    }
}

typedef struct {
    atomic_int runs[8];      /* times part i ran in this job */
    pthread_t by[8];         /* the thread that ran it */
} part_probe;

static void part_task(void *ctx, int ith, int nth) {
    (void)nth;
    part_probe *p = ctx;
    atomic_fetch_add(&p->runs[ith], 1);
    p->by[ith] = pthread_self();
    for (volatile int i = 0; i < 2000; i++) {
    }
}

/* Parts a worker has not started are run by the caller: with four threads on one CPU
 * the workers sit in the run queue while the caller runs, so some parts are stolen;
 * every part still runs exactly once per job, and a worker that wakes late skips the
 * part it lost (a part run twice, or a lost one, fails here; a claim that ran a
 * later job's part hangs). */
Test(threads, unstarted_parts_are_stolen_once, .timeout = 60) {
    cpu_set_t old, one;
    int pinned = !sched_getaffinity(0, sizeof old, &old);
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    pinned = pinned && !sched_setaffinity(0, sizeof one, &one); /* the workers inherit it */
    thread_pool *tp = pool_new(4);
    cr_assert_not_null(tp);
    int stolen = 0;
    for (int rep = 0; rep < 2000; rep++) {
        part_probe p = {0};
        pool_run(tp, part_task, &p);
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(atomic_load(&p.runs[i]), 1, "rep %d part %d", rep, i);
            stolen += i > 0 && pthread_equal(p.by[i], pthread_self());
        }
        if (rep % 100 == 50) sleep_ms(1); /* workers asleep for the next job */
    }
    pool_free(tp);
    if (pinned) {
        sched_setaffinity(0, sizeof old, &old);
        cr_expect_gt(stolen, 0, "no part was stolen in 2000 jobs on one CPU");
    }
}

/* A pool whose workers keep starting late (all threads on one CPU) goes solo: the
 * caller runs every part itself, each exactly once, and the counts say so. Every
 * pool_run is counted, solo or not. */
Test(threads, late_workers_send_the_pool_solo, .timeout = 60) {
    cpu_set_t old, one;
    int pinned = !sched_getaffinity(0, sizeof old, &old);
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
    pinned = pinned && !sched_setaffinity(0, sizeof one, &one);
    thread_pool *tp = pool_new(4);
    cr_assert_not_null(tp);
    int alone = 0;
    for (int rep = 0; rep < 3000; rep++) {
        part_probe p = {0};
        pool_run(tp, part_task, &p);
        int mine = 0;
        for (int i = 0; i < 4; i++) {
            cr_assert_eq(atomic_load(&p.runs[i]), 1, "rep %d part %d", rep, i);
            mine += pthread_equal(p.by[i], pthread_self());
        }
        alone += mine == 4;
    }
    pool_counts c = pool_get_counts(tp);
    pool_free(tp);
    cr_assert_eq(c.runs, 3000);
    cr_assert_leq(c.solo_runs, (unsigned long long)alone, "a solo run is one the caller ran alone");
    if (pinned) {
        sched_setaffinity(0, sizeof old, &old);
        cr_expect_gt(c.solo_periods, 0, "no solo period in 3000 jobs on one CPU");
        cr_expect_gt(c.solo_runs, 1000, "%llu of 3000 jobs solo on one CPU", c.solo_runs);
    }
}

/* One thread: every job runs on the caller, none counted (there is no one to wait for:
 * no synchronization), none solo. */
Test(threads, one_thread_counts_no_syncs) {
    thread_pool *tp = pool_new(1);
    part_probe p = {0};
    for (int i = 0; i < 5; i++) pool_run(tp, part_task, &p);
    pool_counts c = pool_get_counts(tp);
    pool_free(tp);
    cr_assert_eq(c.runs, 0);
    cr_assert_eq(c.solo_runs, 0);
    cr_assert_eq(atomic_load(&p.runs[0]), 5);
}

/* pool_run_n: parts 0 .. nth - 1 run once each, as parts of nth, and no other; a job
 * on one thread runs on the caller and is no synchronization; jobs on all threads
 * between them still reach every worker (claims of the skipped parts kept in step). */
typedef struct {
    atomic_int runs[8];
    atomic_int bad_nth;
    int want_nth;
} nth_probe;

static void nth_task(void *ctx, int ith, int nth) {
    nth_probe *p = ctx;
    atomic_fetch_add(&p->runs[ith], 1);
    if (nth != p->want_nth) atomic_store(&p->bad_nth, 1);
}

Test(threads, run_on_fewer_threads) {
    thread_pool *tp = pool_new(4);
    unsigned long long syncs = 0;
    for (int rep = 0; rep < 300; rep++) {
        int nth = 1 + rep % 4; /* 1, 2, 3, 4, 1, ... */
        nth_probe p = {.want_nth = nth};
        for (int i = 0; i < 8; i++) atomic_init(&p.runs[i], 0);
        atomic_init(&p.bad_nth, 0);
        pool_run_n(tp, nth_task, &p, nth);
        syncs += nth > 1;
        for (int i = 0; i < 4; i++)
            cr_assert_eq(atomic_load(&p.runs[i]), i < nth, "rep %d: part %d of %d ran %d times", rep, i, nth,
                         atomic_load(&p.runs[i]));
        cr_assert_eq(atomic_load(&p.bad_nth), 0, "rep %d: a part saw another nth than %d", rep, nth);
    }
    cr_expect_eq(pool_get_counts(tp).runs, syncs);
    pool_free(tp);
}
