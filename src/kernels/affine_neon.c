/* affine_neon.c - MLX affine 4-bit / 8-bit matmuls for AArch64 Advanced SIMD.
 *
 * f32 activations: the numerics of affine_kernels.h bit for bit (each weight
 * dequantized as mlx does, q * scale then + bias; one accumulator of 16 f32 lanes
 * held as four q registers, fed by FMA in the lane order affine_kernels.h fixes;
 * avx512.c's reduce16 tree), so they equal affine_scalar.c exactly. 4-bit: vld2q_f32
 * splits x into even and odd columns, the lanes of a byte's low and high nibbles.
 *
 * int8 activations (fast mode): the q8 contract of affine_kernels.h. The integer
 * block sums are exact; they come from vdotq_s32 where the CPU has the dot-product
 * extension (checked at run time, HWCAP_ASIMDDP), else from vmull_s8 + vpadalq_s16.
 * Both multiply signed bytes, so 8-bit weights (0..255) enter as w - 128 and the
 * block sum is corrected by + 128 * sum(q) (q8_act's s): still exact. The f32
 * combination follows affine_scalar.c's order (per group, then scale and bias), so
 * with the same integer sums the results equal the scalar reference's bits. */
#include "affine_kernels.h"

#if defined(__aarch64__)

#include <arm_neon.h>
#include <sys/auxv.h>

#include "base/util.h"

#define AI static inline __attribute__((always_inline))

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

/* ---- f32 activations ------------------------------------------------------- */

/* avx512.c's reduce16 on lanes held as a[0..3] = lanes 0..3, ..., a[3] = 12..15. */
AI float reduce16(const float32x4_t a[4]) {
    float32x4_t s4 = vaddq_f32(vaddq_f32(a[3], a[1]), vaddq_f32(a[2], a[0]));
    float x = vgetq_lane_f32(s4, 2) + vgetq_lane_f32(s4, 0), y = vgetq_lane_f32(s4, 3) + vgetq_lane_f32(s4, 1);
    return y + x;
}

/* Four u8 values as f32 times s, then + b (two roundings, as mlx). */
AI float32x4_t dq4(uint8x8_t v, int hi, float32x4_t s, float32x4_t b) {
    uint16x8_t w = vmovl_u8(v);
    uint32x4_t u = hi ? vmovl_high_u16(w) : vmovl_u16(vget_low_u16(w));
    return vaddq_f32(vmulq_f32(vcvtq_f32_u32(u), s), b);
}

static void affine_f32(int bits, const void *w, size_t rb, int cols, int r0, int r1, const float *x, int ldx,
                       int nt, float *y, int ldy) {
    const affine_weights *a = w;
    int ng = cols / a->group;
    for (int r = r0; r < r1; r++) {
        const uint8_t *row = (const uint8_t *)a->q + (size_t)r * rb;
        for (int t = 0; t < nt; t++) {
            const float *xt = x + (size_t)t * ldx;
            float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
            for (int g = 0; g < ng; g++) {
                float32x4_t s = vdupq_n_f32(affine_param(a->scales, a->sdt, (size_t)r * ng + g));
                float32x4_t b = vdupq_n_f32(affine_param(a->biases, a->sdt, (size_t)r * ng + g));
                for (int c = g * a->group; c < (g + 1) * a->group; c += 32) {
                    if (bits == 4) {
                        uint8x16_t v = vld1q_u8(row + c / 2);
                        uint8x16_t lo = vandq_u8(v, vdupq_n_u8(15)), hi = vshrq_n_u8(v, 4);
                        for (int j = 0; j < 4; j++) {
                            float32x4x2_t xe = vld2q_f32(xt + c + 8 * j); /* even, odd columns */
                            uint8x8_t l8 = j < 2 ? vget_low_u8(lo) : vget_high_u8(lo);
                            uint8x8_t h8 = j < 2 ? vget_low_u8(hi) : vget_high_u8(hi);
                            acc[j] = vfmaq_f32(acc[j], dq4(l8, j & 1, s, b), xe.val[0]);
                            acc[j] = vfmaq_f32(acc[j], dq4(h8, j & 1, s, b), xe.val[1]);
                        }
                    } else {
                        for (int h = 0; h < 2; h++) {
                            uint8x16_t v = vld1q_u8(row + c + 16 * h);
                            for (int j = 0; j < 4; j++) {
                                uint8x8_t v8 = j < 2 ? vget_low_u8(v) : vget_high_u8(v);
                                acc[j] = vfmaq_f32(acc[j], dq4(v8, j & 1, s, b), vld1q_f32(xt + c + 16 * h + 4 * j));
                            }
                        }
                    }
                }
            }
            y[(size_t)t * ldy + r] = reduce16(acc);
        }
    }
}

