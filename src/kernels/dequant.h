/* dequant.h - where a sub-block of 32 values sits in a quantized row, and the
 * reference dequantizer every ISA's exact-mode kernel falls back to for the
 * types it has no vector decoder for (quant.h: values bit-identical to gguf-py,
 * so every ISA still gives the same bits). Private to src/kernels/. */
#ifndef LLMGEN_KERNELS_DEQUANT_H
#define LLMGEN_KERNELS_DEQUANT_H

#include <string.h>

#include "quant/quant.h"
#include "base/util.h"

/* Bytes per block, and log2 of the sub-blocks of 32 in one (0 or 3): constants
 * for the types the ISA files decode themselves, the table for the others. */
static inline int dq_block_bytes(dtype dt) {
    return dt == DT_Q8_0   ? (int)sizeof(block_q8_0)
           : dt == DT_Q4_0 ? (int)sizeof(block_q4_0)
           : dt == DT_Q4_1 ? (int)sizeof(block_q4_1)
                           : dtype_block_bytes(dt);
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

/* ---- the int8-activation route on the file layout (fast mode) --------------------
 *
 * GGUF types that fast mode does not repack (every type but Q4_0 / Q4_1 / Q8_0 /
 * Q4_K / Q5_0 / Q5_1 / Q6_K) are read in place by matmul_q8 kernels whose `packed` argument is the file
 * layout itself (rows of dtype_row_bytes(dt, cols) bytes). Each half (16
 * values) h of sub-block j is decoded to unsigned integers u (0..255), a scale f
 * and a min mn with weight = f * u + mn: an offset (Q5_0 -16, Q3_K -4,
 * IQ4 -128 after mapping kvalues to kvalues + 128) is folded into mn = -offset * f,
 * a K-quant's min is mn = -(dmin * m) (IQ4 and MXFP4 map their grids to kvalues + 128). f is the exact f32 scale of the exact
 * route; with int8 activations x = dx * q (kernels.h), a half contributes
 *   dx * (f * sum(u q) + mn * sum(q)),
 * the integer sums exact. Scales are per half in Q2_K / Q3_K, per
 * sub-block (both halves equal) in the others. */
typedef struct {
    uint8_t u[32];
    float f[2], mn[2];
} dq_int8;

static inline void dq_int8_decode(dtype dt, const uint8_t *blk, int j, dq_int8 *o) {
    float d = 0.0f;
    switch (dt) {
    case DT_Q5_0:
    case DT_Q5_1: {
        int v1 = dt == DT_Q5_1;
        uint32_t qh = rd_u32(blk + 2 + 2 * v1);
        const uint8_t *qs = blk + 6 + 2 * v1;
        d = f16_to_f32(rd_u16(blk));
        for (int l = 0; l < 32; l++)
            o->u[l] = (uint8_t)((l < 16 ? qs[l] & 15 : qs[l - 16] >> 4) | ((qh >> l) & 1) << 4);
        o->f[0] = o->f[1] = d;
        o->mn[0] = o->mn[1] = v1 ? f16_to_f32(rd_u16(blk + 2)) : -16.0f * d;
        return;
    }
    case DT_Q4_K:
    case DT_Q5_K: {
        int sc, m, k5 = dt == DT_Q5_K;
        q4k_scale_min(blk + 4, j, &sc, &m);
        const uint8_t *q = blk + (k5 ? 48 : 16) + 32 * (j / 2), *qh = blk + 16;
        for (int l = 0; l < 32; l++)
            o->u[l] = (uint8_t)((j % 2 ? q[l] >> 4 : q[l] & 15) | (k5 ? ((qh[l] >> j) & 1) << 4 : 0));
        o->f[0] = o->f[1] = f16_to_f32(rd_u16(blk)) * (float)sc;
        o->mn[0] = o->mn[1] = -(f16_to_f32(rd_u16(blk + 2)) * (float)m);
        return;
    }
    case DT_Q2_K:
    case DT_Q3_K: {
        int k3 = dt == DT_Q3_K;
        const uint8_t *qs = blk + (k3 ? 32 : 16);
        d = f16_to_f32(rd_u16(blk + (k3 ? 108 : 80)));
        for (int l = 0; l < 32; l++) {
            int v = 32 * j + l;
            o->u[l] = (uint8_t)(q2k_crumb(qs, v) + (k3 && ((blk[v % 32] >> (v / 32)) & 1) ? 4 : 0));
        }
        for (int h = 0; h < 2; h++) {
            if (k3) {
                o->f[h] = d * (float)q3k_scale(blk + 96, 2 * j + h);
                o->mn[h] = -4.0f * o->f[h];
            } else {
                int sc = blk[2 * j + h];
                o->f[h] = d * (float)(sc & 15);
                o->mn[h] = -(f16_to_f32(rd_u16(blk + 82)) * (float)(sc >> 4));
            }
        }
        return;
    }
    case DT_IQ4_NL:
    case DT_IQ4_XS: {
        const uint8_t *qs = blk + 2;
        d = f16_to_f32(rd_u16(blk));
        if (dt == DT_IQ4_XS) {
            int ls = ((blk[4 + j / 2] >> (4 * (j % 2))) & 15) | ((rd_u16(blk + 2) >> (2 * j)) & 3) << 4;
            d = d * (float)(ls - 32);
            qs = blk + 8 + 16 * j;
        }
        for (int l = 0; l < 32; l++) o->u[l] = (uint8_t)(IQ4_KVALUES[l < 16 ? qs[l] & 15 : qs[l - 16] >> 4] + 128);
        o->f[0] = o->f[1] = d;
        o->mn[0] = o->mn[1] = -128.0f * d;
        return;
    }
    case DT_MXFP4: {
        const uint8_t *qs = blk + 1;
        d = mxfp4_scale(blk[0]);
        for (int l = 0; l < 32; l++) o->u[l] = (uint8_t)(MXFP4_KVALUES[l < 16 ? qs[l] & 15 : qs[l - 16] >> 4] + 128);
        o->f[0] = o->f[1] = d;
        o->mn[0] = o->mn[1] = -128.0f * d;
        return;
    }
    default: memset(o, 0, sizeof *o); return;
    }
}

/* The exact-mode matmuls (f32 activations) of the GGUF types that every ISA
 * table reaches through dq_ref32 or its own decoder (tiles.h instantiates them). */
#define DQ_MATMULS                                                                                   \
    [DT_Q5_0] = matmul_q5_0, [DT_Q5_1] = matmul_q5_1, [DT_Q2_K] = matmul_q2_k, [DT_Q3_K] = matmul_q3_k, \
    [DT_Q4_K] = matmul_q4_k, [DT_Q5_K] = matmul_q5_k, [DT_Q6_K] = matmul_q6_k,                       \
    [DT_IQ4_NL] = matmul_iq4_nl, [DT_IQ4_XS] = matmul_iq4_xs, [DT_MXFP4] = matmul_mxfp4

#endif
