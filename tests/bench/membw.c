/* membw.c - read bandwidth of this machine, measured the way a decode step reads weights.
 *
 *   build/bench/membw [MiB]          (default 1024)
 *
 * A streaming sum over a buffer far larger than the last-level cache (1 GiB by default), with the
 * widest vector loads the CPU offers (AVX-512 when the CPU and OS enable it, else AVX2, else
 * plain C), chosen at run time by CPUID like llmgen's kernels (one binary for any x86-64: the
 * vector loops are compiled with target attributes, not -march flags). Each thread sums its own
 * contiguous half; best of 5 passes, for 1 and for 2 threads. The same loop runs twice: plain (the
 * hardware prefetchers alone) and with a software prefetch into L2 16 KiB ahead, as llmgen's GEMV
 * kernels do (on Zen 4 that read the GEMV's weights about 1.5x faster than the hardware prefetchers
 * alone); the faster of the two is the bandwidth. The decode floor that bench.py prints is
 * bytes-per-token divided by this number.
 *
 * Prints one JSON object: {"isa": ..., "mib": ..., "gbs": {"1": GB/s, "2": GB/s}, "all": {...},
 * "all_prefetch": {...}} ("all*" have every pass of each loop, for the record). GB = 1e9 bytes. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

enum { PASSES = 5, MAX_THREADS = 2, PF_AHEAD = 16384 /* bytes */ };

typedef double (*sum_fn)(const uint64_t *p, size_t n);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Portable fallback: eight independent accumulators so the loop is not latency bound. */
static double sum_scalar(const uint64_t *p, size_t n) {
    uint64_t acc[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) acc[k] += p[i + k];
    uint64_t t = 0;
    for (int k = 0; k < 8; k++) t += acc[k];
    return (double)t;
}

#if defined(__x86_64__)
/* 4 x 32-byte loads per iteration, 4 accumulators: 128 bytes in flight per loop; with pf, a
 * prefetch into L2 PF_AHEAD bytes ahead for each cache line. */
__attribute__((target("avx2"), always_inline)) static inline double avx2_loop(const uint64_t *p, size_t n, int pf) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 16 <= n; i += 16) {
        if (pf)
            for (int l = 0; l < 2; l++) _mm_prefetch((const char *)(p + i + 8 * l) + PF_AHEAD, _MM_HINT_T1);
        a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(p + i)));
        a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(p + i + 4)));
        a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(p + i + 8)));
        a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(p + i + 12)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    uint64_t o[4];
    _mm256_storeu_si256((__m256i *)o, s);
    return (double)(o[0] + o[1] + o[2] + o[3]);
}

/* 4 x 64-byte loads per iteration: one cache line per load. */
__attribute__((target("avx512f"), always_inline)) static inline double avx512_loop(const uint64_t *p, size_t n,
                                                                                   int pf) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 32 <= n; i += 32) {
        if (pf)
            for (int l = 0; l < 4; l++) _mm_prefetch((const char *)(p + i + 8 * l) + PF_AHEAD, _MM_HINT_T1);
        a0 = _mm512_add_epi64(a0, _mm512_load_si512((const void *)(p + i)));
        a1 = _mm512_add_epi64(a1, _mm512_load_si512((const void *)(p + i + 8)));
        a2 = _mm512_add_epi64(a2, _mm512_load_si512((const void *)(p + i + 16)));
        a3 = _mm512_add_epi64(a3, _mm512_load_si512((const void *)(p + i + 24)));
    }
    return (double)_mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
}

__attribute__((target("avx2"))) static double sum_avx2(const uint64_t *p, size_t n) { return avx2_loop(p, n, 0); }
__attribute__((target("avx2"))) static double sum_avx2_pf(const uint64_t *p, size_t n) { return avx2_loop(p, n, 1); }
__attribute__((target("avx512f"))) static double sum_avx512(const uint64_t *p, size_t n) { return avx512_loop(p, n, 0); }
__attribute__((target("avx512f"))) static double sum_avx512_pf(const uint64_t *p, size_t n) {
    return avx512_loop(p, n, 1);
}

