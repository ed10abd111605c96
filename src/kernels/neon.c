/* neon.c - AArch64 Advanced SIMD kernels with f32 activations.
 *
 * NEON and the f16 <-> f32 conversions are part of the AArch64 baseline, so
 * this file needs no extra flags and dispatch.c needs no run-time check.
 *
 * Numerics: the same bits as avx512.c and avx2.c. Every y element has one
 * accumulator of 16 f32 lanes, held here as four q registers (lanes 4j..4j+3);
 * lane i receives columns i, i+16, i+32, ... in order, by FMA, and reduce16()
 * sums the lanes by avx512.c's tree. Tiles only decide how many accumulators
 * are live, so a y element does not depend on the row range, nt or its tile.
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "affine_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include "util.h"

const kernels *kernels_neon_table(void);

#define AI static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* One 16-lane accumulator: four q registers mirror one zmm of avx512.c. */
typedef struct {
    float32x4_t q[4]; /* lanes 0..3, 4..7, 8..11, 12..15 */
} v16;

/* Decode (nt = 1): 4 rows at once (16 accumulator registers, 4 weight
 * streams). Prefill: 2 rows x 2 tokens, also 16, leaving 16 of the 32
 * registers for a dequantized block and the activations. */
#define GEMV_R 4
#define TILE_R 2
#define TILE_T 2
#define MAX_R 4

/* ---- weights to f32 -------------------------------------------------------- */

AI float32x4_t dense4(dtype dt, const uint8_t *p) {
    /* Byte loads, reinterpreted: rows need not be aligned to their element size. */
    if (dt == DT_F32) return vreinterpretq_f32_u8(vld1q_u8(p));
    uint16x4_t h = vreinterpret_u16_u8(vld1_u8(p));
    if (dt == DT_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); /* bf16 */
}

static inline float f16_at(const uint8_t *p) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(rd_u16(p)))), 0);
}

AI int block_bytes(dtype dt) { return dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : 20; }

/* 16 signed bytes to 4 vectors of f32 (elements in order), dequantized:
 * d*q, or d*q + m rounded once (fused) when `affine`. */
AI void s8x16_dequant(int8x16_t v, float32x4_t d, float32x4_t m, int affine, float32x4_t *q) {
    int16x8_t a = vmovl_s8(vget_low_s8(v)), b = vmovl_high_s8(v);
    float32x4_t f[4] = {vcvtq_f32_s32(vmovl_s16(vget_low_s16(a))), vcvtq_f32_s32(vmovl_high_s16(a)),
                        vcvtq_f32_s32(vmovl_s16(vget_low_s16(b))), vcvtq_f32_s32(vmovl_high_s16(b))};
    UNROLL for (int k = 0; k < 4; k++) q[k] = affine ? vfmaq_f32(m, d, f[k]) : vmulq_f32(d, f[k]);
}

/* The 32 weights of one block dequantized to f32, q[k] holding elements
 * 4k..4k+3. The values are bit-identical to what gguf-py (and so HF
 * transformers) dequantizes: d*q and d*(q-8) are exact in f32, and d*q + m is
 * rounded once, by the FMA. */
AI void block32(dtype dt, const uint8_t *blk, float32x4_t q[8]) {
    float32x4_t d = vdupq_n_f32(f16_at(blk));
    if (dt == DT_Q8_0) {
        s8x16_dequant(vld1q_s8((const int8_t *)(blk + 2)), d, d, 0, q);
        s8x16_dequant(vld1q_s8((const int8_t *)(blk + 18)), d, d, 0, q + 4);
        return;
    }
    /* Byte j holds element j (low nibble) and j + 16 (high nibble); 4-bit values
     * (minus 8 for Q4_0) fit in a signed byte. */
    uint8x16_t v = vld1q_u8(blk + (dt == DT_Q4_0 ? 2 : 4));
    int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(0x0f)));
    int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
    if (dt == DT_Q4_0) {
        lo = vsubq_s8(lo, vdupq_n_s8(8));
        hi = vsubq_s8(hi, vdupq_n_s8(8));
    }
    float32x4_t m = dt == DT_Q4_1 ? vdupq_n_f32(f16_at(blk + 2)) : d;
    s8x16_dequant(lo, d, m, dt == DT_Q4_1, q);
    s8x16_dequant(hi, d, m, dt == DT_Q4_1, q + 4);
}

/* avx512.c's lane-summing tree: 16 -> 8 (lane i: v[i+8] + v[i]) -> 4 -> 2 -> 1. */
AI float reduce16(v16 a) {
    float32x4_t e0 = vaddq_f32(a.q[2], a.q[0]), e1 = vaddq_f32(a.q[3], a.q[1]); /* 8 lanes */
    float32x4_t f = vaddq_f32(e1, e0);                                          /* 4 lanes */
    float32x2_t g = vadd_f32(vget_high_f32(f), vget_low_f32(f));                /* 2 lanes */
    return vget_lane_f32(g, 1) + vget_lane_f32(g, 0);
}

AI v16 v16_zero(void) {
    v16 z;
    UNROLL for (int j = 0; j < 4; j++) z.q[j] = vdupq_n_f32(0.0f);
    return z;
}

