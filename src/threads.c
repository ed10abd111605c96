/* threads.c - persistent worker pool. Both sides spin briefly (a forward pass
 * issues hundreds of short jobs per token, and a futex wake costs microseconds),
 * then sleep on a condition variable: on an oversubscribed machine a thread
 * that spins while the one it waits for is descheduled wastes whole time
 * slices (2 threads run 7x slower than 1 under a load of 5 when the caller's
 * wait never sleeps). */
#include "threads.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>

/* Waits spin SPIN_PAUSE rounds of `pause`, then SPIN_YIELD rounds of sched_yield
 * (cheap when the core is otherwise idle; hands the core over when the thread we
 * wait for is runnable but descheduled), then sleep. */
#define SPIN_PAUSE 200
#define SPIN_ITERS 20000

struct thread_pool {
    int n;                      /* threads including the caller */
    pthread_t *tids;            /* (n - 1) workers */
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* workers wait here for a new generation */
    pthread_cond_t done_cv;     /* the caller waits here for pending == 0 */
    atomic_uint generation;     /* bumped once per pool_run */
    atomic_int pending;         /* workers still running the current job */
    atomic_int stop;
    atomic_int sleepers;        /* workers asleep on cv: pool_run takes the mutex only then */
    atomic_int caller_asleep;   /* the caller sleeps on done_cv: the last worker signals only then */
    atomic_int parked;          /* pool_park: waiting workers sleep without spinning */
    pool_fn fn;
    void *ctx;
    struct worker_arg {
        struct thread_pool *pool;
        int ith;
    } *args;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static inline void spin_wait(int spins) {
    if (spins < SPIN_PAUSE)
        cpu_relax();
    else
        sched_yield();
}

static void *worker_main(void *arg) {
    struct worker_arg *wa = arg;
    thread_pool *p = wa->pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins < SPIN_ITERS && !atomic_load_explicit(&p->parked, memory_order_relaxed)) {
                spin_wait(spins);
                continue;
            }
            /* sleepers before generation, pool_run the other way round (both
             * seq_cst): either it sees a sleeper and broadcasts under the mutex
             * we hold until cond_wait, or we see its new generation */
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->cv, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        p->fn(p->ctx, wa->ith, p->n);
        /* the same pairing with the caller's wait: pending before caller_asleep */
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

thread_pool *pool_new(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    thread_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->parked, 0);
    p->tids = calloc((size_t)n_threads, sizeof *p->tids);
    p->args = calloc((size_t)n_threads, sizeof *p->args);
    if (!p->tids || !p->args) {
        pool_free(p);
        return NULL;
    }
    for (int i = 1; i < n_threads; i++) {
        p->args[i] = (struct worker_arg){p, i};
        if (pthread_create(&p->tids[i - 1], NULL, worker_main, &p->args[i]) != 0) {
            p->n = i; /* only i - 1 workers exist */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

void pool_free(thread_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n && p->tids; i++) pthread_join(p->tids[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->tids);
    free(p->args);
    free(p);
}

int pool_size(const thread_pool *p) { return p->n; }

void pool_run(thread_pool *p, pool_fn fn, void *ctx) {
    if (p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    if (atomic_load_explicit(&p->parked, memory_order_relaxed)) atomic_store(&p->parked, 0);
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed); /* published by the generation */
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->sleepers) > 0) { /* spinning workers see the generation without a wake-up */
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    fn(ctx, 0, p->n);
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; spins++) {
        if (spins < SPIN_ITERS) {
            spin_wait(spins);
            continue;
        }
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->caller_asleep, 1);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
        atomic_store(&p->caller_asleep, 0);
        pthread_mutex_unlock(&p->mu);
    }
}

void pool_park(thread_pool *p) {
    if (p->n > 1) atomic_store_explicit(&p->parked, 1, memory_order_relaxed);
}

void pool_split(int n, int align, int ith, int nth, int *begin, int *end) {
    if (align < 1) align = 1;
    int units = (n + align - 1) / align;
    int per = units / nth, extra = units % nth;
    int u0 = ith * per + (ith < extra ? ith : extra);
    int u1 = u0 + per + (ith < extra ? 1 : 0);
    *begin = u0 * align < n ? u0 * align : n;
    *end = u1 * align < n ? u1 * align : n;
}

void pool_queue_init(pool_queue *q, int n, int align, int pieces, int nth) {
    q->n = n;
    q->align = align < 1 ? 1 : align;
    q->nth = nth < 1 ? 1 : nth > POOL_MAX_THREADS ? POOL_MAX_THREADS : nth;
    int part = ((n + q->align - 1) / q->align + q->nth - 1) / q->nth; /* units of the largest part */
    q->min = pieces < 1 ? part : part / pieces;
    if (q->min < 1) q->min = 1;
    for (int i = 0; i < q->nth; i++) atomic_init(&q->taken[i], 0);
}

int pool_claim(pool_queue *q, int ith, int *begin, int *end) {
    for (int k = 0; k < q->nth; k++) {
        int part = (ith + k) % q->nth, p0, p1;
        pool_split(q->n, q->align, part, q->nth, &p0, &p1);
        int units = (p1 - p0 + q->align - 1) / q->align;
        int t = atomic_load_explicit(&q->taken[part], memory_order_relaxed), want = 0;
        do {
            if (t >= units) break;
            want = (units - t + 1) / 2;
            if (want < q->min) want = q->min;
            if (want > units - t) want = units - t;
        } while (!atomic_compare_exchange_weak_explicit(&q->taken[part], &t, t + want, memory_order_relaxed,
                                                        memory_order_relaxed));
        if (t >= units) continue;
        *begin = p0 + t * q->align;
        *end = p0 + (t + want) * q->align < p1 ? p0 + (t + want) * q->align : p1;
        return 1;
    }
    return 0;
}
