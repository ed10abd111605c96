/* neon.c - AArch64 Advanced SIMD kernels: f32 activations, and int8 activations
 * on repacked Q4_0 / Q4_1 / Q8_0 weights (fast mode, second half of the file).
 *
 * NEON and the f16 <-> f32 conversions are part of the AArch64 baseline, so
 * this file needs no extra flags and dispatch.c needs no run-time check; the
 * int8 kernels use sdot only where the CPU has it (checked at run time).
 *
 * Numerics: the same bits as avx512.c and avx2.c. Every y element has one
 * accumulator of 16 f32 lanes, held here as four q registers (lanes 4j..4j+3);
 * lane i receives columns i, i+16, i+32, ... in order, by FMA, and reduce16()
 * sums the lanes by avx512.c's tree. Tiles only decide how many accumulators
 * are live, so a y element does not depend on the row range, nt or its tile.
 * Quantized blocks are dequantized in registers to exactly the f32 values
 * gguf-py produces, then accumulated like F32 rows (see block32). */
#include "kernels.h"

#include "dequant.h"

#include "affine_kernels.h"
#include "inplace_kernels.h" /* GGUF types read in place: inplace_neon.c */

#if defined(__aarch64__)

#include <arm_neon.h>
#include <sys/auxv.h>

#include "base/util.h"

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
AI void block32(dtype dt, const uint8_t *blk, int j, float32x4_t q[8]) {
    if (dt != DT_Q8_0 && dt != DT_Q4_0 && dt != DT_Q4_1) { /* the table's decoder (dequant.h) */
        float v[32];
        dq_ref32(dt, blk, j, v);
        UNROLL for (int k = 0; k < 8; k++) q[k] = vld1q_f32(v + 4 * k);
        return;
    }
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
    v16 acc[MAX_R][TILE_T];
    UNROLL for (int r = 0; r < R; r++) UNROLL for (int t = 0; t < T; t++) acc[r][t] = v16_zero();
    for (int b = 0; b < cols / 32; b++) {
        const float *xb = x + 32 * (size_t)b;
        int j = 0;
        const uint8_t *blk0 = dq_sub_block(dt, w, b, &j);
        UNROLL for (int r = 0; r < R; r++) {
            float32x4_t q[8];
            block32(dt, blk0 + r * rb, j, q);
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

/* ---- int8 activations on repacked Q4_0 / Q4_1 / Q8_0 (fast mode) ------------
 *
 * The layout (kernels.h, "Repacked weights") was cut for vpdpbusd, and it suits
 * the by-element sdot just as well: in a chunk, the 16 bytes of vector v, block
 * bi of half h are 4 rows x 4 weight bytes, and `sdot acc, w, x.4b[v % 4]`
 * against block bi's activation half multiplies each row's 4 bytes by the same
 * 4 activations, so acc's lane i is row 4h + i's partial sum of block bi: no
 * horizontal adds, and each row keeps its own lane. Without the dot-product
 * extension, vmull_s8 + vpadalq_s16 give the same integers (8 products in two
 * widening pair sums, rows paired up by one vpaddq_s32 per block).
 *
 * sdot multiplies signed by signed, so the stored forms are brought to the
 * true weight integers with exact integer terms: Q8_0 bytes (w + 128) by
 * flipping the top bit, Q4_0 nibbles (w + 8) by adding -8 * s to the block sum
 * (s = q8_act's exact sum of the block's activations). Q4_1 nibbles are the
 * weights. Every integer block sum is then the scalar reference's, and below
 * 2^24, so its f32 conversion is exact.
 *
 * f32 combination: per row and token one accumulator, fed in quad then block
 * order by fma(isum, dw * dx) (then, for Q4_1, fma(m, dx * s)). That order
 * depends only on cols: decode (T = 1) and prefill tiles (T tokens sharing the
 * unpacked weights) give the same bits, as does any row split (a partial
 * group is widened with zero rows, and lanes never mix). */

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

/* Prefill token tile: per (half, block) 8 weight vectors stay in registers
 * while 4 tokens use them (8 of the 32 registers are the f32 accumulators).
 * Chosen by register count, not measured (no ARM machine here; qemu says
 * nothing about speed). With GCC 12 -O2 the disassembly shows no vector spills
 * in the tile body, only around the partial group's widening (a call). */
#define Q8_TILE_T 4
_Static_assert(Q8_TILE_T == 4, "q8_group_tokens' remainder switch covers 1 to 3 tokens");

/* Decode prefetches this far ahead in each group's stream, into L2: the value
 * that doubled the DRAM streaming rate of the x86 GEMV (avx512.c, Q8_PF).
 * Not measured on an ARM core. */
#define Q8_PF 16384

/* acc lane i += sum_k w[4i + k] * x[4 lane + k], k = 0..3 (one sdot). */
typedef int32x4_t (*sdot_fn)(int32x4_t acc, int8x16_t w, int8x16_t x, int lane);

/* Only this function contains the extension's instruction. The generic code
 * below receives it as a pointer that is a constant in the dotprod entry
 * points, which carry the same target attribute, so it is inlined there; the
 * plain entry points pass NULL and never reach it (GCC refuses to inline the
 * intrinsic into functions without the attribute, hence the pointer). */
#define DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
DOTPROD AI int32x4_t sdot_lane(int32x4_t acc, int8x16_t w, int8x16_t x, int lane) {
    switch (lane) { /* the lane must be an immediate */
    case 0: return vdotq_laneq_s32(acc, w, x, 0);
    case 1: return vdotq_laneq_s32(acc, w, x, 1);
    case 2: return vdotq_laneq_s32(acc, w, x, 2);
    default: return vdotq_laneq_s32(acc, w, x, 3);
    }
}

AI int32x4_t dup_dword(int32x4_t v, int lane) {
    switch (lane) {
    case 0: return vdupq_laneq_s32(v, 0);
    case 1: return vdupq_laneq_s32(v, 1);
    case 2: return vdupq_laneq_s32(v, 2);
    default: return vdupq_laneq_s32(v, 3);
    }
}

/* A block's integer sums for 4 rows. With sdot, lo is the sum itself; without,
 * lo holds pair sums of rows 0 and 1 (2 lanes each), hi those of rows 2 and 3. */
typedef struct {
    int32x4_t lo, hi;
} isum4;

/* The plain form multiplies 8 bytes at a time into i16: |w| <= 128 and
 * |q| <= 127, so a product fits and the pair sums are formed in i32. */
AI isum4 isum4_dot(sdot_fn sd, isum4 c, int8x16_t w, int8x16_t x, int lane) {
    if (sd) {
        c.lo = sd(c.lo, w, x, lane);
        return c;
    }
    int8x16_t xb = vreinterpretq_s8_s32(dup_dword(vreinterpretq_s32_s8(x), lane));
    c.lo = vpadalq_s16(c.lo, vmull_s8(vget_low_s8(w), vget_low_s8(xb)));
    c.hi = vpadalq_s16(c.hi, vmull_high_s8(w, xb));
    return c;
}

/* Rows 0..3 of a block's sums, plus the offset term `off` (exact integers). */
AI int32x4_t isum4_rows(sdot_fn sd, isum4 c, int32_t off) {
    return vaddq_s32(sd ? c.lo : vpaddq_s32(c.lo, c.hi), vdupq_n_s32(off));
}

/* The weights of block bi, half h of a chunk of 8 rows x kb blocks, as signed
 * bytes: Q8_0, vectors 0..7 (bytes 4v..4v+3 of the 32); Q4, vectors 0..3 the
 * low nibbles (elements 4v..4v+3) and 4..7 the high ones (elements 16 + 4v..);
 * Q5 the same with each nibble's fifth bit inserted above it (vsli), taken from
 * bit v (low nibbles) or 4 + v (high) of the fifth-bit vector's bytes. */
AI void block_weights(dtype dt, const uint8_t *ck, int kb, int h, int bi, int8x16_t w[8]) {
    const int nv = dt == DT_Q8_0 ? 8 : 4;
    const uint8_t *p = ck + (size_t)q8w_hdr(dt) * Q8W_GROUP * kb + (size_t)h * 4 * kb * q8w_nv(dt) * 4 + 16 * bi;
    UNROLL for (int v = 0; v < nv; v++) {
        uint8x16_t raw = vld1q_u8(p + (size_t)v * kb * 16);
        if (dt == DT_Q8_0) {
            w[v] = vreinterpretq_s8_u8(veorq_u8(raw, vdupq_n_u8(0x80))); /* w + 128 -> w */
        } else if (q8w_five(dt)) {
            uint8x16_t hb = vld1q_u8(p + (size_t)4 * kb * 16), one = vdupq_n_u8(1);
            uint8x16_t bl = vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)-v)), one);
            uint8x16_t bh = vandq_u8(vshlq_u8(hb, vdupq_n_s8((int8_t)(-4 - v))), one);
            w[v] = vreinterpretq_s8_u8(vsliq_n_u8(raw, bl, 4));
            w[v + 4] = vreinterpretq_s8_u8(vsliq_n_u8(vshrq_n_u8(raw, 4), bh, 4));
        } else {
            w[v] = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0f)));
            w[v + 4] = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
        }
    }
}

