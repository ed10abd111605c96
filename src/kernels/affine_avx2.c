/* affine_avx2.c - MLX affine 4-bit / 8-bit matmuls with AVX2 + FMA, f32 activations.
 *
 * Numerics are those of affine_kernels.h, bit for bit with affine_scalar.c: the
 * weights of a group are dequantized as mlx does (q * scale, then + bias, in f32)
 * and accumulated by FMA into one 16-lane accumulator per output, lane i taking
 * columns in the order affine_kernels.h fixes; reduce16 sums the lanes. The 16 lanes
 * are two ymm halves, as in avx2.c, so the results equal the AVX-512 ones bit for bit. Weights are converted, multiplied by the scale and offset by
 * the bias in registers (AVX2 has no 16-entry permute), read straight from the file
 * layout, never repacked.
 *
 * Tiles: decode (nt = 1) walks 4 rows at once; prefill tiles are 4 rows x 4 tokens
 * (the 16 ymm registers spill a little there; the AVX-512 file is the fast path). */
#include "affine_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "base/util.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define MAX_R 8
#define MAX_T 4

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

/* Even (odd = 0) or odd (odd = 1) elements of the 16 floats a, b, in order. */
AI __m256 deinterleave(__m256 a, __m256 b, int odd) {
    __m256 s = odd ? _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)) : _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* One block of 32 columns of a row into acc[0..T): 4-bit, xa = even and xb = odd
 * columns (byte k of the block in lane k: low nibble, then high nibble); 8-bit,
 * xa = columns 0..15, xb = 16..31 (see affine_kernels.h). */
AI void block32(int bits, const uint8_t *row, int c, gparams g, const v16 *xa, const v16 *xb, v16 *acc, int T) {
    v16 w0, w1;
    if (bits == 4) {
        const __m256i mask = _mm256_set1_epi32(0x0f);
        __m128i b = _mm_loadu_si128((const __m128i *)(row + c / 2));
        __m256i l = _mm256_cvtepu8_epi32(b), h = _mm256_cvtepu8_epi32(_mm_srli_si128(b, 8));
        w0 = (v16){deq8(_mm256_and_si256(l, mask), g), deq8(_mm256_and_si256(h, mask), g)};
        w1 = (v16){deq8(_mm256_srli_epi32(l, 4), g), deq8(_mm256_srli_epi32(h, 4), g)};
    } else {
        __m128i b0 = _mm_loadu_si128((const __m128i *)(row + c)), b1 = _mm_loadu_si128((const __m128i *)(row + c + 16));
        w0 = (v16){deq8(_mm256_cvtepu8_epi32(b0), g), deq8(_mm256_cvtepu8_epi32(_mm_srli_si128(b0, 8)), g)};
        w1 = (v16){deq8(_mm256_cvtepu8_epi32(b1), g), deq8(_mm256_cvtepu8_epi32(_mm_srli_si128(b1, 8)), g)};
    }
    UNROLL for (int t = 0; t < T; t++) {
        acc[t].lo = _mm256_fmadd_ps(w0.lo, xa[t].lo, acc[t].lo);
        acc[t].hi = _mm256_fmadd_ps(w0.hi, xa[t].hi, acc[t].hi);
    }
    UNROLL for (int t = 0; t < T; t++) {
        acc[t].lo = _mm256_fmadd_ps(w1.lo, xb[t].lo, acc[t].lo);
        acc[t].hi = _mm256_fmadd_ps(w1.hi, xb[t].hi, acc[t].hi);
    }
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
            gp[r] = (gparams){_mm256_set1_ps(affine_param(a->scales, a->sdt, i)), _mm256_set1_ps(affine_param(a->biases, a->sdt, i))};
        }
        for (int c = g * a->group; c < (g + 1) * a->group; c += 32) {
            v16 xa[MAX_T], xb[MAX_T];
            UNROLL for (int t = 0; t < T; t++) {
                const float *xt = x + (size_t)t * ldx + c;
                __m256 x0 = _mm256_loadu_ps(xt), x1 = _mm256_loadu_ps(xt + 8);
                __m256 x2 = _mm256_loadu_ps(xt + 16), x3 = _mm256_loadu_ps(xt + 24);
                if (bits == 4) {
                    xa[t] = (v16){deinterleave(x0, x1, 0), deinterleave(x2, x3, 0)};
                    xb[t] = (v16){deinterleave(x0, x1, 1), deinterleave(x2, x3, 1)};
                } else {
                    xa[t] = (v16){x0, x1};
                    xb[t] = (v16){x2, x3};
                }
            }
            UNROLL for (int r = 0; r < R; r++) block32(bits, rows[r], c, gp[r], xa, xb, acc[r], T);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r0 + r] = reduce16(acc[r][t]);
}

