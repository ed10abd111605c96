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

#endif