/* The integer sums of one block for 4 rows against one token's block halves
 * x1 (elements 0..15) and x2 (16..31): w[v] meets dword v of x1 and w[v + 4]
 * dword v of x2, for Q8_0 and Q4 alike (see block_weights). */
AI int32x4_t block_isum(sdot_fn sd, const int8x16_t w[8], int8x16_t x1, int8x16_t x2, int32_t off) {
    isum4 c = {vdupq_n_s32(0), vdupq_n_s32(0)};
    UNROLL for (int v = 0; v < 4; v++) {
        c = isum4_dot(sd, c, w[v], x1, v);
        c = isum4_dot(sd, c, w[v + 4], x2, v);
    }
    return isum4_rows(sd, c, off);
}

/* Q6_K (layout in kernels.h): block bi, half h of a full chunk as the 6-bit values
 * u (0..63; the weight is u - 32), w[v] against dword v of the first 16
 * activations, w[v + 4] of the second: a nibble with its 2 high bits inserted
 * above it (vsli), the field of byte k of the high-bit vectors at bits 2v. */
AI void q6_block_weights(const uint8_t *ck, int h, int bi, int8x16_t w[8]) {
    const uint8_t *p = ck + 64 + 384 * h + 16 * bi;
    uint8x16_t h0 = vld1q_u8(p + 256), h1 = vld1q_u8(p + 320), three = vdupq_n_u8(3);
    UNROLL for (int v = 0; v < 4; v++) {
        uint8x16_t n = vld1q_u8(p + 64 * v);
        int8x16_t sh = vdupq_n_s8((int8_t)(-2 * v));
        w[v] = vreinterpretq_s8_u8(vsliq_n_u8(n, vandq_u8(vshlq_u8(h0, sh), three), 4));
        w[v + 4] = vreinterpretq_s8_u8(vsliq_n_u8(vshrq_n_u8(n, 4), vandq_u8(vshlq_u8(h1, sh), three), 4));
    }
}

