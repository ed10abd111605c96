/* avx512.c - AVX-512 (F, BW, VL, DQ) kernels with f32 activations.
 *
 * Compiled with its own ISA flags (see the Makefile) and entered only after
 * dispatch.c has checked the CPU and the OS (ZMM state). Only the fast-mode
 * table AVX512_VNNI uses VNNI (dispatch.c picks it when CPUID reports it); no
 * AVX512-BF16 instructions anywhere.
 *
 * Numerics (the contract in kernels.h): every y element has ONE accumulator
 * of 16 f32 lanes; lane i receives columns i, i+16, i+32, ... in order, by FMA,
 * and the lanes are summed by the fixed tree of reduce16(). Tiling over rows
 * and tokens only decides how many of these independent accumulators are live
 * at once, so a y element is bit-identical whatever the row range, the number
 * of tokens nt or the tile it fell in. avx2.c and neon.c emulate exactly this
 * 16-lane order with 2 x 8 and 4 x 4 lanes, so all three ISA tables give the
 * same bits (tested): llmgen's output does not depend on the machine's ISA.
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "affine_kernels.h" /* MLX affine kernels: affine_avx512.c */

#if defined(__x86_64__)

#include <immintrin.h>

#include "util.h"

const kernels *kernels_avx512_table(int vnni);

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* Decode (nt = 1) walks GEMV_R rows at once: 8 independent FMA chains and 8
 * weight streams, each activation vector loaded once for the 8 rows. Measured
 * on Zen 4, 1 thread, alternating A/B runs over 512 MiB of weights: 8 rows
 * read BF16 and Q8_0 15 to 35% faster than 4 rows (F32 and Q4_1 about equal),
 * 16 rows was slower, and software prefetch 256 B to 2 KB ahead did not help.
 * Prefill tiles are TILE_R rows x TILE_T tokens = 16 zmm accumulators, leaving
 * room for the decoded weights and the activations in the 32 registers. */
#define GEMV_R 8
#define TILE_R 4
#define TILE_T 4
#define MAX_R 8 /* the larger of GEMV_R and TILE_R */

/* ---- weights to f32 -------------------------------------------------------- */

/* 16 consecutive dense weights at p as f32; `m` masks a tail (zeroes the rest,
 * and masked-off lanes are never read, so a row may end at a page boundary). */
AI __m512 dense16(dtype dt, const uint8_t *p) {
    if (dt == DT_F32) return _mm512_loadu_ps(p);
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (dt == DT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

AI __m512 dense16_tail(dtype dt, const uint8_t *p, __mmask16 m) {
    if (dt == DT_F32) return _mm512_maskz_loadu_ps(m, p);
    __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if (dt == DT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* The fp16 scale at p broadcast to 16 lanes (word broadcast, then one conversion). */
AI __m512 f16_bcast(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_set1_epi16((short)rd_u16(p))); }

AI int block_bytes(dtype dt) { return dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : 20; }

/* The 32 weights of one block dequantized to f32: elements 0..15 in *lo,
 * 16..31 in *hi. The values are bit-identical to what gguf-py (and so HF
 * transformers) dequantizes: d*q and d*(q-8) are exact in f32, and d*q + m is
 * rounded once, here by the FMA that builds the table. 4-bit values go through
 * a 16-entry table of dequantized values with vpermps, which reads only the low
 * 4 bits of each index: the scale is applied once per 16 entries, not per weight. */
AI void block32(dtype dt, const uint8_t *blk, __m512 *lo, __m512 *hi) {
    if (dt == DT_Q8_0) {
        const uint8_t *q = blk + 2;
        __m512 d = f16_bcast(blk);
        *lo = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)q))));
        *hi = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(q + 16)))));
        return;
    }
    __m512 table;
    if (dt == DT_Q4_0) {
        table = _mm512_mul_ps(f16_bcast(blk), _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7));
    } else { /* d and m converted together: [d, m, d, m, ...] */
        __m512 dm = _mm512_cvtph_ps(_mm256_set1_epi32((int)rd_u32(blk)));
        table = _mm512_fmadd_ps(_mm512_moveldup_ps(dm),
                                _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                _mm512_movehdup_ps(dm));
    }
    const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
    __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)qs));
    *lo = _mm512_permutexvar_ps(v, table);                        /* byte j low nibble: element j */
    *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), table);  /* high nibble: element j + 16 */
}

