/* avx2.c - AVX2 + FMA + F16C kernels with f32 activations.
 *
 * Compiled with its own ISA flags (see the Makefile) and entered only after
 * dispatch.c has checked the CPU and the OS (YMM state).
 *
 * Numerics: the same bits as avx512.c. Every y element has one accumulator of
 * 16 f32 lanes, held here as two ymm (lanes 0..7, 8..15); lane i receives
 * columns i, i+16, i+32, ... in order, by FMA, and reduce16() sums the lanes by
 * the tree avx512.c uses. Tiles only decide how many accumulators are live, so
 * a y element does not depend on the row range, nt or its tile (kernels.h).
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "affine_kernels.h" /* MLX affine kernels: affine_avx2.c */

#if defined(__x86_64__)

#include <immintrin.h>

#include "util.h"

const kernels *kernels_avx2_table(void);

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* One 16-lane accumulator: the register pair mirrors one zmm of avx512.c. */
typedef struct {
    __m256 lo, hi; /* lanes 0..7 and 8..15 */
} v16;

/* Decode (nt = 1): 4 rows at once, 8 ymm accumulators (4 independent FMA
 * chains per half). Prefill: 2 rows x 2 tokens, also 8 accumulators, leaving
 * 8 of the 16 registers for a dequantized block and the activations. */
#define GEMV_R 4
#define TILE_R 2
#define TILE_T 2
#define MAX_R 4

/* ---- weights to f32 -------------------------------------------------------- */

AI __m256 dense8(dtype dt, const uint8_t *p) {
    if (dt == DT_F32) return _mm256_loadu_ps((const float *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (dt == DT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16 */
}

/* The fp16 scale at p broadcast to 8 lanes. */
AI __m256 f16_bcast(const uint8_t *p) { return _mm256_cvtph_ps(_mm_set1_epi16((short)rd_u16(p))); }

AI int block_bytes(dtype dt) { return dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : 20; }

AI __m256 i32_to_ps(__m256i v) { return _mm256_cvtepi32_ps(v); }

/* The 32 weights of one block dequantized to f32, q[k] holding elements
 * 8k..8k+7. The values are bit-identical to what gguf-py (and so HF
 * transformers) dequantizes: d*q and d*(q-8) are exact in f32, and d*q + m is
 * rounded once, by the FMA. */
AI void block32(dtype dt, const uint8_t *blk, __m256 q[4]) {
    __m256 d = f16_bcast(blk);
    if (dt == DT_Q8_0) {
        UNROLL for (int k = 0; k < 4; k++) {
            __m128i b = _mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * k));
            q[k] = _mm256_mul_ps(d, i32_to_ps(_mm256_cvtepi8_epi32(b)));
        }
        return;
    }
    /* Byte j holds element j (low nibble) and j + 16 (high nibble). */
    const uint8_t *qs = blk + (dt == DT_Q4_0 ? 2 : 4);
    const __m256i low4 = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
    __m256 m = dt == DT_Q4_1 ? f16_bcast(blk + 2) : d;
    UNROLL for (int k = 0; k < 2; k++) {
        __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 8 * k)));
        __m256i lo = _mm256_and_si256(v, low4), hi = _mm256_srli_epi32(v, 4);
        if (dt == DT_Q4_0) {
            q[k] = _mm256_mul_ps(d, i32_to_ps(_mm256_sub_epi32(lo, eight)));
            q[k + 2] = _mm256_mul_ps(d, i32_to_ps(_mm256_sub_epi32(hi, eight)));
        } else {
            q[k] = _mm256_fmadd_ps(d, i32_to_ps(lo), m);
            q[k + 2] = _mm256_fmadd_ps(d, i32_to_ps(hi), m);
        }
    }
}

/* avx512.c's lane-summing tree: 16 -> 8 (lane i: v[i+8] + v[i]) -> 4 -> 2 -> 1. */
AI float reduce16(v16 a) {
    __m256 s8 = _mm256_add_ps(a.hi, a.lo);
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(s8, 1), _mm256_castps256_ps128(s8));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI v16 v16_zero(void) { return (v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }

/* acc += w * x for 16 columns (two halves). */
AI v16 v16_fma(__m256 wlo, __m256 whi, __m256 xlo, __m256 xhi, v16 acc) {
    return (v16){_mm256_fmadd_ps(wlo, xlo, acc.lo), _mm256_fmadd_ps(whi, xhi, acc.hi)};
}

/* ---- tiles: R rows x T tokens, R and T compile-time constants after inlining ---- */

AI void store_tile(v16 acc[MAX_R][TILE_T], float *y, int ldy, int R, int T) {
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)t * ldy + r] = reduce16(acc[r][t]);
}

