/* affine_kernels.h - matmul kernels for MLX affine weights (DT_AFFINE4 / DT_AFFINE8),
 * one per ISA, registered in the ISA tables of kernels.h. `w` is an affine_weights
 * (tensor.h); row_bytes is the packed row size of q. All of them give the same bits:
 *
 * each weight is dequantized as mlx's CPU kernel does it, w = (float)q * scale, then
 * + bias (two f32 roundings, no FMA), and each y element has one accumulator of 16
 * f32 lanes, fed by FMA in column order within each lane, then summed by the tree of
 * avx512.c's reduce16(). Which lane takes which column:
 *   8-bit: lane i takes columns i, i+16, i+32, ...;
 *   4-bit: in each block of 32 columns (16 bytes), lane k takes the two values of
 *          byte k, columns 2k then 2k+1 (so the SIMD kernels split a byte's low and
 *          high nibbles without interleaving them, and deinterleave x instead, once
 *          per block for all the rows of a tile).
 * cols is a multiple of the group (>= 32), so there is never a tail. */
#ifndef LLMGEN_AFFINE_KERNELS_H
#define LLMGEN_AFFINE_KERNELS_H

#include "kernels.h"
#include "base/util.h"

/* Scale or bias i of a (rows, cols/group) array in dtype sdt (F32, F16, BF16), as f32. */
static inline float affine_param(const void *p, int sdt, size_t i) {
    const uint8_t *b = p;
    if (sdt == DT_F32) {
        float v;
        memcpy(&v, b + 4 * i, 4);
        return v;
    }
    uint16_t h = rd_u16(b + 2 * i);
    return sdt == DT_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

void affine4_matmul_scalar(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy);
void affine8_matmul_scalar(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy);
/* x86-64 only; call only where the ISA was detected (dispatch.c). */
void affine4_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1,
                         const float *x, int ldx, int nt, float *y, int ldy);
void affine8_matmul_avx2(const void *w, size_t row_bytes, int cols, int r0, int r1,
                         const float *x, int ldx, int nt, float *y, int ldy);
void affine4_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy);
void affine8_matmul_avx512(const void *w, size_t row_bytes, int cols, int r0, int r1,
                           const float *x, int ldx, int nt, float *y, int ldy);

/* ---- the int8-activation route (fast mode) ----------------------------------
 *
 * matmul_q8_fn of kernels.h with `packed` = the affine_weights: the file layout is
 * read in place (nothing repacked). y[t*ldy + r] =
 *   sum_g scale[r][g] * sum_{b in g} d[b] * isum[b]  +  sum_g bias[r][g] * sum_{b in g} d[b] * s[b]
 * over groups g and activation blocks b of 32, isum[b] = sum_j q_w[j] * q_x[j] with the
 * unsigned weight values (0..15 or 0..255): the integer sums are exact in every ISA,
 * only the order of the f32 combination differs (tested with a tolerance). The bias
 * term uses s = sum(q), so it costs one short dot per row, not per weight. */
void affine4_q8_scalar(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8_scalar(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
/* q8b: int8 products by vpmaddubsw/vpmaddwd (or widening), q8v: by vpdpbusd (VNNI). */
void affine4_q8b_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8b_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine4_q8v_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8v_avx512(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine4_q8_avx2(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8_avx2(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);

/* AArch64 only. _neon picks vdotq_s32 when the CPU has it; _nodot never uses it. */
void affine4_matmul_neon(const void *w, size_t row_bytes, int cols, int r0, int r1,
                         const float *x, int ldx, int nt, float *y, int ldy);
void affine8_matmul_neon(const void *w, size_t row_bytes, int cols, int r0, int r1,
                         const float *x, int ldx, int nt, float *y, int ldy);
void affine4_q8_neon(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8_neon(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine4_q8_neon_nodot(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);
void affine8_q8_neon_nodot(const void *w, int rows, int cols, int r0, int r1, const q8_act *x, float *y, int ldy);

/* The int8 activations of token t in the order the affine kernels pair them with a
 * weight row: 4-bit, per 128 columns (a quad of q8_act), the even columns of its 4
 * blocks (16 each, block order), then their odd columns - the low and high nibbles
 * of 64 consecutive weight bytes; 8-bit, plain column order. out holds
 * x->quads * 128 bytes (zero past cols). */
void affine_q8_order(int bits, const q8_act *x, int t, int8_t *out);

/* sg[g] = sum of d[b] * s[b] (the block's activation sum) over the blocks b of group g
 * (cols / group of them), token t: what a row's biases multiply. */
void affine_q8_group_sums(const q8_act *x, int t, int group, float *sg);

#endif