#define AFFINE_GEMV_R 4 /* rows per decode tile */
#include "affine_tiles.h"

void affine4_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

/* ---- int8 activations (fast mode): affine_kernels.h's q8 contract ------------------
 *
 * As affine_avx512.c's, on 32 weight bytes at a time (4-bit: 64 columns, two blocks,
 * their low nibbles against the even columns and high nibbles against the odd ones
 * in affine_q8_order's layout; 8-bit: one block). u8 x s8 products by vpmaddubsw +
 * vpmaddwd (8-bit values split into nibbles so the i16 pair sums never saturate). */

#define Q8_MAX_COLS 16384 /* stack buffers below (~45 KB a call); wider matrices take the scalar route */
#define Q8_MAX_G (Q8_MAX_COLS / 32)
#define Q8_R 4
#define Q8_T 2

AI __m256i q8_dot(int bits, __m256i u, __m256i s) {
    const __m256i one = _mm256_set1_epi16(1);
    if (bits == 4) return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), one);
    __m256i lo4 = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(u, lo4), s), one);
    __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(u, 4), lo4), s), one);
    return _mm256_add_epi32(lo, _mm256_slli_epi32(hi, 4));
}

/* n scales or biases as f32 into out, then 8 zeros. */
static void q8_params_f32(const void *p, int sdt, size_t first, int n, float *out) {
    for (int i = 0; i < n; i++) out[i] = affine_param(p, sdt, first + (size_t)i);
    for (int i = 0; i < 8; i++) out[n + i] = 0.0f;
}

AI float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    return _mm_cvtss_f32(_mm_add_ss(_mm_movehdup_ps(s), s));
}

typedef struct {
    const int8_t *q;   /* (quads * 128) in affine_q8_order's order */
    const float *d;    /* (quads * 4) block scales */
    const float *sg;   /* (groups) sums of d * s per group */
} q8_tok;