/* Q6_K quad q for tokens t0..t0+T-1: per block each half's exact sum (its -32
 * offset as -32 times the activations' sum over that half) times its d * sc.
 * dq: the f16 d of the group's 8 rows for this quad's super-block. */
AI void q6_chunk(sdot_fn sd, const uint8_t *ck, const uint8_t *dq, const q8_act *x, int t0, int q, int T,
                 float32x4_t acc[2][Q8_TILE_T]) {
    UNROLL for (int h = 0; h < 2; h++) {
        float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(dq + 8 * h)));
        for (int bi = 0; bi < 4; bi++) {
            int8x16_t w[8];
            q6_block_weights(ck, h, bi, w);
            const uint8_t *sc = ck + 16 * h + 4 * bi; /* 4 rows' int8 scales, the second 16's 32 bytes on */
            float32x4_t sw0 = vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8((const int8_t *)sc))))));
            float32x4_t sw1 =
                vmulq_f32(d, vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vld1_s8((const int8_t *)sc + 32))))));
            UNROLL for (int t = 0; t < T; t++) {
                size_t tq = (size_t)(t0 + t) * x->quads;
                const int8_t *xq = x->q + tq * 128 + 128 * (size_t)q + 16 * bi;
                float dx = x->d[tq * 4 + 4 * q + bi];
                int8x16_t x1 = vld1q_s8(xq), x2 = vld1q_s8(xq + 64);
                isum4 c0 = {vdupq_n_s32(0), vdupq_n_s32(0)}, c1 = c0;
                UNROLL for (int v = 0; v < 4; v++) {
                    c0 = isum4_dot(sd, c0, w[v], x1, v);
                    c1 = isum4_dot(sd, c1, w[v + 4], x2, v);
                }
                int32x4_t i0 = isum4_rows(sd, c0, -32 * (int32_t)vaddlvq_s8(x1));
                int32x4_t i1 = isum4_rows(sd, c1, -32 * (int32_t)vaddlvq_s8(x2));
                acc[h][t] = vfmaq_f32(acc[h][t], vcvtq_f32_s32(i0), vmulq_n_f32(sw0, dx));
                acc[h][t] = vfmaq_f32(acc[h][t], vcvtq_f32_s32(i1), vmulq_n_f32(sw1, dx));
            }
        }
    }
}