static unsigned long long xcr0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* The widest loop this CPU and OS allow (XCR0: YMM state 0x6, ZMM state 0xe6), plain and with
 * software prefetch. */
static sum_fn pick(const char **isa, sum_fn *pf) {
    unsigned int a, b, c, d;
    *isa = "scalar";
    *pf = sum_scalar;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return sum_scalar;
    unsigned long long x = xcr0();
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return sum_scalar;
    if ((x & 0xe6) == 0xe6 && (b & bit_AVX512F)) return *isa = "avx512", *pf = sum_avx512_pf, sum_avx512;
    if ((x & 0x6) == 0x6 && (b & bit_AVX2)) return *isa = "avx2", *pf = sum_avx2_pf, sum_avx2;
    return sum_scalar;
}
#else
static sum_fn pick(const char **isa, sum_fn *pf) {
    *isa = "scalar";
    *pf = sum_scalar;
    return sum_scalar;
}
#endif

typedef struct {
    sum_fn fn;
    const uint64_t *p; /* this thread's slice, 64-byte aligned */
    size_t n; /* uint64 words in the slice */
    pthread_barrier_t *start;
    double result; /* kept so the sum cannot be optimized away */
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    w->result = w->fn(w->p, w->n);
    return NULL;
}

/* One pass over the whole buffer split between nt threads; GB/s. */
static double one_pass(sum_fn fn, const uint64_t *buf, size_t n, int nt, double *sink) {
    pthread_t th[MAX_THREADS];
    worker w[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
    size_t per = n / (size_t)nt / 64 * 64;
    for (int i = 0; i < nt; i++) {
        w[i] = (worker){fn, buf + (size_t)i * per, per, &start, 0};
        pthread_create(&th[i], NULL, run_worker, &w[i]);
    }
    pthread_barrier_wait(&start);
    double t = now();
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    t = now() - t;
    pthread_barrier_destroy(&start);
    for (int i = 0; i < nt; i++) *sink += w[i].result;
    return (double)(per * (size_t)nt * sizeof(uint64_t)) / t / 1e9;
}

int main(int argc, char **argv) {
    long mib = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
    if (mib < 64 || mib > 16384) {
        fprintf(stderr, "membw: buffer size %s MiB out of range, expected 64..16384\n", argv[1]);
        return 1;
    }
    size_t bytes = (size_t)mib << 20, n = bytes / sizeof(uint64_t);
    uint64_t *buf = aligned_alloc(64, bytes);
    if (!buf) {
        fprintf(stderr, "membw: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    for (size_t i = 0; i < n; i++) buf[i] = i; /* touch every page: no page faults while timing */

    const char *isa;
    sum_fn fns[2];
    fns[0] = pick(&isa, &fns[1]);
    double sink = 0, best[MAX_THREADS + 1] = {0}, all[2][MAX_THREADS + 1][PASSES];
    for (int nt = 1; nt <= MAX_THREADS; nt++)
        for (int r = 0; r < PASSES; r++)
            for (int f = 0; f < 2; f++) { /* the two loops alternate: same conditions for both */
                all[f][nt][r] = one_pass(fns[f], buf, n, nt, &sink);
                if (all[f][nt][r] > best[nt]) best[nt] = all[f][nt][r];
            }
    printf("{\"isa\": \"%s\", \"mib\": %ld, \"gbs\": {\"1\": %.2f, \"2\": %.2f}", isa, mib, best[1], best[2]);
    for (int f = 0; f < 2; f++) {
        printf(", \"%s\": {", f ? "all_prefetch" : "all");
        for (int nt = 1; nt <= MAX_THREADS; nt++) {
            printf("%s\"%d\": [", nt > 1 ? ", " : "", nt);
            for (int r = 0; r < PASSES; r++) printf("%s%.2f", r ? ", " : "", all[f][nt][r]);
            printf("]");
        }
        printf("}");
    }
    printf(", \"checksum\": %.0f}\n", sink);
    free(buf);
    return 0;
}
