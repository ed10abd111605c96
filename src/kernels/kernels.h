/* kernels.h - the table of compute kernels, filled once at start-up by CPUID.
 *
 * Kernels know nothing of models or files: they see pointers, sizes and a
 * dtype. Every kernel has a portable scalar version in scalar.c; the ISA files
 * (avx2.c, avx512.c, neon.c) provide faster ones that tests compare against it.
 * forward.c calls through this table and never names an instruction set. */
#ifndef LLMGEN_KERNELS_H
#define LLMGEN_KERNELS_H

#include <stddef.h>
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

typedef struct {
    const char *name;              /* "scalar", "avx2", "avx512", "neon" */
    matmul_fn matmul[DT_COUNT];    /* NULL where the dtype has no kernel */
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