/* Q4_K: 4 rows' f32 products of the f16 at dm and the u8 at p (d * sc, or -dmin * m). */
AI float32x4_t q4k_scales4(const uint8_t *p, const uint8_t *dm) {
    float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(dm)));
    return vmulq_f32(d, vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vld1_u8(p))))));
}

/* Quad q of one group (chunk ck, 8 rows x kb blocks) for tokens t0..t0+T-1:
 * the weights of each (half, block) are unpacked once and used by every token.
 * dm: Q4_K's d and dmin of the group's 8 rows for this quad (NULL for the others). */
AI void q8_chunk(dtype dt, sdot_fn sd, const uint8_t *ck, const uint8_t *dm, int kb, const q8_act *x, int t0, int q,
                 int T, float32x4_t acc[2][Q8_TILE_T]) {
    UNROLL for (int h = 0; h < 2; h++)
        for (int bi = 0; bi < kb; bi++) {
            int8x16_t w[8];
            block_weights(dt, ck, kb, h, bi, w);
            const q8w_chunk c = {0, Q8W_GROUP, kb, 0};
            const int sb = q8w_sbytes(dt);
            const uint8_t *sc = ck + sb * q8w_scale_idx(dt, &c, 4 * h, bi), *mn = sc + sb * q8w_nscales(dt, &c);
            float32x4_t dw, mw;
            if (dt == DT_Q4_K) { /* d * sc and -dmin * m, exact */
                dw = q4k_scales4(sc, dm + 8 * h);
                mw = q4k_scales4(mn, dm + 16 + 8 * h);
            } else {
                dw = vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(sc)));
                mw = q8w_has_min(dt) ? vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(mn))) : dw;
            }
            UNROLL for (int t = 0; t < T; t++) {
                size_t tq = (size_t)(t0 + t) * x->quads;
                const int8_t *xq = x->q + tq * 128 + 128 * (size_t)q + 16 * bi;
                float dx = x->d[tq * 4 + 4 * q + bi], s = x->s[tq * 4 + 4 * q + bi];
                /* nibble - 8, u - 16, summed exactly */
                int32_t off = dt == DT_Q4_0 ? -8 * (int32_t)s : dt == DT_Q5_0 ? -16 * (int32_t)s : 0;
                int32x4_t is = block_isum(sd, w, vld1q_s8(xq), vld1q_s8(xq + 64), off);
                acc[h][t] = vfmaq_f32(acc[h][t], vcvtq_f32_s32(is), vmulq_n_f32(dw, dx));
                if (q8w_has_min(dt)) acc[h][t] = vfmaq_n_f32(acc[h][t], mw, dx * s);
            }
        }
}

/* Rows [lo, hi) of the group at g (rr rows) x tokens [t0, t0 + T); y0 is the
 * group's first row. `pf`: prefetch the stream Q8_PF ahead (decode). */