AI void dense_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const size_t esz = dt == DT_F32 ? 4 : 2;
    v16 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_zero();
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m256 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            xl[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c);
            xh[t] = _mm256_loadu_ps(x + (size_t)t * ldx + c + 8);
        }
        UNROLL for (int r = 0; r < R; r++) {
            const uint8_t *p = w + r * rb + c * esz;
            __m256 wl = dense8(dt, p), wh = dense8(dt, p + 8 * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wl, wh, xl[t], xh[t], acc[r][t]);
        }
    }
    if (c < cols) { /* the tail, zero-padded to 16: as avx512.c's masked loads */
        int n = cols - c;
        __m256 xl[TILE_T], xh[TILE_T];
        UNROLL for (int t = 0; t < T; t++) {
            float xb[16] = {0};
            memcpy(xb, x + (size_t)t * ldx + c, (size_t)n * sizeof(float));
            xl[t] = _mm256_loadu_ps(xb);
            xh[t] = _mm256_loadu_ps(xb + 8);
        }
        UNROLL for (int r = 0; r < R; r++) {
            uint8_t wb[64] = {0};
            memcpy(wb, w + r * rb + c * esz, (size_t)n * esz);
            __m256 wl = dense8(dt, wb), wh = dense8(dt, wb + 8 * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wl, wh, xl[t], xh[t], acc[r][t]);
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* A block is dequantized once per row tile and used by every token of the
 * tile; columns 0..15 then 16..31 go into the accumulator as in dense_tile,
 * so a quantized row gives bit for bit what the F32 kernel gives on its
 * dequantized copy. */
AI void quant_tile(dtype dt, const uint8_t *w, size_t rb, int cols, const float *x, int ldx,
                   float *y, int ldy, int R, int T) {
    const int bb = block_bytes(dt);
    v16 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_zero();
    for (int b = 0; b < cols / 32; b++) {
        const float *xb = x + 32 * (size_t)b;
        const uint8_t *blk0 = w + (size_t)b * bb;
        UNROLL for (int r = 0; r < R; r++) {
            __m256 q[4];
            block32(dt, blk0 + r * rb, q);
            UNROLL for (int t = 0; t < T; t++) {
                const float *xt = xb + (size_t)t * ldx;
                acc[r][t] = v16_fma(q[0], q[1], _mm256_loadu_ps(xt), _mm256_loadu_ps(xt + 8), acc[r][t]);
                acc[r][t] = v16_fma(q[2], q[3], _mm256_loadu_ps(xt + 16), _mm256_loadu_ps(xt + 24), acc[r][t]);
            }
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* ---- instantiation and the row / token walk (shared by every ISA file) ---- */

#include "tiles.h"

/* ---- vector helpers ---------------------------------------------------------- */

/* avx512.c's order: accumulators for columns 32k..32k+15 and 32k+16..32k+31,
 * the remainder in 16-column steps into the first, zero-padded; then
 * reduce16(s0 + s1). */
static float dot_avx2(const float *a, const float *b, int n) {
    v16 s0 = v16_zero(), s1 = v16_zero();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = v16_fma(_mm256_loadu_ps(a + i), _mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i),
                     _mm256_loadu_ps(b + i + 8), s0);
        s1 = v16_fma(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 16),
                     _mm256_loadu_ps(b + i + 24), s1);
    }
    for (; i < n; i += 16) {
        float ab[16] = {0}, bb[16] = {0};
        int m = n - i < 16 ? n - i : 16;
        memcpy(ab, a + i, sizeof(float) * (size_t)m);
        memcpy(bb, b + i, sizeof(float) * (size_t)m);
        s0 = v16_fma(_mm256_loadu_ps(ab), _mm256_loadu_ps(ab + 8), _mm256_loadu_ps(bb), _mm256_loadu_ps(bb + 8), s0);
    }
    return reduce16((v16){_mm256_add_ps(s0.lo, s1.lo), _mm256_add_ps(s0.hi, s1.hi)});
}

/* ---- int8 activations on repacked weights (fast mode, layout in kernels.h) ---- */

/* A quad (4 blocks) is handled as two ymm halves: half h holds blocks 2h and
 * 2h+1, 4 int32 lanes each. Decode walks Q8_GEMV_R rows at once; prefill tiles
 * are Q8_TILE_R x Q8_TILE_T with one f32 accumulator each (both halves add into
 * it after scaling). Not bit-identical to avx512.c (another lane order): fast
 * mode promises only the tested tolerance against scalar.c, and results that
 * do not depend on the thread count. */
#define Q8_GEMV_R 4
#define Q8_TILE_R 2
#define Q8_TILE_T 2
#define Q8_PF 1024

/* u8 x s8 in 4s into 8 int32 lanes, by vpmaddubsw + vpmaddwd: the u8 operand is
 * a nibble or |int8| (<= 128), the s8 one in [-127, 127], so no i16 saturates. */
AI __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

/* Values of blocks 2h, 2h+1 (v[2h], v[2h+1]) spread over the lanes of their half. */
AI __m256 half_expand(__m128 v, int h) {
    __m256i idx = h ? _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3) : _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(v), idx);
}

