/* int8peak.c - the int8 dot-product compute peak of this machine (register-only).
 *
 *   build/bench/int8peak
 *
 * What prefill cannot beat: a quantized GEMM with int8 activations spends its time in
 * u8 x s8 multiply-accumulate instructions. This loop runs only those, on registers (no memory
 * traffic), with 12 independent accumulator chains so latency is hidden, and counts 2 operations
 * (multiply + add) per byte pair, the convention of "ops per prefill token" in bench.py.
 * The instruction is chosen at run time by CPUID, as llmgen's kernels are:
 *   avx512_vnni  vpdpbusd zmm: 64 byte pairs per instruction
 *   avx_vnni     vpdpbusd ymm (VEX): 32 byte pairs
 *   avx2         vpmaddubsw + vpmaddwd + vpaddd: 32 byte pairs per 3 instructions
 * Best of 5 runs of about 0.2 s each, for 1 and 2 threads.
 *
 * With AVX-512 VNNI it also measures "block32": the same vpdpbusd count when every 8 of them
 * (one block of 32 values for 16 rows and one token) are followed by the f32 step a GGUF /
 * MLX kernel cannot avoid, cvt(int sum) * (weight scale * activation scale) added to an f32
 * accumulator (cvt, mul, fma; the activation scale broadcast from memory, one per chain, as the
 * kernels do), with no other memory traffic: the ceiling of any int8 kernel on formats with a
 * scale per 32 values, in vpdpbusd ops per second. (Until this version the compiler hoisted
 * the mul out of the loop, so the figure was a ceiling for cvt + fma only.)
 * Prints one JSON object: {"isa": ..., "gops": {"1": ..., "2": ...}, "all": {...},
 * "block32_gops": {"1": ..., "2": ...} (AVX-512 VNNI only)}. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

enum { RUNS = 5, MAX_THREADS = 2, CHAINS = 12 };

/* Runs `iters` loop iterations; returns a value derived from every chain (kept live). */
typedef int64_t (*peak_fn)(long iters);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Portable reference: 4 byte pairs x 12 chains per iteration. Far below any SIMD peak. */
static int64_t peak_scalar(long iters) {
    int32_t acc[CHAINS] = {0};
    volatile uint8_t ua = 3;
    volatile int8_t sb = -2;
    uint8_t a = ua;
    int8_t b = sb;
    for (long i = 0; i < iters; i++)
        for (int c = 0; c < CHAINS; c++) acc[c] += a * b + a * b + a * b + a * b;
    int64_t t = 0;
    for (int c = 0; c < CHAINS; c++) t += acc[c];
    return t;
}
enum { SCALAR_PAIRS = 4 };

#if defined(__x86_64__)
/* The 12 chains are spelled out: the compiler keeps each in its own register. */
#define CHAIN12(OP) \
    OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int64_t peak_avx512vnni(long iters) {
    __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
#define DECL(k) __m512i c##k = _mm512_set1_epi32(k);
    CHAIN12(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(k) c##k = _mm512_dpbusd_epi32(c##k, a, b);
        CHAIN12(STEP)
#undef STEP
        __asm__ volatile("" : "+v"(a), "+v"(b)); /* keep the inputs opaque */
    }
    __m512i s = c0;
#define SUM(k) s = _mm512_add_epi32(s, c##k);
    CHAIN12(SUM)
#undef SUM
    return _mm512_reduce_add_epi32(s);
}

/* 8 chains x 8 vpdpbusd, then each chain's block epilogue into its own f32 accumulator. */
#define CHAIN8(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static int64_t peak_block32(long iters) {
    __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    __m512 sw = _mm512_set1_ps(1e-3f);
    float dx[8] = {1e-3f, 2e-3f, 3e-3f, 4e-3f, 5e-3f, 6e-3f, 7e-3f, 8e-3f};
    const float *dxp = dx;
#define DECL(k) __m512i c##k = _mm512_set1_epi32(k); __m512 f##k = _mm512_setzero_ps();
    CHAIN8(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(k) c##k = _mm512_dpbusd_epi32(c##k, a, b);
        CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP) CHAIN8(STEP)
#undef STEP
        /* each chain (token) its own activation scale, broadcast from memory as the kernels
         * read it: one real mul per block, which the compiler can neither hoist nor share */
#define EPI(k) f##k = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c##k), _mm512_mul_ps(sw, _mm512_set1_ps(dxp[k])), f##k);
        CHAIN8(EPI)
#undef EPI
        __asm__ volatile("" : "+v"(a), "+v"(b), "+v"(sw), "+r"(dxp)::"memory");
    }
    __m512 s = f0;
#define SUM(k) s = _mm512_add_ps(s, f##k);
    CHAIN8(SUM)
#undef SUM
    return (int64_t)_mm512_reduce_add_ps(s);
}
enum { BLOCK32_PAIRS = 64 * 64 };

__attribute__((target("avx2,avxvnni"))) static int64_t peak_avxvnni(long iters) {
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
#define DECL(k) __m256i c##k = _mm256_set1_epi32(k);
    CHAIN12(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(k) c##k = _mm256_dpbusd_avx_epi32(c##k, a, b);
        CHAIN12(STEP)
#undef STEP
        __asm__ volatile("" : "+x"(a), "+x"(b));
    }
    __m256i s = c0;
#define SUM(k) s = _mm256_add_epi32(s, c##k);
    CHAIN12(SUM)
#undef SUM
    int32_t o[8];
    _mm256_storeu_si256((__m256i *)o, s);
    return (int64_t)o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}