AI void q8_group(dtype dt, sdot_fn sd, const uint8_t *g, int rr, int nb, const q8_act *x, int t0, int T, float *y0,
                 int ldy, int lo, int hi, int pf) {
    uint8_t wide[Q8W_GROUP * 4 * 34];
    const int bb = q8w_block_bytes(dt);
    float32x4_t acc[2][Q8_TILE_T];
    UNROLL for (int h = 0; h < 2; h++) UNROLL for (int t = 0; t < T; t++) acc[h][t] = vdupq_n_f32(0.0f);
    for (int q = 0; 4 * q < nb; q++) {
        int kb = nb - 4 * q < 4 ? nb - 4 * q : 4;
        const uint8_t *ck = g + q8w_dtab(dt, rr, nb) + (size_t)rr * 4 * q * bb;
        if (pf)
            for (int l = 0; l < rr * kb * bb; l += 64) __builtin_prefetch(ck + Q8_PF + l, 0, 2);
        if (rr < Q8W_GROUP) { /* the last, partial group: zero rows, same arithmetic */
            q8w_widen(dt, ck, rr, kb, wide, kb);
            ck = wide;
        }
        if (dt == DT_Q6_K) {
            uint8_t dloc[16] = {0}; /* the d of a partial group's rows, the others 0 */
            const uint8_t *dq = q8w_d_at(g, rr, q / 2, 0);
            if (rr < Q8W_GROUP) dq = memcpy(dloc, dq, 2 * (size_t)rr);
            q6_chunk(sd, ck, dq, x, t0, q, T, acc);
        } else if (dt == DT_Q4_K) {
            uint8_t dml[32];
            q8_chunk(dt, sd, ck, q8w_dm_quad(g, rr, q, dml), 4, x, t0, q, T, acc);
        } else if (kb == 4) /* the common case, with constant offsets */
            q8_chunk(dt, sd, ck, NULL, 4, x, t0, q, T, acc);
        else
            q8_chunk(dt, sd, ck, NULL, kb, x, t0, q, T, acc);
    }
    UNROLL for (int h = 0; h < 2; h++) {
        int a0 = lo - 4 * h < 0 ? 0 : lo - 4 * h, a1 = hi - 4 * h > 4 ? 4 : hi - 4 * h;
        UNROLL for (int t = 0; t < T; t++) {
            float *yt = y0 + (size_t)(t0 + t) * ldy + 4 * h, v[4];
            if (a0 == 0 && a1 == 4) {
                vst1q_f32(yt, acc[h][t]);
                continue;
            }
            vst1q_f32(v, acc[h][t]);
            for (int i = a0; i < a1; i++) yt[i] = v[i];
        }
    }
}

/* Tokens [0, nt) of one group: whole tiles of Q8_TILE_T, then one tile of the rest. */
AI void q8_group_tokens(dtype dt, sdot_fn sd, const uint8_t *g, int rr, int nb, const q8_act *x, float *y0, int ldy,
                        int lo, int hi) {
    int t = 0;
    for (; t + Q8_TILE_T <= x->nt; t += Q8_TILE_T) q8_group(dt, sd, g, rr, nb, x, t, Q8_TILE_T, y0, ldy, lo, hi, 0);
    switch (x->nt - t) { /* constant tile sizes, so the accumulators stay in registers */
    case 3: q8_group(dt, sd, g, rr, nb, x, t, 3, y0, ldy, lo, hi, 0); break;
    case 2: q8_group(dt, sd, g, rr, nb, x, t, 2, y0, ldy, lo, hi, 0); break;
    case 1: q8_group(dt, sd, g, rr, nb, x, t, 1, y0, ldy, lo, hi, 0); break;
    default: break;
    }
}

/* Rows [r0, r1), every token: the groups of 8 rows in order, one stream each. */
AI void q8_matmul(dtype dt, sdot_fn sd, const void *packed, int rows, int cols, int r0, int r1, const q8_act *x,
                  float *y, int ldy) {
    const int nb = cols / 32;
    const size_t grp = q8w_group_bytes(dt, Q8W_GROUP, nb);
    const uint8_t *p = packed;
    int gfirst = r0 / Q8W_GROUP;
    if (x->nt == 1) /* the in-loop prefetch runs Q8_PF ahead: fetch the stream's head too */
        for (size_t l = 0; l < Q8_PF && l < grp * (size_t)((r1 + Q8W_GROUP - 1) / Q8W_GROUP - gfirst); l += 64)
            __builtin_prefetch(p + grp * (size_t)gfirst + l, 0, 2);
    for (int g0 = gfirst * Q8W_GROUP; g0 < r1; g0 += Q8W_GROUP) {
        int rr = rows - g0 < Q8W_GROUP ? rows - g0 : Q8W_GROUP;
        int lo = r0 > g0 ? r0 - g0 : 0, hi = r1 - g0 < rr ? r1 - g0 : rr;
        const uint8_t *g = p + grp * (size_t)(g0 / Q8W_GROUP);
        if (x->nt == 1)
            q8_group(dt, sd, g, rr, nb, x, 0, 1, y + g0, ldy, lo, hi, 1);
        else
            q8_group_tokens(dt, sd, g, rr, nb, x, y + g0, ldy, lo, hi);
    }
}

