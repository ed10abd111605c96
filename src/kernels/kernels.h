/* kernels.h - the table of compute kernels, filled once at start-up by CPUID.
 *
 * Kernels know nothing of models or files: they see pointers, sizes and a
 * dtype. Every kernel has a portable scalar version in scalar.c; the ISA files
 * (avx2.c, avx512.c, neon.c) provide faster ones that tests compare against it.
 * forward.c calls through this table and never names an instruction set. */
#ifndef LLMGEN_KERNELS_H
#define LLMGEN_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "tensor.h"

/* Matrix times activations, for one weight dtype:
 *   y[t*ldy + r] = sum_c W[r][c] * x[t*ldx + c]   for r in [r0, r1), t in [0, nt)
 * W is row-major (rows, cols) in its stored layout, row r at w + r*row_bytes
 * (quantized rows are whole blocks: cols is a multiple of the block size).
 * x and y are f32. Each y element is computed entirely by one call, in an order
 * that depends only on cols: results do not depend on how rows are split
 * between threads. nt > 1 is prefill: implementations should reuse each
 * loaded weight block across the nt activation rows. */
typedef void (*matmul_fn)(const void *w, size_t row_bytes, int cols, int r0, int r1,
                          const float *x, int ldx, int nt, float *y, int ldy);

/* ---- the int8-activation route (fast mode) ----------------------------------
 *
 * Activations quantized once per matmul input to int8 per block of 32 (like
 * llama.cpp's Q8_1), reused by every row and every matmul sharing the input.
 * Block b of token t: x[32b + j] ~= d[b] * q[b][j], q in [-127, 127],
 * d = max|x| / 127, q = round-to-nearest-even(x * (127 / max|x|)), s = d * sum_j q[j].
 * The blocks are stored in groups of 4 (a "quad", 128 columns) in the order
 * the 4-bit kernels consume a 64-byte load of 4 blocks' nibbles: the first
 * halves (elements 0..15) of blocks 0..3, then their second halves. A last
 * partial quad is zero-padded (d = s = 0, q = 0), so kernels need no tail mask
 * on the activation side. */
typedef struct {
    int nt, cols;         /* tokens; columns (a multiple of 32) */
    int quads;            /* ceil(cols / 128) */
    int8_t *q;            /* (nt, quads * 128) int8, quad layout above */
    float *d;             /* (nt, quads * 4) f32 block scales */
    float *s;             /* (nt, quads * 4) f32 d * (sum of the block's q) */
} q8_act;

static inline int q8_quads(int cols) { return (cols / 32 + 3) / 4; }

/* Fill tokens [t0, t1) of a: x is (nt, ldx) f32. Every ISA gives the same bytes
 * and floats as the scalar version (tested). */
typedef void (*quantize_act_fn)(const float *x, int ldx, int t0, int t1, const q8_act *a);

/* Repacked weights (src/repack.c), for a (rows, cols) matrix, nb = cols / 32,
 * one 64-byte-aligned allocation of the file's size:
 *   Q4_0 / Q4_1: qs (rows, nb, 16) u8, each block's 16 nibble bytes as in the file
 *                (byte j: low nibble = element j, high = element j + 16);
 *                then d (rows, nb) f16; then, Q4_1 only, m (rows, nb) f16.
 *   Q8_0:        qs (rows, nb, 32) i8, per quad of k <= 4 blocks: the first
 *                halves of its k blocks (16k bytes), then their second halves;
 *                then d (rows, nb) f16.
 * So a 64-byte load of a row holds 4 blocks (4-bit) and lines up with one half
 * of a quad of activations, and the scales are read apart from the payload.
 * y[t*ldy + r] = sum_b (dw*d)[b] * isum[b] + (Q4_1: m[b] * s[b]; Q4_0: -8 dw[b] * s[b]),
 * isum[b] = sum_j wq[b][j] * q[b][j] (wq = nibble 0..15, or int8): the integer
 * sums are exact in every ISA, the f32 combination order differs (tested with
 * a tolerance). A y element does not depend on r0, r1 or nt (same code path
 * for every row and token), so results do not depend on the thread count. */
typedef void (*matmul_q8_fn)(const void *packed, int rows, int cols, int r0, int r1, const q8_act *x,
                             float *y, int ldy);

typedef struct {
    const char *name;              /* "scalar", "avx2", "avx512", "neon" */
    matmul_fn matmul[DT_COUNT];    /* NULL where the dtype has no kernel */
    quantize_act_fn quantize_act;  /* NULL: use the scalar one */
    matmul_q8_fn matmul_q8[DT_COUNT]; /* Q4_0, Q4_1, Q8_0 on repacked weights; NULL: scalar */
    float (*dot)(const float *a, const float *b, int n);          /* f32 dot product */
    void (*axpy)(float *y, float a, const float *x, int n);       /* y += a*x */
} kernels;

/* The portable reference table (every entry set for F32, F16, BF16, Q8_0, Q4_0, Q4_1). */
const kernels *kernels_scalar(void);

/* Best table for this CPU, decided by CPUID once; `force` ("scalar", "avx2",
 * "avx512", "neon" or NULL for auto) selects one explicitly and returns NULL
 * if that ISA is unavailable on this CPU or in this build. */
const kernels *kernels_select(const char *force);

/* ISA tables: NULL when not compiled in or not supported by this CPU. */
const kernels *kernels_avx2(void);
const kernels *kernels_avx512(void);
const kernels *kernels_neon(void);

#endif
