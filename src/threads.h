/* threads.h - one persistent pool of worker threads per model.
 *
 * pool_run(fn, ctx) runs fn(ctx, ith, nth) on every thread (the caller is
 * thread 0) and returns when all are done. Work is split statically by ith,
 * so which thread computes what depends only on nth, and kernels compute
 * each output element entirely in one thread: results do not depend on the
 * thread count. One pool_run at a time per pool. */
#ifndef LLMGEN_THREADS_H
#define LLMGEN_THREADS_H

typedef struct thread_pool thread_pool;
typedef void (*pool_fn)(void *ctx, int ith, int nth);

/* n_threads >= 1 (1 = no worker threads). NULL on failure. */
thread_pool *pool_new(int n_threads);
void pool_free(thread_pool *p);
int pool_size(const thread_pool *p);
void pool_run(thread_pool *p, pool_fn fn, void *ctx);

/* Static split of [0, n) into nth parts aligned to `align`: the part of thread ith. */
void pool_split(int n, int align, int ith, int nth, int *begin, int *end);

#endif