/* acc += w * x for 16 columns, w and x as 4 vectors each. */
AI v16 v16_fma(const float32x4_t *w, const float32x4_t *x, v16 acc) {
    UNROLL for (int j = 0; j < 4; j++) acc.q[j] = vfmaq_f32(acc.q[j], w[j], x[j]);
    return acc;
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
        float32x4_t xv[TILE_T][4];
        UNROLL for (int t = 0; t < T; t++)
            UNROLL for (int j = 0; j < 4; j++) xv[t][j] = vld1q_f32(x + (size_t)t * ldx + c + 4 * j);
        UNROLL for (int r = 0; r < R; r++) {
            float32x4_t wv[4];
            UNROLL for (int j = 0; j < 4; j++) wv[j] = dense4(dt, w + r * rb + (c + 4 * j) * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wv, xv[t], acc[r][t]);
        }
    }
    if (c < cols) { /* the tail, zero-padded to 16: as avx512.c's masked loads */
        int n = cols - c;
        float32x4_t xv[TILE_T][4];
        UNROLL for (int t = 0; t < T; t++) {
            float xb[16] = {0};
            memcpy(xb, x + (size_t)t * ldx + c, (size_t)n * sizeof(float));
            UNROLL for (int j = 0; j < 4; j++) xv[t][j] = vld1q_f32(xb + 4 * j);
        }
        UNROLL for (int r = 0; r < R; r++) {
            uint8_t wb[64] = {0};
            memcpy(wb, w + r * rb + c * esz, (size_t)n * esz);
            float32x4_t wv[4];
            UNROLL for (int j = 0; j < 4; j++) wv[j] = dense4(dt, wb + 4 * j * esz);
            UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_fma(wv, xv[t], acc[r][t]);
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
            float32x4_t q[8];
            block32(dt, blk0 + r * rb, q);
            UNROLL for (int t = 0; t < T; t++) {
                const float *xt = xb + (size_t)t * ldx;
                UNROLL for (int h = 0; h < 2; h++) {
                    float32x4_t xv[4];
                    UNROLL for (int j = 0; j < 4; j++) xv[j] = vld1q_f32(xt + 16 * h + 4 * j);
                    acc[r][t] = v16_fma(q + 4 * h, xv, acc[r][t]);
                }
            }
        }
    }
    store_tile(acc, y, ldy, R, T);
}

/* ---- instantiation and the row / token walk (shared by every ISA file) ---- */

#include "tiles.h"

/* ---- vector helpers ---------------------------------------------------------- */

/* 16 floats at p as 4 vectors. */
AI void load16(const float *p, float32x4_t v[4]) {
    UNROLL for (int j = 0; j < 4; j++) v[j] = vld1q_f32(p + 4 * j);
}

/* avx512.c's order: accumulators for columns 32k..32k+15 and 32k+16..32k+31,
 * the remainder in 16-column steps into the first, zero-padded; then
 * reduce16(s0 + s1). */
static float dot_neon(const float *a, const float *b, int n) {
    v16 s0 = v16_zero(), s1 = v16_zero();
    float32x4_t va[4], vb[4];
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        load16(a + i, va), load16(b + i, vb);
        s0 = v16_fma(va, vb, s0);
        load16(a + i + 16, va), load16(b + i + 16, vb);
        s1 = v16_fma(va, vb, s1);
    }
    for (; i < n; i += 16) {
        float ab[16] = {0}, bb[16] = {0};
        int m = n - i < 16 ? n - i : 16;
        memcpy(ab, a + i, sizeof(float) * (size_t)m);
        memcpy(bb, b + i, sizeof(float) * (size_t)m);
        load16(ab, va), load16(bb, vb);
        s0 = v16_fma(va, vb, s0);
    }
    UNROLL for (int j = 0; j < 4; j++) s0.q[j] = vaddq_f32(s0.q[j], s1.q[j]);
    return reduce16(s0);
}

/* Multiply then add (no FMA), so the result is bit-identical to scalar.c. */
static void axpy_neon(float *y, float a, const float *x, int n) {
    float32x4_t va = vdupq_n_f32(a);
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_f32(va, vld1q_f32(x + i))));
    for (; i < n; i++) y[i] += a * x[i];
}

static const kernels NEON = {
    .name = "neon",
    .matmul =
        {
            [DT_F32] = matmul_f32,
            [DT_F16] = matmul_f16,
            [DT_BF16] = matmul_bf16,
            [DT_Q8_0] = matmul_q8_0,
            [DT_Q4_0] = matmul_q4_0,
            [DT_Q4_1] = matmul_q4_1,
            [DT_AFFINE4] = affine4_matmul_neon, /* affine_neon.c */
            [DT_AFFINE8] = affine8_matmul_neon,
        },
    .matmul_q8 = {[DT_AFFINE4] = affine4_q8_neon, [DT_AFFINE8] = affine8_q8_neon},
    .dot = dot_neon,
    .axpy = axpy_neon,
};

/* The table; dispatch.c hands it out on every AArch64 CPU. */
const kernels *kernels_neon_table(void) { return &NEON; }

#else
typedef int neon_not_built; /* keeps the translation unit non-empty */
#endif
