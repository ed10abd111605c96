/* tile_layout.c - how fast a decode step of 8 sequences could run on Q4_1 weights stored rows-in-lanes, the layout
 * the prefill panels unpack into (measured for the throughput issue: the shipped 8-token tile is what --parallel 8
 * spends most of its time in).
 *
 *   make build/bench/tile_layout && build/bench/tile_layout
 *   build/bench_kernels steps Q4_1 avx512        (the shipped tile, same shapes, same units)
 *
 * The shipped repacked layout (kernels.h) keeps 8 rows x 4 blocks per vector (lane 4 bi + ii), so every token's
 * activation dwords are spread over the 128-bit lanes by vpshufd, beside the vpdpbusd that shares their pipe on Zen 4.
 * Stored rows-in-lanes instead (16 rows per vector, lane r = row r; for block b and k-step j one 64-byte vector
 * holding bytes 4j..4j+3 of the block's first half in its low nibbles and of its second half in its high nibbles),
 * each vpdpbusd takes its 4 activation bytes as a 32-bit broadcast from memory: no shuffles, and per block and token
 * the arithmetic the shipped kernels do (8 vpdpbusd, cvt, mul by the weight scale times the activation scale, fma,
 * and the Q4_1 min term's fma, one f32 accumulator per block position bi of a quad, the tree (0 + 2) + (1 + 3) at the
 * end: the same bits per row). The weights sit in cache (SmolLM2-135M's shapes), the scales as f32 (a stored layout
 * would keep the file's f16 and convert once per block for all 8 tokens). The result is checked against a
 * double-precision loop over the same integers and scales. Prints one line per shape: GOP/s (2 * rows * cols * 8 per
 * call, best of 200 calls). AVX-512 VNNI only; elsewhere it says so and exits 0. Not part of make test. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

enum { T = 8, ROWS = 16 };

typedef struct {
    int nb;               /* blocks of 32 per row */
    const uint8_t *w;     /* (nb, 4, 64): block b, k-step j, lane r: row r's nibble pairs */
    const float *sw, *mw; /* (nb, 16): the 16 rows' block scales d and mins m */
} panel;

typedef struct {
    const int8_t *q;      /* (T, nb * 32) */
    const float *dx, *sx; /* (T, nb): activation scale, and dx times the block's sum of q */
} acts;

#define TGT __attribute__((target("avx512f,avx512bw,avx512vnni")))

TGT static inline __m512i dpbusd_bcast(__m512i acc, __m512i w, const int8_t *p) {
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)(const void *)p));
    return acc;
}

/* y[t * ldy + r] for the panel's 16 rows and the T tokens. */
TGT static void tile_rows_in_lanes(const panel *p, const acts *a, float *y, int ldy) {
    const int nb = p->nb;
    const size_t xs = (size_t)nb * 32;
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    __m512 acc[4][T];
    for (int bi = 0; bi < 4; bi++)
        for (int t = 0; t < T; t++) acc[bi][t] = _mm512_setzero_ps();
    for (int b0 = 0; b0 < nb; b0 += 4) {
        _Pragma("GCC unroll 4") for (int bi = 0; bi < 4; bi++) {
            int b = b0 + bi;
            if (b >= nb) break;
            __m512i lo[4], hi[4];
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                __m512i v = _mm512_load_si512(p->w + ((size_t)b * 4 + j) * 64);
                lo[j] = _mm512_and_si512(v, m0f);
                hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m0f);
            }
            __m512 sw = _mm512_load_ps(p->sw + 16 * (size_t)b), mw = _mm512_load_ps(p->mw + 16 * (size_t)b);
            _Pragma("GCC unroll 8") for (int t = 0; t < T; t++) {
                const int8_t *xb = a->q + t * xs + 32 * (size_t)b;
                __m512i c0 = _mm512_setzero_si512(), c1 = _mm512_setzero_si512();
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) {
                    c0 = dpbusd_bcast(c0, lo[j], xb + 4 * j);
                    c1 = dpbusd_bcast(c1, hi[j], xb + 16 + 4 * j);
                }
                __m512 prod = _mm512_mul_ps(sw, _mm512_set1_ps(a->dx[t * nb + b]));
                acc[bi][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(c0, c1)), prod, acc[bi][t]);
                acc[bi][t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(a->sx[t * nb + b]), acc[bi][t]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        __m512 r = _mm512_add_ps(_mm512_add_ps(acc[0][t], acc[2][t]), _mm512_add_ps(acc[1][t], acc[3][t]));
        _mm512_storeu_ps(y + (size_t)t * ldy, r);
    }
}