#define Q8_ENTRY(NAME, DT, ATTR, SD)                                                                  \
    ATTR static void NAME(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, \
                          int ldy) {                                                                  \
        q8_matmul(DT, SD, p, rows, cols, r0, r1, x, y, ldy);                                          \
    }
Q8_ENTRY(q8_sdot_q4_0, DT_Q4_0, DOTPROD, sdot_lane)
Q8_ENTRY(q8_sdot_q4_1, DT_Q4_1, DOTPROD, sdot_lane)
Q8_ENTRY(q8_sdot_q8_0, DT_Q8_0, DOTPROD, sdot_lane)
Q8_ENTRY(q8_mull_q4_0, DT_Q4_0, , NULL)
Q8_ENTRY(q8_mull_q4_1, DT_Q4_1, , NULL)
Q8_ENTRY(q8_mull_q8_0, DT_Q8_0, , NULL)
Q8_ENTRY(q8_sdot_q4_1g64, DT_Q4_1G64, DOTPROD, sdot_lane)
Q8_ENTRY(q8_sdot_q4_1g128, DT_Q4_1G128, DOTPROD, sdot_lane)
Q8_ENTRY(q8_mull_q4_1g64, DT_Q4_1G64, , NULL)
Q8_ENTRY(q8_mull_q4_1g128, DT_Q4_1G128, , NULL)
Q8_ENTRY(q8_sdot_q6_k, DT_Q6_K, DOTPROD, sdot_lane)
Q8_ENTRY(q8_mull_q6_k, DT_Q6_K, , NULL)
Q8_ENTRY(q8_sdot_q5_0, DT_Q5_0, DOTPROD, sdot_lane)
Q8_ENTRY(q8_sdot_q5_1, DT_Q5_1, DOTPROD, sdot_lane)
Q8_ENTRY(q8_mull_q5_0, DT_Q5_0, , NULL)
Q8_ENTRY(q8_mull_q5_1, DT_Q5_1, , NULL)
Q8_ENTRY(q8_sdot_q4_k, DT_Q4_K, DOTPROD, sdot_lane)
Q8_ENTRY(q8_mull_q4_k, DT_Q4_K, , NULL)

