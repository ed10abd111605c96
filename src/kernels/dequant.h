/* dequant.h - where a sub-block of 32 values sits in a quantized row, and the
 * reference dequantizer every ISA's exact-mode kernel falls back to for the
 * types it has no vector decoder for (quant.h: values bit-identical to gguf-py,
 * so every ISA still gives the same bits). Private to src/kernels/. */
#ifndef LLMGEN_KERNELS_DEQUANT_H
#define LLMGEN_KERNELS_DEQUANT_H

#include "quant.h"

/* Bytes per block, and log2 of the sub-blocks of 32 in one (0 or 3): constants
 * for the types the ISA files decode themselves, the table for the others. */
static inline int dq_block_bytes(dtype dt) {
    return dt == DT_Q8_0 ? 34 : dt == DT_Q4_0 ? 18 : dt == DT_Q4_1 ? 20 : dtype_block_bytes(dt);
}
static inline int dq_sub_shift(dtype dt) {
    return dt == DT_Q8_0 || dt == DT_Q4_0 || dt == DT_Q4_1 ? 0 : dtype_block_elems(dt) == QK_K ? 3 : 0;
}

/* Sub-block b (32 values) of the row at w: its block's address, and j its index there. */
static inline const uint8_t *dq_sub_block(dtype dt, const uint8_t *w, int b, int *j) {
    int sh = dq_sub_shift(dt);
    *j = b & ((1 << sh) - 1);
    return w + (size_t)(b >> sh) * (size_t)dq_block_bytes(dt);
}

/* The 32 values of sub-block j of the block at blk, through the type table. */
static inline void dq_ref32(dtype dt, const uint8_t *blk, int j, float *out) {
    dtype_info(dt)->dequant32(blk, j, out);
}

/* The exact-mode matmuls (f32 activations) of the GGUF types that every ISA
 * table reaches through dq_ref32 or its own decoder (tiles.h instantiates them). */
#define DQ_MATMULS                                                                                   \
    [DT_Q5_0] = matmul_q5_0, [DT_Q5_1] = matmul_q5_1, [DT_Q2_K] = matmul_q2_k, [DT_Q3_K] = matmul_q3_k, \
    [DT_Q4_K] = matmul_q4_k, [DT_Q5_K] = matmul_q5_k, [DT_Q6_K] = matmul_q6_k,                       \
    [DT_IQ4_NL] = matmul_iq4_nl, [DT_IQ4_XS] = matmul_iq4_xs

#endif
