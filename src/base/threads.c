/* threads.c - persistent worker pool. A thread that waits (a worker for the next
 * pool_run, the caller for the workers) spins on `pause` for up to SPIN_NS, then sleeps
 * on a futex. A forward pass issues a few hundred short jobs per token, so the spin
 * catches the next one without a wake-up on a quiet machine. On a shared one the sleep
 * matters more: a waiter that keeps its core (spinning, or sched_yield, which does not
 * move a thread queued on another core) leaves a preempted peer waiting a whole time
 * slice for a core, and the step with it; a sleeping waiter frees its core, and the
 * kernel's idle balance moves the peer onto it at once.
 *
 * A part no worker has started is run by the caller (stolen): a worker that sits in a
 * run queue behind another process would otherwise hold every job for a time slice.
 * Each part is claimed exactly once per job (a compare-and-swap of the job's number
 * into claim[part]), so a worker that wakes late finds its part taken and skips it;
 * parts compute the same whichever thread runs them (threads.h).
 *
 * When the workers keep being late (their parts stolen, or the caller waiting on a
 * part longer than running it would take) in STRIKES of the last 32 jobs, the cores are
 * taken by other work: the caller then runs every part itself for a while (solo),
 * the workers asleep, so the process takes one core instead of fighting for two.
 * Each solo period that ends in more strikes soon is twice as long (up to
 * SOLO_MAX_NS). Long jobs (prefill's) stay parallel: the caller takes over a late
 * worker's part, or most of it, by itself. Measure with `make bench-contention` (quiet, busy core, two
 * processes) and `make bench-ab` (quiet speed). */
#include "threads.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#include <sched.h>
#endif

/* How long a wait spins before it sleeps: longer than the gaps between a step's jobs
 * (tens of microseconds), short against a time slice (milliseconds). */
#define SPIN_NS 50000
/* The least time the caller waits for a worker to start its part before running it:
 * at least as long as its own part took (so stealing costs at most twice the wait). */
#define STEAL_MIN_NS 2000
/* Late jobs among the last 32 before going solo: a quiet machine has a few when the
 * workers wake from sleep (once per token), a shared one most. */
#define STRIKES 8
/* A job is late when a part was stolen, or the caller waited for the others longer
 * than its own part took per other part, plus a wake-up's worth (a worker preempted
 * in its part holds the job up for a time slice). */
#define LATE_SLACK_NS 20000
#define SOLO_MIN_NS 2000000LL
#define SOLO_MAX_NS 64000000LL
/* Jobs whose parts took longer than this last time run in parallel even when solo: a
 * late worker costs them little against their length (the matmuls hand out their rows
 * in pieces, so the caller takes over most of a late worker's share). */
#define SOLO_LONG_NS 200000
#define FN_SLOTS 16

struct thread_pool {
    int n;                      /* threads including the caller */
    pthread_t *tids;            /* (n - 1) workers */
    atomic_uint generation;     /* bumped once per pool_run (and by pool_free); workers sleep on it */
    atomic_uint pending;        /* workers still running the current job; the caller sleeps on it */
    atomic_int stop;
    atomic_int sleepers;        /* workers asleep (or going to sleep) on generation */
    atomic_int caller_asleep;   /* the caller sleeps on pending: the last worker wakes it only then */
    atomic_int parked;          /* pool_park: waiting workers sleep without spinning */
    atomic_uint *claim;         /* claim[i]: the generation whose part i is taken (i >= 1) */
    atomic_int *late;           /* late[i]: part i was stolen last time: steal it at once */
    atomic_int waited_late;     /* a thread of the job waited long on another's work (pool_wait_at_least) */
    pool_fn fn;
    void *ctx;
    int nth;                    /* the parts of the job: threads 0 .. nth - 1 */
    /* the caller's own state (one pool_run at a time) */
    unsigned history;           /* bit i: the job i jobs ago was late */
    long long solo_until;       /* run parts on the caller alone until then (ns, CLOCK_MONOTONIC) */
    long long solo_ns;          /* the length of the last solo period */
    pool_counts counts;
    struct {
        pool_fn fn;
        long long part_ns;      /* how long a part of fn took last time */
    } fn_time[FN_SLOTS];
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

/* Sleep while *addr == expected (a spurious return is fine: callers loop). */
static void futex_wait(atomic_uint *addr, unsigned expected) {
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
#else
    (void)addr, (void)expected;
    sched_yield();
#endif
}

static void futex_wake(atomic_uint *addr, int n) {
#if defined(__linux__)
    syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
#else
    (void)addr, (void)n;
#endif
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spin until *addr != value or SPIN_NS pass (or at once when *skip): 1 if it changed. */
static int spin_while(atomic_uint *addr, unsigned value, atomic_int *skip) {
    long long t0 = 0;
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(addr, memory_order_acquire) != value) return 1;
        if (skip && atomic_load_explicit(skip, memory_order_relaxed)) return 0;
        if (!(i & 63)) { /* the clock every 64 rounds: a few hundred nanoseconds */
            long long t = now_ns();
            if (!t0) t0 = t;
            else if (t - t0 > SPIN_NS) return 0;
        }
        cpu_relax();
    }
}

