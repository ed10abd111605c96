/* affine_avx2.c - MLX affine 4-bit / 8-bit matmuls with AVX2 + FMA, f32 activations.
 *
 * Numerics are those of affine_kernels.h, bit for bit with affine_scalar.c: the
 * weights of a group are dequantized as mlx does (q * scale, then + bias, in f32)
 * and accumulated by FMA into one 16-lane accumulator per output, lane i taking
 * columns i, i+16, ...; reduce16 sums the lanes. The 16 lanes are two ymm halves
 * (columns i and i+8 of each 16), as in avx2.c, so the results equal the AVX-512
 * ones bit for bit. Weights are converted, multiplied by the scale and offset by
 * the bias in registers (AVX2 has no 16-entry permute), read straight from the file
 * layout, never repacked.
 *
 * Tiles: decode (nt = 1) walks 4 rows at once; prefill tiles are 4 rows x 4 tokens
 * (the 16 ymm registers spill a little there; the AVX-512 file is the fast path). */
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

/* 16 f32 lanes as two halves: lo = lanes 0..7, hi = lanes 8..15. */
typedef struct {
    __m256 lo, hi;
} v16;

AI float reduce16(v16 a) {
    __m256 s8 = _mm256_add_ps(a.hi, a.lo);
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

/* Broadcast scale and bias of one row's group. */
typedef struct {
    __m256 s, b;
} gparams;

/* The integers of 8 weights as f32, dequantized: q * scale, then + bias. */
AI __m256 deq8(__m256i q, gparams g) { return _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(q), g.s), g.b); }

/* The 16 weights of a row starting at value c (a multiple of 16). */
AI v16 dequant16(int bits, const uint8_t *row, int c, gparams g) {
    if (bits == 4) {
        const __m256i shifts = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
        const __m256i mask = _mm256_set1_epi32(0x0f);
        __m128i b = _mm_loadl_epi64((const __m128i *)(row + c / 2));
        __m128i d = _mm_unpacklo_epi8(b, b); /* each byte twice: low nibble, then high */
        __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(d), shifts), mask);
        __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(d, 8)), shifts), mask);
        return (v16){deq8(lo, g), deq8(hi, g)};
    }
    __m128i b = _mm_loadu_si128((const __m128i *)(row + c));
    return (v16){deq8(_mm256_cvtepu8_epi32(b), g), deq8(_mm256_cvtepu8_epi32(_mm_srli_si128(b, 8)), g)};
}

AI void tile(int bits, const affine_weights *a, size_t rb, int cols, int r0, const float *x, int ldx,
             float *y, int ldy, int R, int T) {
    int ng = cols / a->group;
    v16 acc[MAX_R][MAX_T];
    const uint8_t *rows[MAX_R];
    UNROLL for (int r = 0; r < R; r++) {
        rows[r] = (const uint8_t *)a->q + (size_t)(r0 + r) * rb;
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = (v16){_mm256_setzero_ps(), _mm256_setzero_ps()};
    }
    for (int g = 0; g < ng; g++) {
        gparams gp[MAX_R];
        UNROLL for (int r = 0; r < R; r++) {
            size_t i = (size_t)(r0 + r) * ng + g;
            gp[r] = (gparams){_mm256_set1_ps(param(a->scales, a->sdt, i)), _mm256_set1_ps(param(a->biases, a->sdt, i))};
        }
        for (int c = g * a->group; c < (g + 1) * a->group; c += 16) {
            __m256 xl[MAX_T], xh[MAX_T];
            UNROLL for (int t = 0; t < T; t++) {
                xl[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c);
                xh[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c + 8);
            }
            UNROLL for (int r = 0; r < R; r++) {
                v16 w = dequant16(bits, rows[r], c, gp[r]);
                UNROLL for (int t = 0; t < T; t++) {
                    acc[r][t].lo = _mm256_fmadd_ps(w.lo, xl[t], acc[r][t].lo);
                    acc[r][t].hi = _mm256_fmadd_ps(w.hi, xh[t], acc[r][t].hi);
                }
            }
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
        for (; r + 4 <= r1; r += 4) tile(bits, a, rb, cols, r, x, ldx, y, ldy, 4, 1);
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

void affine4_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

#else
typedef int affine_avx2_not_built; /* keeps the translation unit non-empty */
#endif