/* 4 f16 of a quad (k <= 4 valid) as f32. */
AI __m128 quad_f16(const uint8_t *p, int k) {
    if (k == 4) return _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
    uint16_t h[8] = {0};
    memcpy(h, p, 2 * (size_t)k);
    return _mm_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
}

typedef struct {
    __m256i u0[2], u1[2]; /* per half: unsigned operands for the blocks' first / second halves */
    __m256i sg0[2], sg1[2]; /* Q8_0: the weights, whose signs go onto the activations */
    __m128 sw, mw;        /* scales (and Q4_1 mins) of the quad's 4 blocks */
} quad_w2;

AI quad_w2 quad_load2(dtype dt, const uint8_t *row, const uint8_t *d, const uint8_t *m4, int g, int k) {
    quad_w2 q;
    uint8_t tail[128];
    if (dt == DT_Q8_0) {
        const uint8_t *p = row + 128 * (size_t)g;
        if (k < 4) { /* first halves to 0, second halves to 64, zeros after */
            memset(tail, 0, sizeof tail);
            memcpy(tail, p, 16 * (size_t)k);
            memcpy(tail + 64, p + 16 * k, 16 * (size_t)k);
            p = tail;
        }
        for (int h = 0; h < 2; h++) {
            q.sg0[h] = _mm256_loadu_si256((const __m256i *)(p + 32 * h));
            q.sg1[h] = _mm256_loadu_si256((const __m256i *)(p + 64 + 32 * h));
            q.u0[h] = _mm256_abs_epi8(q.sg0[h]);
            q.u1[h] = _mm256_abs_epi8(q.sg1[h]);
        }
    } else {
        const uint8_t *p = row + 64 * (size_t)g;
        if (k < 4) {
            memset(tail, 0, 64);
            memcpy(tail, p, 16 * (size_t)k);
            p = tail;
        }
        __m256i lo4 = _mm256_set1_epi8(0x0f);
        for (int h = 0; h < 2; h++) {
            __m256i w = _mm256_loadu_si256((const __m256i *)(p + 32 * h));
            q.u0[h] = _mm256_and_si256(w, lo4);
            q.u1[h] = _mm256_and_si256(_mm256_srli_epi16(w, 4), lo4);
        }
    }
    q.sw = quad_f16(d + 8 * (size_t)g, k);
    q.mw = dt == DT_Q4_1 ? quad_f16(m4 + 8 * (size_t)g, k) : _mm_setzero_ps();
    return q;
}

/* The same terms as avx512.c's quad_fma, per half. */
AI __m256 quad_fma2(dtype dt, const quad_w2 *w, const int8_t *xq, __m128 dx, __m128 sx, __m256 acc) {
    for (int h = 0; h < 2; h++) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(xq + 32 * h));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(xq + 64 + 32 * h));
        if (dt == DT_Q8_0) {
            x0 = _mm256_sign_epi8(x0, w->sg0[h]);
            x1 = _mm256_sign_epi8(x1, w->sg1[h]);
        }
        __m256 i = _mm256_cvtepi32_ps(dot_u8s8(dot_u8s8(_mm256_setzero_si256(), w->u0[h], x0), w->u1[h], x1));
        __m256 sw = half_expand(w->sw, h), dxh = half_expand(dx, h);
        if (dt == DT_Q4_0) {
            acc = _mm256_fmadd_ps(_mm256_fmadd_ps(i, dxh, half_expand(sx, h)), sw, acc);
        } else {
            acc = _mm256_fmadd_ps(i, _mm256_mul_ps(sw, dxh), acc);
            if (dt == DT_Q4_1) acc = _mm256_fmadd_ps(half_expand(w->mw, h), half_expand(sx, h), acc);
        }
    }
    return acc;
}

AI float reduce8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    s = _mm_add_ps(_mm_movehl_ps(s, s), s);
    s = _mm_add_ss(_mm_movehdup_ps(s), s);
    return _mm_cvtss_f32(s);
}