/* AVX2 has no dot-accumulate: maddubs (u8 x s8 -> s16 pairs), madd with ones (-> s32), add. */
__attribute__((target("avx2"))) static int64_t peak_avx2(long iters) {
    __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
#define DECL(k) __m256i c##k = _mm256_set1_epi32(k);
    CHAIN12(DECL)
#undef DECL
    for (long i = 0; i < iters; i++) {
#define STEP(k) c##k = _mm256_add_epi32(c##k, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
        CHAIN12(STEP)
#undef STEP
        __asm__ volatile("" : "+x"(a), "+x"(b));
    }
    __m256i s = c0;
#define SUM(k) s = _mm256_add_epi32(s, c##k);
    CHAIN12(SUM)
#undef SUM
    int32_t o[8];
    _mm256_storeu_si256((__m256i *)o, s);
    return (int64_t)o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}

static unsigned long long xcr0(void) {
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Byte pairs per loop iteration are returned through *pairs. */
static peak_fn pick(const char **isa, int *pairs) {
    unsigned int a, b, c, d, a1, b1, c1, d1;
    *isa = "scalar", *pairs = SCALAR_PAIRS * CHAINS;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return peak_scalar;
    unsigned long long x = xcr0();
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return peak_scalar;
    int ymm = (x & 0x6) == 0x6, zmm = (x & 0xe6) == 0xe6;
    unsigned int need512 = bit_AVX512F | bit_AVX512BW;
    if (zmm && (b & need512) == need512 && (c & bit_AVX512VNNI))
        return *isa = "avx512_vnni", *pairs = 64 * CHAINS, peak_avx512vnni;
    /* AVX-VNNI is CPUID leaf 7 subleaf 1, EAX bit 4. */
    if (ymm && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1) && (a1 & (1u << 4)))
        return *isa = "avx_vnni", *pairs = 32 * CHAINS, peak_avxvnni;
    if (ymm && (b & bit_AVX2)) return *isa = "avx2", *pairs = 32 * CHAINS, peak_avx2;
    return peak_scalar;
}
#else
static peak_fn pick(const char **isa, int *pairs) {
    *isa = "scalar", *pairs = SCALAR_PAIRS * CHAINS;
    return peak_scalar;
}
#endif

typedef struct {
    peak_fn fn;
    long iters;
    pthread_barrier_t *start;
    int64_t result;
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    pthread_barrier_wait(w->start);
    w->result = w->fn(w->iters);
    return NULL;
}

/* Seconds for nt threads to run `iters` iterations each. */
static double timed(peak_fn fn, long iters, int nt, int64_t *sink) {
    pthread_t th[MAX_THREADS];
    worker w[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)nt + 1);
    for (int i = 0; i < nt; i++) {
        w[i] = (worker){fn, iters, &start, 0};
        pthread_create(&th[i], NULL, run_worker, &w[i]);
    }
    pthread_barrier_wait(&start);
    double t = now();
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    t = now() - t;
    pthread_barrier_destroy(&start);
    for (int i = 0; i < nt; i++) *sink += w[i].result;
    return t;
}

int main(void) {
    const char *isa;
    int pairs;
    peak_fn fn = pick(&isa, &pairs);
    int64_t sink = 0;
    /* Calibrate to about 0.2 s per run on one thread. */
    long iters = 1 << 16;
    double t;
    while ((t = timed(fn, iters, 1, &sink)) < 0.05 && iters < (1L << 40)) iters *= 2;
    iters = (long)((double)iters * 0.2 / t) + 1;

    double best[MAX_THREADS + 1] = {0}, all[MAX_THREADS + 1][RUNS];
    for (int nt = 1; nt <= MAX_THREADS; nt++)
        for (int r = 0; r < RUNS; r++) {
            double s = timed(fn, iters, nt, &sink);
            all[nt][r] = 2.0 * (double)pairs * (double)iters * nt / s / 1e9;
            if (all[nt][r] > best[nt]) best[nt] = all[nt][r];
        }
    printf("{\"isa\": \"%s\", \"ops_per_pair\": 2, \"gops\": {\"1\": %.1f, \"2\": %.1f}, \"all\": {", isa, best[1],
           best[2]);
    for (int nt = 1; nt <= MAX_THREADS; nt++) {
        printf("%s\"%d\": [", nt > 1 ? ", " : "", nt);
        for (int r = 0; r < RUNS; r++) printf("%s%.1f", r ? ", " : "", all[nt][r]);
        printf("]");
    }
    printf("}");
#if defined(__x86_64__)
    if (fn == peak_avx512vnni) { /* the block-32 ceiling, same calibration per vpdpbusd */
        long bi = iters * (64 * CHAINS) / BLOCK32_PAIRS + 1;
        double bb[MAX_THREADS + 1] = {0};
        for (int nt = 1; nt <= MAX_THREADS; nt++)
            for (int r = 0; r < RUNS; r++) {
                double g = 2.0 * BLOCK32_PAIRS * (double)bi * nt / timed(peak_block32, bi, nt, &sink) / 1e9;
                if (g > bb[nt]) bb[nt] = g;
            }
        printf(", \"block32_gops\": {\"1\": %.1f, \"2\": %.1f}", bb[1], bb[2]);
    }
#endif
    printf(", \"checksum\": %lld}\n", (long long)sink);
    return 0;
}
