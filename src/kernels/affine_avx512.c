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

#include "base/util.h"

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")
#define MAX_R 8
#define MAX_T 4

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
            gp[r] = group_params(bits, affine_param(a->scales, a->sdt, i), affine_param(a->biases, a->sdt, i));
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

#define AFFINE_GEMV_R 8 /* rows per decode tile */
#include "affine_tiles.h"

void affine4_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x,
                           int ldx, int nt, float *y, int ldy) {
    matmul(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

/* ---- int8 activations (fast mode): affine_kernels.h's q8 contract ------------------
 *
 * Per 64 bytes of a weight row (4-bit: 128 columns, one quad of q8_act; 8-bit: 64
 * columns, two blocks) the unsigned values meet the activations put in the same order
 * once per call (affine_q8_order): 4-bit, the low nibbles (even columns) and the high
 * nibbles (odd columns) each make one vpdpbusd with no shuffle of the weights. The
 * int32 lanes (4 per block for 4-bit, 8 for 8-bit) are converted, scaled by the block's
 * d and the row's group scale (a vpermps of the row's f32 scales, converted once per
 * row), and accumulated in 16 f32 lanes; the biases meet the per-group sums of s in one
 * short dot per row at the end. Every y element takes the same operations whatever the
 * tile, so results do not depend on the row split or the token count. */

#define Q8_MAX_COLS 16384 /* stack buffers below (~85 KB a call); wider matrices take the scalar route */
#define Q8_MAX_G (Q8_MAX_COLS / 32)
#ifndef Q8_R
#define Q8_R 4 /* rows per decode tile (measured: 4 beat 8, 2 about equal) */
#endif
/* Software prefetch of the tile Q8_PF_TILES ahead (0: none): one tile about doubles the
 * decode of the 1B-config MLX 4-bit model read in place at 1 thread; 2 or 4 tiles, NTA / T1
 * hints and prefetching the scales too are no better (`build/bench/llmgen_bench DIR -t 1`). */
#define Q8_PF_TILES 1
/* ... into L1 (T0) when the tile is at most this many bytes, else into L2 (T1): from
 * DRAM, T0 reads 4 KB tiles 1.5x faster than T1, and T1 wins from 16 KB (4-bit) or
 * 8 KB (8-bit) up (one thread, group 64, 2048 and 8192 columns). */
#define Q8_PF_L1_MAX 4096
#define Q8_T 4  /* tokens per prefill tile */
#define Q8_PR 4 /* rows per prefill tile */
#define Q8_MAXR (Q8_R > Q8_PR ? Q8_R : Q8_PR)

/* u8 x s8 products summed in 4s into 16 int32 lanes. Without VNNI, vpmaddubsw's pair
 * sums must not saturate: fine for nibbles (2 * 15 * 127), so 8-bit values are split
 * into nibbles, v = 16 hi + lo, each dotted apart. */
AI __m512i q8_dot(int bits, int vnni, __m512i acc, __m512i u, __m512i s) {
    if (vnni) return _mm512_dpbusd_epi32(acc, u, s);
    const __m512i one = _mm512_set1_epi16(1);
    if (bits == 4) return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), one));
    __m512i lo4 = _mm512_set1_epi8(0x0f);
    __m512i lo = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(u, lo4), s), one);
    __m512i hi = _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(u, 4), lo4), s), one);
    return _mm512_add_epi32(acc, _mm512_add_epi32(lo, _mm512_slli_epi32(hi, 4)));
}

/* n scales or biases (F32 / F16 / BF16) as f32, then 16 zeros (loads past the end). */
AI void q8_params_f32(const void *p, int sdt, size_t first, int n, float *out) {
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v;
        if (sdt == DT_F32) {
            v = _mm512_maskz_loadu_ps(m, (const float *)p + first + i);
        } else {
            __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + first + i);
            v = sdt == DT_F16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        }
        _mm512_storeu_ps(out + i, v);
    }
    _mm512_storeu_ps(out + n, _mm512_setzero_ps());
}