/* ---- tiles: R rows x T tokens, R and T compile-time constants after inlining ---- */

/* The fixed lane-summing tree shared with avx2.c and neon.c: 16 -> 8 (lane i:
 * v[i+8] + v[i]) -> 4 (v[i+4] + v[i]) -> 2 (v[i+2] + v[i]) -> 1 (v[1] + v[0]). */
AI float reduce16(__m512 v) {
    __m256 s8 = _mm256_add_ps(_mm512_extractf32x8_ps(v, 1), _mm512_castps512_ps256(v));
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI void store_tile(__m512 acc[MAX_R][TILE_T], float *y, int ldy, int R, int T) {
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r] = reduce16(acc[r][t]);
}

AI void dense_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const size_t esz = dt == DT_F32 ? 4 : 2;
    __m512 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m512 xv[TILE_T];
        UNROLL for (int t = 0; t < T; t++) xv[t] = _mm512_loadu_ps(x + (size_t)t * ldx + c);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 wv = dense16(dt, w + r * rb + c * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    if (c < cols) { /* zero lanes add +0 to the sum: same order as a full vector */
        __mmask16 m = (__mmask16)((1u << (cols - c)) - 1);
        __m512 xv[TILE_T];
        UNROLL for (int t = 0; t < T; t++) xv[t] = _mm512_maskz_loadu_ps(m, x + (size_t)t * ldx + c);
        UNROLL for (int r = 0; r < R; r++) {
            __m512 wv = dense16_tail(dt, w + r * rb + c * esz, m);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* A block is dequantized once per row tile and used by every token of the
 * tile; the accumulation is then the dense one (16 columns per step, in
 * order), so a quantized row gives bit for bit what the F32 kernel gives on
 * its dequantized copy. */
AI void quant_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const int bb = block_bytes(dt);
    __m512 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    for (int b = 0; b < cols / 32; b++) {
        __m512 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            xl[t] = _mm512_loadu_ps(x + (size_t)t * ldx + 32 * b);
            xh[t] = _mm512_loadu_ps(x + (size_t)t * ldx + 32 * b + 16);
        }
        const uint8_t *blk0 = w + (size_t)b * bb;
        UNROLL for (int r = 0; r < R; r++) {
            __m512 lo, hi;
            block32(dt, blk0 + r * rb, &lo, &hi);
            UNROLL for (int t = 0; t < T; t++) {
                acc[r][t] = _mm512_fmadd_ps(lo, xl[t], acc[r][t]);
                acc[r][t] = _mm512_fmadd_ps(hi, xh[t], acc[r][t]);
            }
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* ---- instantiation and the row / token walk (shared by every ISA file) ---- */

#include "tiles.h"

/* ---- int8 activations on repacked weights (fast mode, layout in kernels.h) ---- */

/* Decode walks Q8_GEMV_R rows at once (each quad of activations loaded once for
 * them); prefill tiles are Q8_TILE_R rows x Q8_TILE_T tokens, each row's quad
 * of weights unpacked once per tile: 4 x 3 keeps the 12 accumulators, 12
 * unpacked weight / scale vectors and the activations in the 32 registers.
 * Software prefetch Q8_PF bytes ahead on every row stream. Measured on Zen 4,
 * 1B Q4_0 decode, alternating runs: no prefetch, the next row tile (4 KB
 * ahead), two tiles ahead and 8 decode rows instead of 4 were all within 3%
 * of this; decode reaches about half the streaming bandwidth, stalled on the
 * weight and scale loads (perf annotate), so the next step is the layout
 * (rows of a tile interleaved into one stream, scales beside them). */
#define Q8_GEMV_R 4
#define Q8_TILE_R 4
#define Q8_TILE_T 3
#define Q8_PF 1024

/* u8 x s8 products summed in 4s into 16 int32 lanes. With VNNI one vpdpbusd;
 * without, vpmaddubsw + vpmaddwd give the same integers: the u8 operand is a
 * nibble (0..15) or |int8| (<= 128) and the s8 one is in [-127, 127], so the
 * pairwise i16 sums (<= 2 * 128 * 127) never saturate. */
AI __m512i dot_u8s8(__m512i acc, __m512i u, __m512i s, int vnni) {
    if (vnni) return _mm512_dpbusd_epi32(acc, u, s);
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}

/* 4 f32 (one per block of a quad) to 16 lanes: lanes 4b..4b+3 = v[b], the
 * lanes vpdpbusd fills from block b of a quad half. */
AI __m512 quad_expand(__m128 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_castps128_ps512(v));
}

/* The f16 scales of blocks 4g..4g+k-1 of a row, as f32 in 16 lanes. */
AI __m512 quad_scales(const uint8_t *d, int g, int k) {
    __m128i h = k == 4 ? _mm_loadl_epi64((const __m128i *)(d + 8 * (size_t)g))
                       : _mm_maskz_loadu_epi16((__mmask8)((1u << k) - 1), d + 8 * (size_t)g);
    return quad_expand(_mm_cvtph_ps(h));
}

/* One quad (k <= 4 blocks) of a weight row, ready for dot_u8s8: u0 / u1 are the
 * unsigned operands for the first / second halves of the blocks; for Q8_0
 * they are |w| and neg0 / neg1 mark the negative weights, whose activations
 * get their sign flipped (w * x = |w| * (sign(w) x); -128 works: |-128| = 128u). */
typedef struct {
    __m512i u0, u1;
    __mmask64 neg0, neg1;
    __m512 sw; /* weight scales, expanded */
    __m512 mw; /* Q4_1: the mins, expanded */
} quad_w;

AI quad_w quad_load(dtype dt, const uint8_t *row, const uint8_t *d, const uint8_t *m4, int g, int k) {
    quad_w q;
    __mmask64 m = k == 4 ? ~(__mmask64)0 : (((__mmask64)1 << (16 * k)) - 1);
    if (dt == DT_Q8_0) {
        const uint8_t *p = row + 128 * (size_t)g;
        __m512i w0 = k == 4 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(m, p);
        __m512i w1 = k == 4 ? _mm512_loadu_si512(p + 64) : _mm512_maskz_loadu_epi8(m, p + 16 * k);
        q.neg0 = _mm512_movepi8_mask(w0);
        q.neg1 = _mm512_movepi8_mask(w1);
        q.u0 = _mm512_abs_epi8(w0);
        q.u1 = _mm512_abs_epi8(w1);
    } else {
        const uint8_t *p = row + 64 * (size_t)g;
        __m512i w = k == 4 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(m, p);
        __m512i lo4 = _mm512_set1_epi8(0x0f);
        q.u0 = _mm512_and_si512(w, lo4);                         /* byte j low nibble: element j */
        q.u1 = _mm512_and_si512(_mm512_srli_epi16(w, 4), lo4);   /* high nibble: element j + 16 */
        q.neg0 = q.neg1 = 0;
    }
    q.sw = quad_scales(d, g, k);
    if (dt == DT_Q4_1) q.mw = quad_scales(m4, g, k);
    return q;
}

/* One quad's terms added to acc, isum being the exact int32 lanes (4 per block):
 *   Q8_0  acc += isum * (sw dx)
 *   Q4_0  acc += (isum dx + sx) sw,   sx = -2 s: the block's -8 dw s spread over its 4 lanes
 *   Q4_1  acc += isum * (sw dx) + mw sx,   sx = s / 4
 * (the lane shares are exact powers of two, so the 4 lanes of a block sum to the
 * reference's term up to rounding). */
AI __m512 quad_fma(dtype dt, int vnni, const quad_w *w, __m512i x0, __m512i x1, __m512 dx, __m512 sx, __m512 acc) {
    if (dt == DT_Q8_0) {
        x0 = _mm512_mask_sub_epi8(x0, w->neg0, _mm512_setzero_si512(), x0);
        x1 = _mm512_mask_sub_epi8(x1, w->neg1, _mm512_setzero_si512(), x1);
    }
    __m512 i = _mm512_cvtepi32_ps(dot_u8s8(dot_u8s8(_mm512_setzero_si512(), w->u0, x0, vnni), w->u1, x1, vnni));
    if (dt == DT_Q4_0) return _mm512_fmadd_ps(_mm512_fmadd_ps(i, dx, sx), w->sw, acc);
    acc = _mm512_fmadd_ps(i, _mm512_mul_ps(w->sw, dx), acc);
    return dt == DT_Q4_1 ? _mm512_fmadd_ps(w->mw, sx, acc) : acc;
}

/* One quad for an R x T tile. */
AI void quad_tile(dtype dt, int vnni, const uint8_t *qs, size_t qrow, const uint8_t *d, const uint8_t *m4,
                  size_t drow, const q8_act *x, int t0, int g, int k, __m512 acc[MAX_R][TILE_T], int R, int T) {
    quad_w w[MAX_R];
    UNROLL for (int r = 0; r < R; r++) {
        if (k == 4) _mm_prefetch((const char *)qs + r * qrow + (dt == DT_Q8_0 ? 128 : 64) * (size_t)g + Q8_PF, _MM_HINT_T0);
        if (k == 4 && dt == DT_Q8_0)
            _mm_prefetch((const char *)qs + r * qrow + 128 * (size_t)g + Q8_PF + 64, _MM_HINT_T0);
        w[r] = quad_load(dt, qs + r * qrow, d + r * drow, m4 + r * drow, g, k);
    }
    UNROLL for (int t = 0; t < T; t++) {
        const int8_t *xq = x->q + (size_t)(t0 + t) * x->quads * 128 + 128 * (size_t)g;
        __m512i x0 = _mm512_loadu_si512(xq), x1 = _mm512_loadu_si512(xq + 64);
        size_t xo = (size_t)(t0 + t) * x->quads * 4 + 4 * (size_t)g;
        __m512 dx = quad_expand(_mm_loadu_ps(x->d + xo)), sx = _mm512_setzero_ps();
        if (dt != DT_Q8_0) sx = quad_expand(_mm_mul_ps(_mm_loadu_ps(x->s + xo), _mm_set1_ps(dt == DT_Q4_0 ? -2.0f : 0.25f)));
        UNROLL for (int r = 0; r < R; r++) acc[r][t] = quad_fma(dt, vnni, &w[r], x0, x1, dx, sx, acc[r][t]);
    }
}

/* y for rows [r, r + R) x tokens [t0, t0 + T). */
AI void q8_tile(dtype dt, int vnni, const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff,
                int nb, const q8_act *x, int t0, float *y, int ldy, int R, int T) {
    const uint8_t *m4 = d + moff; /* Q4_1 mins: the same place in the next f16 array */
    __m512 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int g = 0;
    for (; 4 * g + 4 <= nb; g++) quad_tile(dt, vnni, qs, qrow, d, m4, drow, x, t0, g, 4, acc, R, T);
    if (4 * g < nb) quad_tile(dt, vnni, qs, qrow, d, m4, drow, x, t0, g, nb - 4 * g, acc, R, T);
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * ldy + r] = reduce16(acc[r][t]);
}

typedef void (*q8_tile_fn)(const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff, int nb,
                           const q8_act *x, int t0, float *y, int ldy);
typedef struct {
    q8_tile_fn gemv, rt, r1, ot, o1; /* as tile_set */
} q8_tile_set;

#define Q8_TILE(DT, VNNI, FN, R, T)                                                                   \
    static void FN(const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff, int nb,  \
                   const q8_act *x, int t0, float *y, int ldy) {                                      \
        q8_tile(DT, VNNI, qs, qrow, d, drow, moff, nb, x, t0, y, ldy, R, T);                          \
    }
#define Q8_TILES(DT, VNNI, NAME)                                                                      \
    Q8_TILE(DT, VNNI, NAME##_gemv, Q8_GEMV_R, 1)                                                      \
    Q8_TILE(DT, VNNI, NAME##_rt, Q8_TILE_R, Q8_TILE_T)                                                \
    Q8_TILE(DT, VNNI, NAME##_r1, Q8_TILE_R, 1)                                                        \
    Q8_TILE(DT, VNNI, NAME##_ot, 1, Q8_TILE_T)                                                        \
    Q8_TILE(DT, VNNI, NAME##_o1, 1, 1)                                                                \
    static const q8_tile_set NAME##_tiles = {NAME##_gemv, NAME##_rt, NAME##_r1, NAME##_ot, NAME##_o1};

Q8_TILES(DT_Q4_0, 1, q8v_q4_0)
Q8_TILES(DT_Q4_1, 1, q8v_q4_1)
Q8_TILES(DT_Q8_0, 1, q8v_q8_0)
Q8_TILES(DT_Q4_0, 0, q8b_q4_0)
Q8_TILES(DT_Q4_1, 0, q8b_q4_1)
Q8_TILES(DT_Q8_0, 0, q8b_q8_0)

static void q8_rows(q8_tile_fn tt, q8_tile_fn t1, const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow,
                    size_t moff, int nb, const q8_act *x, float *y, int ldy) {
    int t = 0;
    for (; t + Q8_TILE_T <= x->nt; t += Q8_TILE_T) tt(qs, qrow, d, drow, moff, nb, x, t, y, ldy);
    for (; t < x->nt; t++) t1(qs, qrow, d, drow, moff, nb, x, t, y, ldy);
}

/* Every row and token goes through the same per-element arithmetic whatever
 * its tile: results do not depend on r0, r1 or nt. */
static void run_q8(const q8_tile_set *ts, dtype dt, const void *packed, int rows, int cols, int r0, int r1,
                   const q8_act *x, float *y, int ldy) {
    int nb = cols / 32;
    size_t qrow = (size_t)nb * (dt == DT_Q8_0 ? 32 : 16), drow = 2 * (size_t)nb, moff = drow * (size_t)rows;
    const uint8_t *qs = packed, *d = qs + qrow * (size_t)rows;
    int r = r0;
    if (x->nt == 1) {
        for (; r + Q8_GEMV_R <= r1; r += Q8_GEMV_R)
            ts->gemv(qs + r * qrow, qrow, d + r * drow, drow, moff, nb, x, 0, y + r, ldy);
    } else {
        for (; r + Q8_TILE_R <= r1; r += Q8_TILE_R)
            q8_rows(ts->rt, ts->r1, qs + r * qrow, qrow, d + r * drow, drow, moff, nb, x, y + r, ldy);
    }
    for (; r < r1; r++) q8_rows(ts->ot, ts->o1, qs + r * qrow, qrow, d + r * drow, drow, moff, nb, x, y + r, ldy);
}

#define MATMUL_Q8(NAME, DT)                                                                           \
    static void matmul_##NAME(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, \
                              int ldy) {                                                              \
        run_q8(&NAME##_tiles, DT, p, rows, cols, r0, r1, x, y, ldy);                                  \
    }
MATMUL_Q8(q8v_q4_0, DT_Q4_0)
MATMUL_Q8(q8v_q4_1, DT_Q4_1)
MATMUL_Q8(q8v_q8_0, DT_Q8_0)
MATMUL_Q8(q8b_q4_0, DT_Q4_0)
MATMUL_Q8(q8b_q4_1, DT_Q4_1)
MATMUL_Q8(q8b_q8_0, DT_Q8_0)

/* Bit-identical to scalar.c: the same max, the same f32 multiply and
 * round-to-nearest-even conversion (vcvtps2dq under the default MXCSR), the
 * sum in integers. */
static void quantize_act_avx512(const float *x, int ldx, int t0, int t1, const q8_act *a) {
    int nb = a->cols / 32, npad = a->quads * 4;
    const __m512 absmask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    for (int t = t0; t < t1; t++) {
        const float *xt = x + (size_t)t * ldx;
        int8_t *q = a->q + (size_t)t * a->quads * 128;
        float *d = a->d + (size_t)t * npad, *s = a->s + (size_t)t * npad;
        if (nb < npad) memset(q + 128 * (size_t)(a->quads - 1), 0, 128);
        for (int b = nb; b < npad; b++) d[b] = s[b] = 0.0f;
        for (int b = 0; b < nb; b++) {
            __m512 v0 = _mm512_loadu_ps(xt + 32 * b), v1 = _mm512_loadu_ps(xt + 32 * b + 16);
            float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_and_ps(v0, absmask), _mm512_and_ps(v1, absmask)));
            float id = amax > 0.0f ? 127.0f / amax : 0.0f;
            __m512 vid = _mm512_set1_ps(id), lim = _mm512_set1_ps(127.0f);
            __m512i q0 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v0, vid), -lim), lim));
            __m512i q1 = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v1, vid), -lim), lim));
            int8_t *dst = q + 128 * (size_t)(b / 4) + 16 * (size_t)(b % 4);
            _mm_storeu_si128((__m128i *)dst, _mm512_cvtsepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(dst + 64), _mm512_cvtsepi32_epi8(q1));
            d[b] = amax / 127.0f;
            s[b] = d[b] * (float)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        }
    }
}