void affine4_matmul_neon(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x, int ldx,
                         int nt, float *y, int ldy) {
    affine_f32(4, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

void affine8_matmul_neon(const void *w, size_t row_bytes, int cols, int r0, int r1, const float *x, int ldx,
                         int nt, float *y, int ldy) {
    affine_f32(8, w, row_bytes, cols, r0, r1, x, ldx, nt, y, ldy);
}

/* ---- int8 activations ------------------------------------------------------ */

#define Q8_MAX_COLS 16384 /* stack buffers; wider matrices take the scalar route */

/* Sum of a[i] * b[i] over 16 signed bytes into 4 int32 lanes, without the extension. */
AI int32x4_t dot16_mull(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

__attribute__((target("arch=armv8.2-a+dotprod"))) static int32x4_t dot16_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
}

/* The integer sum of block k (0..3) of a 64-byte chunk: 4-bit, its 16 weight bytes'
 * nibbles against the block's even and odd activations; 8-bit, 32 bytes straight. */
AI int block_isum(int bits, int sdot, const uint8_t *wchunk, const int8_t *xchunk, int k, int s) {
    int32x4_t acc = vdupq_n_s32(0);
    if (bits == 4) {
        uint8x16_t v = vld1q_u8(wchunk + 16 * k);
        int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(v, vdupq_n_u8(15)));
        int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        int8x16_t xe = vld1q_s8(xchunk + 16 * k), xo = vld1q_s8(xchunk + 64 + 16 * k);
        acc = sdot ? dot16_sdot(dot16_sdot(acc, lo, xe), hi, xo) : dot16_mull(dot16_mull(acc, lo, xe), hi, xo);
        return vaddvq_s32(acc);
    }
    for (int h = 0; h < 2; h++) {
        int8x16_t v = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(wchunk + 32 * k + 16 * h), vdupq_n_u8(0x80)));
        int8x16_t xv = vld1q_s8(xchunk + 32 * k + 16 * h);
        acc = sdot ? dot16_sdot(acc, v, xv) : dot16_mull(acc, v, xv);
    }
    return vaddvq_s32(acc) + 128 * s; /* (w - 128) . q + 128 sum(q) */
}

static void affine_q8(int bits, int sdot, const void *w, int rows, int cols, int r0, int r1, const q8_act *x,
                      float *y, int ldy) {
    const affine_weights *a = w;
    if (cols > Q8_MAX_COLS) {
        (bits == 4 ? affine4_q8_scalar : affine8_q8_scalar)(w, rows, cols, r0, r1, x, y, ldy);
        return;
    }
    int8_t xq[Q8_MAX_COLS];
    float sg[Q8_MAX_COLS / 32];
    int ng = cols / a->group, per = a->group / 32;
    size_t rb = (size_t)cols * bits / 8;
    for (int t = 0; t < x->nt; t++) {
        affine_q8_order(bits, x, t, xq);
        affine_q8_group_sums(x, t, a->group, sg);
        const float *d = x->d + (size_t)t * x->quads * 4, *s = x->s + (size_t)t * x->quads * 4;
        for (int r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)a->q + (size_t)r * rb;
            float acc = 0.0f;
            for (int g = 0; g < ng; g++) {
                float main = 0.0f;
                for (int b = g * per; b < (g + 1) * per; b++) {
                    int isum = bits == 4 ? block_isum(4, sdot, row + 64 * (size_t)(b / 4), xq + 128 * (size_t)(b / 4), b % 4, 0)
                                         : block_isum(8, sdot, row + 32 * (size_t)b, xq + 32 * (size_t)b, 0, (int)s[b]);
                    main += d[b] * (float)isum;
                }
                size_t i = (size_t)r * ng + g;
                acc += affine_param(a->scales, a->sdt, i) * main + affine_param(a->biases, a->sdt, i) * sg[g];
            }
            y[(size_t)t * ldy + r] = acc;
        }
    }
}

static int has_sdot(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

void affine4_q8_neon(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    affine_q8(4, has_sdot(), w, rows, cols, r0, r1, x, y, ldy);
}

void affine8_q8_neon(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    affine_q8(8, has_sdot(), w, rows, cols, r0, r1, x, y, ldy);
}

void affine4_q8_neon_nodot(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    affine_q8(4, 0, w, rows, cols, r0, r1, x, y, ldy);
}

void affine8_q8_neon_nodot(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy) {
    affine_q8(8, 0, w, rows, cols, r0, r1, x, y, ldy);
}

#else
typedef int affine_neon_not_built; /* keeps the translation unit non-empty */
#endif
