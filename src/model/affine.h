/* affine.h - MLX affine-quantized matrices (mlx_lm's 4-bit and 8-bit checkpoints) as
 * tensor views: X.weight (U32, packed), X.scales and X.biases assembled into one
 * DT_AFFINE4 / DT_AFFINE8 tensor whose data is an affine_weights (see tensor.h).
 * Nothing is copied or expanded: the views point into the file mapping. */
#ifndef LLMGEN_AFFINE_H
#define LLMGEN_AFFINE_H

#include <stdint.h>

#include "kernels/affine_kernels.h"
#include "kernels/kernels.h"
#include "base/tensor.h"

/* The assembled views of one model; freed with affine_store_free (NULL is fine). */
typedef struct affine_store affine_store;

/* Assemble the matrix (rows, cols) from its three parts. Bits come from the packed
 * width (cols * bits / 32 words), the group from the scales' width; both must be
 * supported (4 or 8 bits; groups of 32, 64, 128), scales and biases alike in F32,
 * F16 or BF16. The view lives in *store (created on first use) until it is freed.
 * `path` names the file in messages. */
int affine_assemble(affine_store **store, const tensor *weight, const tensor *scales,
                    const tensor *biases, int64_t rows, int64_t cols, const tensor **out,
                    const char *path, char *err);

/* Rows [row0, row0 + rows) of an assembled matrix t of *store as a matrix of their own
 * (the q, k and v of a fused qkv projection), living in *store like t. */
int affine_split(affine_store **store, const tensor *t, int64_t row0, int64_t rows, const tensor **out,
                 const char *path, char *err);

void affine_store_free(affine_store *s);

/* Fast mode: the matrices of s whose dtype has an int8-activation kernel in k
 * (matmul_q8) take it from now on, reading the file layout in place. (repack.c then
 * rewrites the 4-bit ones it can into the packed Q4_1 layouts; what it leaves, 8-bit
 * and 4-bit with scales f16 cannot hold, stays here.) Without this call (--exact)
 * they keep the f32 kernels. Call at load, before any session runs. */
void affine_store_use_q8(affine_store *s, const kernels *k);

/* What to pass as `packed` to matmul_q8[t->type] for t, or NULL when t is not an
 * affine matrix in fast mode (then it takes the f32 matmul). */
const void *affine_q8_weights(const tensor *t);

/* Bits per value of an affine dtype (4 or 8), 0 for any other dtype. */
int affine_bits(dtype t);

/* Row `row` of an assembled affine tensor, dequantized exactly as mlx does
 * (f32: scale * q, then + bias, each rounded) into out (cols floats). */
void affine_row_f32(const tensor *t, int64_t row, float *out);


#endif