/* ---- vector helpers ---------------------------------------------------------- */

/* Two accumulators (columns 32k..32k+15 and 32k+16..32k+31), the remainder in
 * 16-column steps into the first, zero-padded; then reduce16(s0 + s1). */
static float dot_avx512(const float *a, const float *b, int n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s0);
    }
    return reduce16(_mm512_add_ps(s0, s1));
}

/* Multiply then add (no FMA), so the result is bit-identical to scalar.c. */
static void axpy_avx512(float *y, float a, const float *x, int n) {
    __m512 va = _mm512_set1_ps(a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_mul_ps(va, _mm512_maskz_loadu_ps(m, x + i)));
        _mm512_mask_storeu_ps(y + i, m, v);
    }
}

#define AVX512_TABLE(NAME, Q8)                                                                      \
    static const kernels NAME = {                                                                   \
        .name = "avx512",                                                                           \
        .matmul =                                                                                   \
            {                                                                                       \
                [DT_F32] = matmul_f32,                                                              \
                [DT_F16] = matmul_f16,                                                              \
                [DT_BF16] = matmul_bf16,                                                            \
                [DT_Q8_0] = matmul_q8_0,                                                            \
                [DT_Q4_0] = matmul_q4_0,                                                            \
                [DT_Q4_1] = matmul_q4_1,                                                            \
                [DT_AFFINE4] = affine4_matmul_avx512, [DT_AFFINE8] = affine8_matmul_avx512,         \
            },                                                                                      \
        .quantize_act = quantize_act_avx512,                                                        \
        .matmul_q8 = {[DT_Q4_0] = matmul_##Q8##_q4_0, [DT_Q4_1] = matmul_##Q8##_q4_1,              \
                      [DT_Q8_0] = matmul_##Q8##_q8_0,                                               \
                      [DT_AFFINE4] = affine4_##Q8##_avx512, [DT_AFFINE8] = affine8_##Q8##_avx512},  \
        .dot = dot_avx512,                                                                          \
        .axpy = axpy_avx512,                                                                        \
    };

AVX512_TABLE(AVX512, q8b)      /* int8 dot products by vpmaddubsw + vpmaddwd */
AVX512_TABLE(AVX512_VNNI, q8v) /* ... by vpdpbusd */

/* The table, without any CPU check: dispatch.c calls this only after checking
 * AVX-512 F/BW/VL/DQ, and passes whether AVX512-VNNI is there too. */
const kernels *kernels_avx512_table(int vnni) { return vnni ? &AVX512_VNNI : &AVX512; }

#else
typedef int avx512_not_built; /* keeps the translation unit non-empty */
#endif
