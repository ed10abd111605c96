/* avx512.c - AVX-512 (F, BW, VL, DQ) kernels with f32 activations.
 *
 * Compiled with its own ISA flags (see the Makefile) and entered only after
 * dispatch.c has checked the CPU and the OS (ZMM state). The file must not use
 * VNNI or AVX512-BF16 instructions: dispatch.c does not require them.
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

const kernels *kernels_avx512_table(void);

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

/* ---- instantiation and the row / token walk -------------------------------- */

typedef void (*tile_fn)(const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y,
                        int ldy);

/* Tiles used: GEMV_R x 1 (decode), TILE_R x TILE_T (prefill), TILE_R x 1
 * (leftover tokens), 1 x TILE_T and 1 x 1 (leftover rows). */
typedef struct {
    tile_fn gemv, rt, r1, ot, o1;
} tile_set;

#define TILE(KIND, DT, FN, R, T)                                                                 \
    static void FN(const uint8_t *w, size_t rb, int cols, const float *x, int ldx, float *y,    \
                   int ldy) {                                                                    \
        KIND##_tile(DT, w, rb, cols, x, ldx, y, ldy, R, T);                                      \
    }
#define TILES(KIND, DT, NAME)                                                                    \
    TILE(KIND, DT, NAME##_gemv, GEMV_R, 1)                                                       \
    TILE(KIND, DT, NAME##_rt, TILE_R, TILE_T)                                                    \
    TILE(KIND, DT, NAME##_r1, TILE_R, 1)                                                         \
    TILE(KIND, DT, NAME##_ot, 1, TILE_T)                                                         \
    TILE(KIND, DT, NAME##_o1, 1, 1)                                                              \
    static const tile_set NAME##_tiles = {NAME##_gemv, NAME##_rt, NAME##_r1, NAME##_ot, NAME##_o1};

TILES(dense, DT_F32, f32)
TILES(dense, DT_F16, f16)
TILES(dense, DT_BF16, bf16)
TILES(quant, DT_Q8_0, q8_0)
TILES(quant, DT_Q4_0, q4_0)
TILES(quant, DT_Q4_1, q4_1)

static void run_rows(tile_fn tt, tile_fn t1, const uint8_t *w, size_t rb, int cols, const float *x,
                     int ldx, int nt, float *y, int ldy) {
    int t = 0;
    for (; t + TILE_T <= nt; t += TILE_T) tt(w, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy, ldy);
    for (; t < nt; t++) t1(w, rb, cols, x + (size_t)t * ldx, ldx, y + (size_t)t * ldy, ldy);
}

/* Row tiles outside, token tiles inside: the weights of a row tile stay in L1/L2
 * while every token tile passes over them. */
static void run_tiles(const tile_set *s, const void *w, size_t rb, int cols, int r0, int r1,
                      const float *x, int ldx, int nt, float *y, int ldy) {
    const uint8_t *wb = w;
    int r = r0;
    if (nt == 1) {
        for (; r + GEMV_R <= r1; r += GEMV_R) s->gemv(wb + r * rb, rb, cols, x, ldx, y + r, ldy);
        for (; r < r1; r++) s->o1(wb + r * rb, rb, cols, x, ldx, y + r, ldy);
        return;
    }
    for (; r + TILE_R <= r1; r += TILE_R) run_rows(s->rt, s->r1, wb + r * rb, rb, cols, x, ldx, nt, y + r, ldy);
    for (; r < r1; r++) run_rows(s->ot, s->o1, wb + r * rb, rb, cols, x, ldx, nt, y + r, ldy);
}

#define MATMUL(NAME)                                                                              \
    static void matmul_##NAME(const void *w, size_t rb, int cols, int r0, int r1, const float *x, \
                              int ldx, int nt, float *y, int ldy) {                               \
        run_tiles(&NAME##_tiles, w, rb, cols, r0, r1, x, ldx, nt, y, ldy);                        \
    }

MATMUL(f32)
MATMUL(f16)
MATMUL(bf16)
MATMUL(q8_0)
MATMUL(q4_0)
MATMUL(q4_1)

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

static const kernels AVX512 = {
    .name = "avx512",
    .matmul =
        {
            [DT_F32] = matmul_f32,
            [DT_F16] = matmul_f16,
            [DT_BF16] = matmul_bf16,
            [DT_Q8_0] = matmul_q8_0,
            [DT_Q4_0] = matmul_q4_0,
            [DT_Q4_1] = matmul_q4_1,
            [DT_AFFINE4] = affine4_matmul_avx512,
            [DT_AFFINE8] = affine8_matmul_avx512,
        },
    .dot = dot_avx512,
    .axpy = axpy_avx512,
};

/* The table, without any CPU check: dispatch.c calls this only after checking. */
const kernels *kernels_avx512_table(void) { return &AVX512; }

#else
typedef int avx512_not_built; /* keeps the translation unit non-empty */
#endif