static int has_sdot(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

/* The table's entries: the variant this CPU runs, checked per call as in affine_neon.c. */
#define Q8_DISPATCH(FN, SDOT, MULL)                                                                         \
    static void FN(const void *p, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) { \
        (has_sdot() ? SDOT : MULL)(p, rows, cols, r0, r1, x, y, ldy);                                       \
    }
Q8_DISPATCH(matmul_q8_q4_0, q8_sdot_q4_0, q8_mull_q4_0)
Q8_DISPATCH(matmul_q8_q4_1, q8_sdot_q4_1, q8_mull_q4_1)
Q8_DISPATCH(matmul_q8_q8_0, q8_sdot_q8_0, q8_mull_q8_0)
Q8_DISPATCH(matmul_q8_q4_1g64, q8_sdot_q4_1g64, q8_mull_q4_1g64)
Q8_DISPATCH(matmul_q8_q4_1g128, q8_sdot_q4_1g128, q8_mull_q4_1g128)
Q8_DISPATCH(matmul_q8_q6_k, q8_sdot_q6_k, q8_mull_q6_k)
Q8_DISPATCH(matmul_q8_q5_0, q8_sdot_q5_0, q8_mull_q5_0)
Q8_DISPATCH(matmul_q8_q5_1, q8_sdot_q5_1, q8_mull_q5_1)
Q8_DISPATCH(matmul_q8_q4_k, q8_sdot_q4_k, q8_mull_q4_k)

/* The variant without the dot-product extension, whatever this CPU has, so the
 * self-test (tests/kernels_selftest.c) checks it on every machine. */
matmul_q8_fn kernels_neon_q8_plain(dtype dt);
matmul_q8_fn kernels_neon_q8_plain(dtype dt) {
    switch (dt) {
    case DT_Q4_0: return q8_mull_q4_0;
    case DT_Q4_1: return q8_mull_q4_1;
    case DT_Q8_0: return q8_mull_q8_0;
    case DT_Q4_1G64: return q8_mull_q4_1g64;
    case DT_Q4_1G128: return q8_mull_q4_1g128;
    case DT_Q6_K: return q8_mull_q6_k;
    case DT_Q5_0: return q8_mull_q5_0;
    case DT_Q5_1: return q8_mull_q5_1;
    case DT_Q4_K: return q8_mull_q4_k;
    default: return NULL;
    }
}

/* Attention, fast softmax and SwiGLU: attn_tiles.h over 4-lane vectors, a
 * register tile of 4 query rows x 16 positions (or dimensions) = 16 q registers. */
#define AV float32x4_t
#define AVI int32x4_t
#define AW 4
#define ATT_NV 4
#define ATT_SCORES_F32 att_scores_f32_neon /* the names of attn_tiles.h's functions */
#define ATT_VALUES_F32 att_values_f32_neon
#define ATT_SCORES_BF16 att_scores_bf16_neon
#define ATT_VALUES_BF16 att_values_bf16_neon
#define ATT_SOFTMAX_FAST softmax_fast_neon
#define ATT_GEGLU_FAST geglu_fast_neon
#define ATT_SWIGLU_FAST swiglu_fast_neon
#define av_zero() vdupq_n_f32(0.0f)
#define av_set1(x) vdupq_n_f32(x)
#define av_load(p) vld1q_f32(p)
#define av_store(p, v) vst1q_f32(p, v)
#define av_fma(a, b, c) vfmaq_f32(c, a, b)
#define av_add(a, b) vaddq_f32(a, b)
#define av_sub(a, b) vsubq_f32(a, b)
#define av_mul(a, b) vmulq_f32(a, b)
#define av_div(a, b) vdivq_f32(a, b)
#define av_min(a, b) vminq_f32(a, b)
#define av_max(a, b) vmaxq_f32(a, b)
#define av_round(x) vrndnq_f32(x)
#define av_hsum(v) vaddvq_f32(v)
#define av_hmax(v) vmaxvq_f32(v)
#define av_cvt_i(v) vcvtnq_s32_f32(v)
#define av_shr1(v) vshrq_n_s32(v, 1)
#define av_isub(a, b) vsubq_s32(a, b)
#define av_pow2(n) vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23))
#define av_bf_lo(p) vreinterpretq_f32_u32(vshlq_n_u32(vld1q_u32(p), 16))
#define av_bf_hi(p) vreinterpretq_f32_u32(vandq_u32(vld1q_u32(p), vdupq_n_u32(0xffff0000u)))
#include "attn_tiles.h"

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
            DQ_MATMULS,
            [DT_AFFINE4] = affine4_matmul_neon, /* affine_neon.c */
            [DT_AFFINE8] = affine8_matmul_neon,
        },
    .matmul_q8 = {[DT_Q4_0] = matmul_q8_q4_0, [DT_Q4_1] = matmul_q8_q4_1, [DT_Q8_0] = matmul_q8_q8_0,
                  [DT_Q4_1G64] = matmul_q8_q4_1g64, [DT_Q4_1G128] = matmul_q8_q4_1g128, [DT_Q6_K] = matmul_q8_q6_k,
                  [DT_Q5_0] = matmul_q8_q5_0, [DT_Q5_1] = matmul_q8_q5_1, [DT_Q4_K] = matmul_q8_q4_k,
                  [DT_AFFINE4] = affine4_q8_neon, [DT_AFFINE8] = affine8_q8_neon, /* affine_neon.c */
                  [DT_Q2_K] = inplace_neon_q2_k, [DT_Q3_K] = inplace_neon_q3_k, [DT_Q5_K] = inplace_neon_q5_k,
                  [DT_IQ4_NL] = inplace_neon_iq4_nl, [DT_IQ4_XS] = inplace_neon_iq4_xs,
                  [DT_MXFP4] = inplace_neon_mxfp4}, /* inplace_neon.c */
    .dot = dot_neon,
    .axpy = axpy_neon,
    .att_scores = {[DT_F32] = att_scores_f32_neon, [DT_BF16] = att_scores_bf16_neon},
    .att_values = {[DT_F32] = att_values_f32_neon, [DT_BF16] = att_values_bf16_neon},
    .softmax_fast = softmax_fast_neon,
    .swiglu_fast = swiglu_fast_neon,
    .geglu_fast = geglu_fast_neon,
};

/* The table; dispatch.c hands it out on every AArch64 CPU. */
const kernels *kernels_neon_table(void) { return &NEON; }

#else
typedef int neon_not_built; /* keeps the translation unit non-empty */
#endif