/* sum_g a[g] * b[g], g < n, both padded with zeros to a multiple of 16. */
AI float q8_short_dot(const float *a, const float *b, int n) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
    return reduce16(acc);
}

/* The activations of one token, in affine_q8_order's order, with its block scales
 * and per-group sums. */
typedef struct {
    const int8_t *q;   /* (quads * 128) */
    const float *d;    /* (quads * 4) block scales */
    const float *sg;   /* (groups + 16) zero-padded sums of s per group */
} q8_tok;

/* y for rows [r0, r0 + R) x T tokens. */
AI void q8_tile(int bits, int vnni, const affine_weights *a, int cols, int r0, const q8_tok *xt, float *y,
                int ldy, int R, int T) {
    size_t rb = (size_t)cols * bits / 8;
    int ng = cols / a->group, nc = (int)((rb + 63) / 64), tail = (int)(rb % 64);
    /* lane l of a chunk belongs to block l / 4 (4-bit) or l / 8 (8-bit) of it: its group, relative */
    int lb = bits == 4 ? 4 : 8, g = a->group, gshift = g == 32 ? 5 : g == 64 ? 6 : 7;
#define GI(l) ((l) / lb * 32 / g)
    const __m512i gidx = _mm512_setr_epi32(GI(0), GI(1), GI(2), GI(3), GI(4), GI(5), GI(6), GI(7), GI(8), GI(9),
                                           GI(10), GI(11), GI(12), GI(13), GI(14), GI(15));
#undef GI
    const __m512i bidx = bits == 4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)
                                   : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i lo4 = _mm512_set1_epi8(0x0f);
    float sc[Q8_MAXR][Q8_MAX_G + 16];
    const uint8_t *rows[Q8_MAXR];
    __m512 acc[Q8_MAXR][Q8_T];
    UNROLL for (int r = 0; r < R; r++) {
        rows[r] = (const uint8_t *)a->q + (size_t)(r0 + r) * rb;
        q8_params_f32(a->scales, a->sdt, (size_t)(r0 + r) * ng, ng, sc[r]);
        UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    }
    for (int c = 0; c < nc; c++) {
        __mmask64 m = c + 1 < nc || tail == 0 ? ~(__mmask64)0 : (((__mmask64)1 << tail) - 1);
        int base = (c << (bits == 4 ? 7 : 6)) >> gshift; /* first group of the chunk */
        __m512i u0[Q8_MAXR], u1[Q8_MAXR];
        __m512 scv[Q8_MAXR];
        UNROLL for (int r = 0; r < R; r++) {
            /* the rows of a tile are one contiguous run, and so are the next tile's: fetch
             * that run, R lines per chunk, so it is in cache by the time it is read */
            if (Q8_PF_TILES) {
                const char *pf = (const char *)rows[0] + Q8_PF_TILES * R * rb + 64 * ((size_t)c * R + r);
                if (R * rb <= Q8_PF_L1_MAX) _mm_prefetch(pf, _MM_HINT_T0);
                else _mm_prefetch(pf, _MM_HINT_T1);
            }
            __m512i w = _mm512_maskz_loadu_epi8(m, rows[r] + 64 * (size_t)c);
            u0[r] = bits == 4 ? _mm512_and_si512(w, lo4) : w;
            u1[r] = bits == 4 ? _mm512_and_si512(_mm512_srli_epi16(w, 4), lo4) : w;
            scv[r] = _mm512_permutexvar_ps(gidx, _mm512_loadu_ps(sc[r] + base));
        }
        UNROLL for (int t = 0; t < T; t++) {
            const int8_t *xq = xt[t].q + (size_t)c * (bits == 4 ? 128 : 64);
            __m512i x0 = _mm512_loadu_si512(xq), x1 = bits == 4 ? _mm512_loadu_si512(xq + 64) : x0;
            const float *d = xt[t].d + (size_t)c * (bits == 4 ? 4 : 2);
            /* 8-bit: only 2 floats (the last chunk's d may be the array's end) */
            __m128 d4 = bits == 4 ? _mm_loadu_ps(d) : _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)d));
            __m512 dx = _mm512_permutexvar_ps(bidx, _mm512_castps128_ps512(d4));
            UNROLL for (int r = 0; r < R; r++) {
                __m512i i = q8_dot(bits, vnni, _mm512_setzero_si512(), u0[r], x0);
                if (bits == 4) i = q8_dot(bits, vnni, i, u1[r], x1);
                acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(i), dx), scv[r], acc[r][t]);
            }
        }
    }
    UNROLL for (int r = 0; r < R; r++) {
        float bi[Q8_MAX_G + 16];
        q8_params_f32(a->biases, a->sdt, (size_t)(r0 + r) * ng, ng, bi);
        UNROLL for (int t = 0; t < T; t++)
            y[(size_t)t * ldy + r0 + r] = reduce16(acc[r][t]) + q8_short_dot(bi, xt[t].sg, ng);
    }
}

