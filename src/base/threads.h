/* threads.h - one persistent pool of worker threads per model.
 *
 * pool_run(fn, ctx) runs fn(ctx, ith, nth) on every thread (the caller is
 * thread 0) and returns when all are done. Work is split by ith
 * (pool_split), or handed out in pieces to whichever thread asks (pool_claim,
 * the matmuls); either way each output element is computed entirely in one
 * thread, the same way whichever thread it is: results do not depend on the
 * thread count or the timing. One pool_run at a time per pool. */
#ifndef LLMGEN_THREADS_H
#define LLMGEN_THREADS_H

#include <stdatomic.h>

#include "llmgen.h" /* LLMGEN_MAX_THREADS */

typedef struct thread_pool thread_pool;
typedef void (*pool_fn)(void *ctx, int ith, int nth);

/* n_threads >= 1 (1 = no worker threads). NULL on failure. */
thread_pool *pool_new(int n_threads);
void pool_free(thread_pool *p);
int pool_size(const thread_pool *p);
void pool_run(thread_pool *p, pool_fn fn, void *ctx);
/* pool_run on the first nth threads only (fn sees nth parts; nth 1 runs fn on the
 * caller, no synchronization): for work too small to pay for more. */
void pool_run_n(thread_pool *p, pool_fn fn, void *ctx, int nth);
/* A hint that no pool_run follows soon (a batch of sequences goes back to its
 * callers to sample): the workers sleep at once instead of spinning first, which
 * would take the cores from the threads that have work. The next pool_run wakes
 * them as usual. */
void pool_park(thread_pool *p);

/* What the pool did since pool_new (read by the thread that calls pool_run). */
typedef struct {
    unsigned long long runs;         /* pool_run calls: the step's synchronizations */
    unsigned long long solo_runs;    /* of those, run by the caller alone (workers late: other work on the cores) */
    unsigned long long solo_periods; /* times the pool went solo */
} pool_counts;
pool_counts pool_get_counts(const thread_pool *p);

/* Inside a job of p: wait until *v >= target (acquire), spinning, then napping so that a
 * peer preempted on this core can get it. For waits on another thread of the same job
 * that has the work in hand (it never waits itself before finishing it). A long wait
 * counts the job late, as a late worker does (threads.c). */
void pool_wait_at_least(thread_pool *p, atomic_int *v, int target);

/* Static split of [0, n) into nth parts aligned to `align`: the part of thread ith. */
void pool_split(int n, int align, int ith, int nth, int *begin, int *end);

/* A split that balances itself: [0, n) is cut as pool_split would cut it,
 * and a thread takes its own part in pieces of half what is left of it (at
 * least 1 / `pieces` of a part, in whole units of `align`; pieces = 1: each
 * part in one piece), then pieces of the others' parts the same way. The owner's rows stay one contiguous stream for most of the work, and
 * the last pieces are small enough to even out the finish. Which thread
 * computes a piece varies from run to run, so this is for work whose every
 * output does not depend on that (the matmuls: each row is computed whole,
 * the same way, whoever computes it). Set up by one thread before pool_run;
 * pool_claim from inside the job. */
#define POOL_MAX_THREADS LLMGEN_MAX_THREADS
typedef struct {
    int n, align, min, nth; /* min: the smallest piece, in units of align */
    _Atomic int taken[POOL_MAX_THREADS]; /* units of part i handed out */
} pool_queue;

void pool_queue_init(pool_queue *q, int n, int align, int pieces, int nth);
/* The next range [*begin, *end) for thread ith; 0 when all is taken. */
int pool_claim(pool_queue *q, int ith, int *begin, int *end);

#endif