AI void q8_tile(int bits, const affine_weights *a, int cols, int r0, const q8_tok *xt, float *y, int ldy, int R,
                int T) {
    size_t rb = (size_t)cols * bits / 8;
    int ng = cols / a->group, nc = (int)((rb + 31) / 32), half = (int)(rb % 32) != 0, g = a->group;
    int gshift = g == 32 ? 5 : g == 64 ? 6 : 7;
    /* relative group of each lane: 4-bit, lanes 0..3 / 4..7 are the chunk's two blocks */
    const __m256i gidx = bits == 4 ? _mm256_setr_epi32(0, 0, 0, 0, 32 >> gshift, 32 >> gshift, 32 >> gshift, 32 >> gshift)
                                   : _mm256_setzero_si256();
    const __m256i bidx = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    float sc[Q8_R][Q8_MAX_G + 8];
    const uint8_t *rows[Q8_R];
    __m256 acc[Q8_R][Q8_T];
    UNROLL for (int r = 0; r < R; r++) {
        rows[r] = (const uint8_t *)a->q + (size_t)(r0 + r) * rb;
        q8_params_f32(a->scales, a->sdt, (size_t)(r0 + r) * ng, ng, sc[r]);
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    }
    for (int c = 0; c < nc; c++) {
        int last_half = half && c + 1 == nc; /* only 16 bytes left (4-bit) */
        /* first column of the chunk: 4-bit, quad c / 2, half c % 2 (64 columns each) */
        int col0 = bits == 4 ? c * 64 : c * 32, base = col0 >> gshift;
        __m256i u0[Q8_R], u1[Q8_R];
        __m256 scv[Q8_R];
        UNROLL for (int r = 0; r < R; r++) {
            _mm_prefetch((const char *)rows[0] + R * rb + 64 * ((size_t)c / 2 * R + r), _MM_HINT_T0);
            const uint8_t *p = rows[r] + 32 * (size_t)c;
            __m256i w = last_half ? _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)p))
                                  : _mm256_loadu_si256((const __m256i *)p);
            u0[r] = bits == 4 ? _mm256_and_si256(w, lo4) : w;
            u1[r] = bits == 4 ? _mm256_and_si256(_mm256_srli_epi16(w, 4), lo4) : w;
            scv[r] = _mm256_permutevar8x32_ps(_mm256_loadu_ps(sc[r] + base), gidx);
        }
        UNROLL for (int t = 0; t < T; t++) {
            /* 4-bit: evens at quad*128 + half*32, odds 64 bytes further; 8-bit: block c */
            const int8_t *xq = bits == 4 ? xt[t].q + (size_t)(c / 2) * 128 + (size_t)(c % 2) * 32 : xt[t].q + (size_t)c * 32;
            __m256i x0 = _mm256_loadu_si256((const __m256i *)xq);
            __m256i x1 = bits == 4 ? _mm256_loadu_si256((const __m256i *)(xq + 64)) : x0;
            const float *d = xt[t].d + (bits == 4 ? 2 * (size_t)c : (size_t)c);
            __m256 dx = bits == 4 ? _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)d))), bidx)
                                  : _mm256_set1_ps(d[0]);
            UNROLL for (int r = 0; r < R; r++) {
                __m256i i = q8_dot(bits, u0[r], x0);
                if (bits == 4) i = _mm256_add_epi32(i, q8_dot(bits, u1[r], x1));
                acc[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(i), dx), scv[r], acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float bi[Q8_MAX_G + 8];
        q8_params_f32(a->biases, a->sdt, (size_t)(r0 + r) * ng, ng, bi);
        UNROLL for (int t = 0; t < T; t++) {
            float side = 0.0f;
            for (int k = 0; k < ng; k++) side += bi[k] * xt[t].sg[k];
            y[(size_t)t * ldy + r0 + r] = hsum8(acc[r][t]) + side;
        }
    }
}

AI void q8_matmul(int bits, const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    const affine_weights *a = w;
    if (cols > Q8_MAX_COLS) {
        (bits == 4 ? affine4_q8_scalar : affine8_q8_scalar)(w, rows, cols, r0, r1, x, y, ldy);
        return;
    }
    _Alignas(32) int8_t xq[Q8_T][Q8_MAX_COLS];
    float sg[Q8_T][Q8_MAX_G];
    for (int t0 = 0; t0 < x->nt; t0 += Q8_T) {
        int T = x->nt - t0 < Q8_T ? x->nt - t0 : Q8_T;
        q8_tok tok[Q8_T];
        for (int t = 0; t < T; t++) {
            affine_q8_order(bits, x, t0 + t, xq[t]);
            affine_q8_group_sums(x, t0 + t, a->group, sg[t]);
            tok[t] = (q8_tok){xq[t], x->d + (size_t)(t0 + t) * x->quads * 4, sg[t]};
        }
        float *yt = y + (size_t)t0 * ldy;
        int r = r0;
        if (T == 2) {
            for (; r + Q8_R <= r1; r += Q8_R) q8_tile(bits, a, cols, r, tok, yt, ldy, Q8_R, 2);
            for (; r < r1; r++) q8_tile(bits, a, cols, r, tok, yt, ldy, 1, 2);
        } else {
            for (; r + Q8_R <= r1; r += Q8_R) q8_tile(bits, a, cols, r, tok, yt, ldy, Q8_R, 1);
            for (; r < r1; r++) q8_tile(bits, a, cols, r, tok, yt, ldy, 1, 1);
        }
    }
}

void affine4_q8_avx2(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(4, w, rows, cols, r0, r1, x, y, ldy);
}
void affine8_q8_avx2(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(8, w, rows, cols, r0, r1, x, y, ldy);
}

#else
typedef int affine_avx2_not_built; /* keeps the translation unit non-empty */
#endif