#define Q8_ROWS(T)                                                                                 \
    do {                                                                                           \
        int r = r0;                                                                                \
        for (; r + Q8_PR <= r1; r += Q8_PR) q8_tile(bits, vnni, a, cols, r, tok, yt, ldy, Q8_PR, T); \
        for (; r < r1; r++) q8_tile(bits, vnni, a, cols, r, tok, yt, ldy, 1, T);                   \
    } while (0)

AI void q8_matmul(int bits, int vnni, const void *w, int rows, int cols, int r0, int r1, const q8_act *x,
                  float *y, int ldy) {
    const affine_weights *a = w;
    if (cols > Q8_MAX_COLS) {
        (bits == 4 ? affine4_q8_scalar : affine8_q8_scalar)(w, rows, cols, r0, r1, x, y, ldy);
        return;
    }
    _Alignas(64) int8_t xq[Q8_T][Q8_MAX_COLS];
    float sg[Q8_T][Q8_MAX_G + 16];
    int ng = cols / a->group;
    for (int t0 = 0; t0 < x->nt; t0 += Q8_T) {
        int T = x->nt - t0 < Q8_T ? x->nt - t0 : Q8_T;
        q8_tok tok[Q8_T];
        for (int t = 0; t < T; t++) {
            affine_q8_order(bits, x, t0 + t, xq[t]);
            affine_q8_group_sums(x, t0 + t, a->group, sg[t]);
            memset(sg[t] + ng, 0, 16 * sizeof(float));
            tok[t] = (q8_tok){xq[t], x->d + (size_t)(t0 + t) * x->quads * 4, sg[t]};
        }
        float *yt = y + (size_t)t0 * ldy;
        if (x->nt == 1) {
            int r = r0;
            for (; r + Q8_R <= r1; r += Q8_R) q8_tile(bits, vnni, a, cols, r, tok, yt, ldy, Q8_R, 1);
            for (; r < r1; r++) q8_tile(bits, vnni, a, cols, r, tok, yt, ldy, 1, 1);
            continue;
        }
        switch (T) {
        case 4: Q8_ROWS(4); break;
        case 3: Q8_ROWS(3); break;
        case 2: Q8_ROWS(2); break;
        default: Q8_ROWS(1); break;
        }
    }
}

void affine4_q8b_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(4, 0, w, rows, cols, r0, r1, x, y, ldy);
}
void affine8_q8b_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(8, 0, w, rows, cols, r0, r1, x, y, ldy);
}
void affine4_q8v_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(4, 1, w, rows, cols, r0, r1, x, y, ldy);
}
void affine8_q8v_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    q8_matmul(8, 1, w, rows, cols, r0, r1, x, y, ldy);
}

#else
typedef int affine_avx512_not_built; /* keeps the translation unit non-empty */
#endif