static int has_avx512_vnni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    unsigned lo, hi;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 0xe6) != 0xe6) return 0; /* the OS saves the zmm state */
    if (__get_cpuid_max(0, NULL) < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & (1u << 16)) && (b & (1u << 30)) && (c & (1u << 11)); /* avx512f, avx512bw, avx512vnni */
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint32_t rng(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* The nibble of row r, column k (block b, position i < 32) in panel layout. */
static int nibble(const uint8_t *w, int b, int i, int r) {
    int half = i / 16, j = (i % 16) / 4, byte = i % 4;
    uint8_t v = w[((size_t)b * 4 + j) * 64 + 4 * r + byte];
    return half ? v >> 4 : v & 15;
}

/* 0 if the tile's rows agree with a double-precision sum of the same terms. */
static int bench_shape(int rows, int cols) {
    int nb = cols / 32, np = rows / ROWS;
    size_t wb = (size_t)nb * 4 * 64;
    uint8_t *w = aligned_alloc(64, wb * np);
    float *sw = aligned_alloc(64, (size_t)np * nb * 16 * sizeof(float));
    float *mw = aligned_alloc(64, (size_t)np * nb * 16 * sizeof(float));
    int8_t *q = aligned_alloc(64, (size_t)T * cols);
    float *dx = malloc(sizeof(float) * T * nb), *sx = malloc(sizeof(float) * T * nb);
    float *y = aligned_alloc(64, sizeof(float) * T * rows);
    if (!w || !sw || !mw || !q || !dx || !sx || !y) {
        fprintf(stderr, "tile_layout: out of memory\n");
        exit(1);
    }
    uint32_t s = 1;
    for (size_t i = 0; i < wb * np; i++) w[i] = (uint8_t)rng(&s);
    for (size_t i = 0; i < (size_t)np * nb * 16; i++) {
        sw[i] = 1e-3f * (float)(1 + rng(&s) % 100);
        mw[i] = -8.0f * sw[i];
    }
    for (int t = 0; t < T; t++)
        for (int b = 0; b < nb; b++) {
            int sum = 0;
            for (int i = 0; i < 32; i++) sum += q[(size_t)t * cols + 32 * b + i] = (int8_t)(rng(&s) % 255 - 127);
            dx[t * nb + b] = 1e-2f * (float)(1 + rng(&s) % 50);
            sx[t * nb + b] = dx[t * nb + b] * (float)sum;
        }
    acts a = {q, dx, sx};
    double best = 1e30;
    for (int rep = 0; rep < 200; rep++) {
        double t0 = now();
        for (int pi = 0; pi < np; pi++) {
            panel p = {nb, w + wb * pi, sw + (size_t)pi * nb * 16, mw + (size_t)pi * nb * 16};
            tile_rows_in_lanes(&p, &a, y + ROWS * pi, rows);
        }
        double dt = now() - t0;
        if (dt < best) best = dt;
    }
    double worst = 0;
    for (int pi = 0; pi < np; pi++)
        for (int r = 0; r < ROWS; r++)
            for (int t = 0; t < T; t++) {
                double ref = 0, mag = 0;
                for (int b = 0; b < nb; b++) {
                    long isum = 0;
                    const int8_t *xb = q + (size_t)t * cols + 32 * b;
                    for (int i = 0; i < 32; i++) isum += (long)nibble(w + wb * pi, b, i, r) * xb[i];
                    size_t si = ((size_t)pi * nb + b) * 16 + r;
                    double term = (double)sw[si] * dx[t * nb + b] * (double)isum + (double)mw[si] * sx[t * nb + b];
                    ref += term;
                    mag += fabs(term);
                }
                double e = fabs(y[(size_t)t * rows + ROWS * pi + r] - ref) / (mag > 0 ? mag : 1);
                if (e > worst) worst = e;
            }
    printf("Q4_1 rows-in-lanes  nt %d  %5d x %-5d %6.1f GOP/s  (max error %.1e of the terms' magnitude)\n", T, rows,
           cols, 2.0 * rows * cols * T / best / 1e9, worst);
    free(w), free(sw), free(mw), free(q), free(dx), free(sx), free(y);
    return worst < 1e-5 ? 0 : 1;
}

int main(void) {
    if (!has_avx512_vnni()) {
        printf("tile_layout: this CPU has no AVX-512 VNNI; nothing measured\n");
        return 0;
    }
    /* SmolLM2-135M's shapes, as bench_kernels' decode steps */
    static const int shapes[][2] = {{576, 576}, {1536, 576}, {576, 1536}, {49152, 576}};
    int bad = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) bad |= bench_shape(shapes[i][0], shapes[i][1]);
    if (bad) fprintf(stderr, "tile_layout: results differ from the reference\n");
    return bad;
}
#else
int main(void) {
    printf("tile_layout: x86-64 only; nothing measured\n");
    return 0;
}
#endif