static void *worker_main(void *arg) {
    struct worker_arg *wa = arg;
    thread_pool *p = wa->pool;
    unsigned seen = 0;
    for (;;) {
        if (!spin_while(&p->generation, seen, &p->parked)) {
            /* sleepers before generation, pool_run the other way round (both seq_cst):
             * either it sees a sleeper and wakes us, or we see its new generation */
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->generation) == seen) futex_wait(&p->generation, seen);
            atomic_fetch_sub(&p->sleepers, 1);
        }
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (atomic_load(&p->stop)) return NULL;
        /* taking the part for `seen` succeeds only while that job runs (it cannot end
         * with the part untaken), so fn and ctx are still the job's */
        unsigned prev = seen - 1;
        if (!atomic_compare_exchange_strong(&p->claim[wa->ith], &prev, seen)) continue; /* stolen */
        atomic_store_explicit(&p->late[wa->ith], 0, memory_order_relaxed);
        p->fn(p->ctx, wa->ith, p->nth);
        /* the same pairing with the caller's sleep: pending before caller_asleep */
        if (atomic_fetch_sub(&p->pending, 1) == 1 && atomic_load(&p->caller_asleep)) futex_wake(&p->pending, 1);
    }
}

thread_pool *pool_new(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    thread_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->parked, 0);
    atomic_init(&p->waited_late, 0);
    p->tids = calloc((size_t)n_threads, sizeof *p->tids);
    p->args = calloc((size_t)n_threads, sizeof *p->args);
    p->claim = calloc((size_t)n_threads, sizeof *p->claim);
    p->late = calloc((size_t)n_threads, sizeof *p->late);
    for (int i = 0; p->claim && p->late && i < n_threads; i++) {
        atomic_init(&p->claim[i], 0);
        atomic_init(&p->late[i], 0);
    }
    if (!p->tids || !p->args || !p->claim || !p->late) {
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
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->generation, 1);
    futex_wake(&p->generation, INT32_MAX);
    for (int i = 1; i < p->n && p->tids; i++) pthread_join(p->tids[i - 1], NULL);
    free(p->tids);
    free(p->args);
    free(p->claim);
    free(p->late);
    free(p);
}

int pool_size(const thread_pool *p) { return p->n; }

/* Run the parts of job g that no worker has taken and that waited long enough (or at
 * once, when their worker was late the time before): 1 if some part is still untaken. */
static int steal(thread_pool *p, unsigned g, long long waited, long long own, int *stole) {
    int untaken = 0;
    for (int i = 1; i < p->nth; i++) {
        unsigned prev = g - 1;
        if (atomic_load_explicit(&p->claim[i], memory_order_relaxed) != prev) continue;
        if (!atomic_load_explicit(&p->late[i], memory_order_relaxed) && waited < own) {
            untaken = 1;
        } else if (atomic_compare_exchange_strong(&p->claim[i], &prev, g)) {
            p->fn(p->ctx, i, p->nth);
            *stole = 1;
            atomic_store_explicit(&p->late[i], 1, memory_order_relaxed);
            atomic_fetch_sub(&p->pending, 1);
        }
    }
    return untaken;
}

/* After a parallel job that ended at t: count it late or not, and go solo after
 * STRIKES late ones among the last 32 (twice as long as last time when the last period ended
 * less than its own length ago: the machine is still busy). */