AI void q8_tile(dtype dt, const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff, int nb,
                const q8_act *x, int t0, float *y, int ldy, int R, int T) {
    __m256 acc[Q8_GEMV_R][Q8_TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = _mm256_setzero_ps();
    int nq = (nb + 3) / 4;
    for (int g = 0; g < nq; g++) {
        int k = nb - 4 * g < 4 ? nb - 4 * g : 4;
        quad_w2 w[Q8_GEMV_R];
        UNROLL for (int r = 0; r < R; r++) {
            _mm_prefetch((const char *)qs + r * qrow + (dt == DT_Q8_0 ? 128 : 64) * (size_t)g + Q8_PF, _MM_HINT_T0);
            w[r] = quad_load2(dt, qs + r * qrow, d + r * drow, d + r * drow + moff, g, k);
        }
        UNROLL for (int t = 0; t < T; t++) {
            size_t xo = (size_t)(t0 + t) * x->quads * 4 + 4 * (size_t)g;
            __m128 dx = _mm_loadu_ps(x->d + xo);
            __m128 sx = _mm_mul_ps(_mm_loadu_ps(x->s + xo), _mm_set1_ps(dt == DT_Q4_0 ? -2.0f : 0.25f));
            const int8_t *xq = x->q + (size_t)(t0 + t) * x->quads * 128 + 128 * (size_t)g;
            UNROLL for (int r = 0; r < R; r++) acc[r][t] = quad_fma2(dt, &w[r], xq, dx, sx, acc[r][t]);
        }
    }
    UNROLL for (int r = 0; r < R; r++)
        UNROLL for (int t = 0; t < T; t++) y[(size_t)(t0 + t) * ldy + r] = reduce8(acc[r][t]);
}

typedef void (*q8_tile_fn)(const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff, int nb,
                           const q8_act *x, int t0, float *y, int ldy);
typedef struct {
    q8_tile_fn gemv, rt, r1, ot, o1;
} q8_tile_set;

#define Q8_TILE(DT, FN, R, T)                                                                         \
    static void FN(const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow, size_t moff, int nb,  \
                   const q8_act *x, int t0, float *y, int ldy) {                                      \
        q8_tile(DT, qs, qrow, d, drow, moff, nb, x, t0, y, ldy, R, T);                                \
    }
#define Q8_TILES(DT, NAME)                                                                            \
    Q8_TILE(DT, NAME##_gemv, Q8_GEMV_R, 1)                                                            \
    Q8_TILE(DT, NAME##_rt, Q8_TILE_R, Q8_TILE_T)                                                      \
    Q8_TILE(DT, NAME##_r1, Q8_TILE_R, 1)                                                              \
    Q8_TILE(DT, NAME##_ot, 1, Q8_TILE_T)                                                              \
    Q8_TILE(DT, NAME##_o1, 1, 1)                                                                      \
    static const q8_tile_set NAME##_tiles = {NAME##_gemv, NAME##_rt, NAME##_r1, NAME##_ot, NAME##_o1};

Q8_TILES(DT_Q4_0, q8_q4_0)
Q8_TILES(DT_Q4_1, q8_q4_1)
Q8_TILES(DT_Q8_0, q8_q8_0)

static void q8_rows(q8_tile_fn tt, q8_tile_fn t1, const uint8_t *qs, size_t qrow, const uint8_t *d, size_t drow,
                    size_t moff, int nb, const q8_act *x, float *y, int ldy) {
    int t = 0;
    for (; t + Q8_TILE_T <= x->nt; t += Q8_TILE_T) tt(qs, qrow, d, drow, moff, nb, x, t, y, ldy);
    for (; t < x->nt; t++) t1(qs, qrow, d, drow, moff, nb, x, t, y, ldy);
}

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
MATMUL_Q8(q8_q4_0, DT_Q4_0)
MATMUL_Q8(q8_q4_1, DT_Q4_1)
MATMUL_Q8(q8_q8_0, DT_Q8_0)

/* Multiply then add (no FMA), so the result is bit-identical to scalar.c. */
static void axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 va = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
    for (; i < n; i++) y[i] += a * x[i];
}

static const kernels AVX2 = {
    .name = "avx2",
    .matmul =
        {
            [DT_F32] = matmul_f32,
            [DT_F16] = matmul_f16,
            [DT_BF16] = matmul_bf16,
            [DT_Q8_0] = matmul_q8_0,
            [DT_Q4_0] = matmul_q4_0,
            [DT_Q4_1] = matmul_q4_1,
            [DT_AFFINE4] = affine4_matmul_avx2,
            [DT_AFFINE8] = affine8_matmul_avx2,
        },
    .matmul_q8 = {[DT_Q4_0] = matmul_q8_q4_0, [DT_Q4_1] = matmul_q8_q4_1, [DT_Q8_0] = matmul_q8_q8_0},
    .dot = dot_avx2,
    .axpy = axpy_avx2,
};

/* The table, without any CPU check: dispatch.c calls this only after checking. */
const kernels *kernels_avx2_table(void) { return &AVX2; }

#else
typedef int avx2_not_built; /* keeps the translation unit non-empty */
#endif
