/* affine_avx512.c - MLX affine 4-bit / 8-bit matmuls with AVX-512 (F, BW), f32 activations.
 *
 * Numerics are those of affine_kernels.h, bit for bit with affine_scalar.c: the
 * weights of a group are dequantized as mlx does (q * scale, then + bias, in f32)
 * and accumulated by FMA into one 16-lane accumulator per output, lane i taking
 * columns in the order affine_kernels.h fixes; reduce16 sums the lanes. 4-bit
 * weights go through a table of the group's 16 dequantized values: per 32 weights one
 * zero-extension, one shift and two vpermps instead of conversions, multiplies and
 * adds; x is deinterleaved (even / odd columns) once per block for all rows. The weights are read straight from the file
 * layout (packed words, scales and biases apart), never repacked.
 *
 * Tiles: decode (nt = 1) walks 8 rows at once (8 weight streams, 8 FMA chains, each
 * activation vector loaded once); prefill tiles are 4 rows x 4 tokens. */
#include "affine_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "util.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define MAX_R 8
#define MAX_T 4

AI float param(const void *p, int sdt, size_t i) {
    const uint8_t *b = p;
    if (sdt == DT_F32) {
        float v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    uint16_t h = rd_u16(b + 2 * i);
    return sdt == DT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

AI float reduce16(__m512 v) {
    __m256 s8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

/* Per-row, per-group dequantization state: the 16-entry table of the group's values
 * (4-bit) or the broadcast scale and bias (8-bit). */
typedef struct {
    __m512 a, b;
} gparams;

AI gparams group_params(int bits, float s, float b) {
    __m512 sv = _mm512_set1_ps(s), bv = _mm512_set1_ps(b);
    if (bits == 8) return (gparams){sv, bv};
    const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return (gparams){_mm512_add_ps(_mm512_mul_ps(iota, sv), bv), bv};
}

/* One block of 32 columns of a row, accumulated into acc[0..T) against the block's
 * activations: 4-bit, xa = even and xb = odd columns (byte k of the block in lane k:
 * its low nibble through the table, then its high nibble; vpermps reads only the
 * low 4 bits of each index, so no mask); 8-bit, xa = columns 0..15, xb = 16..31. */
AI void block32(int bits, const uint8_t *row, int c, gparams g, const __m512 *xa, const __m512 *xb,
                __m512 *acc, int T) {
    if (bits == 4) {
        __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + c / 2)));
        __m512 lo = _mm512_permutexvar_ps(i, g.a);
        __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(i, 4), g.a);
        UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_fmadd_ps(lo, xa[t], acc[t]);
        UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_fmadd_ps(hi, xb[t], acc[t]);
        return;
    }
    __m512 q0 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + c))));
    __m512 q1 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(row + c + 16))));
    __m512 w0 = _mm512_add_ps(_mm512_mul_ps(q0, g.a), g.b), w1 = _mm512_add_ps(_mm512_mul_ps(q1, g.a), g.b);
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_fmadd_ps(w0, xa[t], acc[t]);
    UNROLL for (int t = 0; t < T; t++) acc[t] = _mm512_fmadd_ps(w1, xb[t], acc[t]);
}

AI void tile(int bits, const affine_weights *a, size_t rb, int cols, int r0, const float *x, int ldx,
             float *y, int ldy, int R, int T) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int ng = cols / a->group;
    __m512 acc[MAX_R][MAX_T];
    const uint8_t *rows[MAX_R];
    UNROLL for (int r = 0; r < R; r++) {
        rows[r] = (const uint8_t *)a->q + (size_t)(r0 + r) * rb;
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    }
    for (int g = 0; g < ng; g++) {
        gparams gp[MAX_R];
        UNROLL for (int r = 0; r < R; r++) {
            size_t i = (size_t)(r0 + r) * ng + g;
            gp[r] = group_params(bits, param(a->scales, a->sdt, i), param(a->biases, a->sdt, i));
        }
        for (int c = g * a->group; c < (g + 1) * a->group; c += 32) {
            __m512 xa[MAX_T], xb[MAX_T];
            UNROLL for (int t = 0; t < T; t++) {
                __m512 x0 = _mm512_loadu_ps(x + (size_t)t * ldx + c), x1 = _mm512_loadu_ps(x + (size_t)t * ldx + c + 16);
                xa[t] = bits == 4 ? _mm512_permutex2var_ps(x0, even, x1) : x0;
                xb[t] = bits == 4 ? _mm512_permutex2var_ps(x0, odd, x1) : x1;
            }
            UNROLL for (int r = 0; r < R; r++) block32(bits, rows[r], c, gp[r], xa, xb, acc[r], T);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r0 + r] = reduce16(acc[r][t]);
}

/* Tiles of constant sizes (so the loops above unroll): 4 rows at a time, then the rest
 * one by one, for T tokens. */
#define ROWS(T)                                                                              \
    do {                                                                                     \
        int r = r0;                                                                          \
        for (; r + 4 <= r1; r += 4) tile(bits, a, rb, cols, r, xt, ldx, yt, ldy, 4, T);     \
        for (; r < r1; r++) tile(bits, a, rb, cols, r, xt, ldx, yt, ldy, 1, T);             \
    } while (0)

AI void matmul(int bits, const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx, int nt,
               float *y, int ldy) {
    const affine_weights *a = w;
    if (nt == 1) {
        int r = r0;
        for (; r + 8 <= r1; r += 8) tile(bits, a, rb, cols, r, x, ldx, y, ldy, 8, 1);
        for (; r < r1; r++) tile(bits, a, rb, cols, r, x, ldx, y, ldy, 1, 1);
        return;
    }
    for (int t = 0; t < nt; t += MAX_T) {
        const float *xt = x + (size_t)t * ldx;
        float *yt = y + (size_t)t * ldy;
        switch (nt - t < MAX_T ? nt - t : MAX_T) {
        case 4: ROWS(4); break;
        case 3: ROWS(3); break;
        case 2: ROWS(2); break;
        default: ROWS(1); break;
        }
    }
}

void affine4_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

#else
typedef int affine_avx512_not_built; /* keeps the translation unit non-empty */
#endif