static void judge(thread_pool *p, int late, long long t) {
    p->history = p->history << 1 | (unsigned)late;
    if (!late || __builtin_popcount(p->history) < STRIKES) return;
    long long again = t - p->solo_until < p->solo_ns;
    p->solo_ns = !p->solo_ns || !again ? SOLO_MIN_NS : p->solo_ns * 2 < SOLO_MAX_NS ? p->solo_ns * 2 : SOLO_MAX_NS;
    p->solo_until = t + p->solo_ns;
    p->history = 0;
    p->counts.solo_periods++;
}

void pool_run(thread_pool *p, pool_fn fn, void *ctx) { pool_run_n(p, fn, ctx, p->n); }

void pool_run_n(thread_pool *p, pool_fn fn, void *ctx, int nth) {
    if (nth > p->n) nth = p->n;
    if (nth <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->counts.runs++;
    long long t0 = now_ns();
    unsigned slot = (unsigned)(((uintptr_t)fn >> 4) % FN_SLOTS);
    if (p->fn_time[slot].fn != fn) p->fn_time[slot].fn = fn, p->fn_time[slot].part_ns = 0;
    if (t0 < p->solo_until && p->fn_time[slot].part_ns < SOLO_LONG_NS) {
        /* the workers sleep; every part here, as a steal would run it */
        p->counts.solo_runs++;
        for (int i = 0; i < nth; i++) fn(ctx, i, nth);
        p->fn_time[slot].part_ns = (now_ns() - t0) / nth;
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    if (atomic_load_explicit(&p->parked, memory_order_relaxed)) atomic_store(&p->parked, 0);
    p->nth = nth;
    atomic_store_explicit(&p->pending, (unsigned)(nth - 1), memory_order_relaxed); /* published by the generation */
    /* the workers without a part find theirs taken (published by the generation too) */
    unsigned g = atomic_load_explicit(&p->generation, memory_order_relaxed) + 1;
    for (int i = nth; i < p->n; i++) atomic_store_explicit(&p->claim[i], g, memory_order_relaxed);
    atomic_fetch_add(&p->generation, 1);
    if (atomic_load(&p->sleepers) > 0) futex_wake(&p->generation, INT32_MAX); /* spinners need no wake-up */
    fn(ctx, 0, nth);
    long long t1 = now_ns(), ran = t1 - t0, own = ran > STEAL_MIN_NS ? ran : STEAL_MIN_NS;
    p->fn_time[slot].part_ns = ran;
    unsigned left;
    int stole = 0;
    while ((left = atomic_load_explicit(&p->pending, memory_order_acquire)) > 0) {
        if (steal(p, g, now_ns() - t1, own, &stole)) { /* a part not started: keep the core, look again soon */
            for (int k = 0; k < 32; k++) cpu_relax();
            continue;
        }
        if ((left = atomic_load_explicit(&p->pending, memory_order_acquire)) == 0) break;
        if (spin_while(&p->pending, left, NULL)) continue; /* every part is taken: wait for them */
        /* the same pairing as the workers': caller_asleep before pending */
        atomic_store(&p->caller_asleep, 1);
        while ((left = atomic_load(&p->pending)) > 0) futex_wait(&p->pending, left);
        atomic_store(&p->caller_asleep, 0);
    }
    long long t2 = now_ns();
    int waited = atomic_exchange_explicit(&p->waited_late, 0, memory_order_relaxed);
    judge(p, stole || waited || t2 - t1 > (nth - 1) * ran + LATE_SLACK_NS, t2);
}

void pool_wait_at_least(thread_pool *p, atomic_int *v, int target) {
    long long t0 = 0;
    for (unsigned i = 1; atomic_load_explicit(v, memory_order_acquire) < target; i++) {
        if (i & 63) {
            cpu_relax();
            continue;
        }
        long long t = now_ns();
        if (!t0) t0 = t;
        if (t - t0 > LATE_SLACK_NS && !atomic_load_explicit(&p->waited_late, memory_order_relaxed))
            atomic_store_explicit(&p->waited_late, 1, memory_order_relaxed);
        if (t - t0 > SPIN_NS) nanosleep(&(struct timespec){0, 20000}, NULL);
    }
}

pool_counts pool_get_counts(const thread_pool *p) { return p->counts; }

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
