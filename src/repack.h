/* repack.h - fast mode: GGUF Q4_0 / Q4_1 / Q8_0 weight matrices rewritten once at
 * load into the layout the int8-activation kernels read (kernels.h, "Repacked
 * weights"): groups of 8 rows interleaved per 128 columns, each group one
 * stream with its f16 scales beside the payload. The copy has
 * exactly the file's size; the file pages it came from are released, so the
 * model still holds one copy of each weight. */
#ifndef LLMGEN_REPACK_H
#define LLMGEN_REPACK_H

#include "model.h"

/* Repack every Q4_0 / Q4_1 / Q8_0 matrix of m (layers, lm_head / embeddings),
 * in parallel over m->pool, setting tensor.packed. -1 with a message if memory
 * runs out (what was repacked stays valid and is freed by repack_free). */
int repack_weights(model *m, char *err);

/* Release what repack_weights allocated (tensor.packed back to NULL). */
void repack_free(model *m);

/* Whether repack_weights handles this dtype. */
int repack_supported(dtype t);

/* The packed form of a whole 2-D Q4_0 / Q4_1 / Q8_0 tensor t into out
 * (t->nbytes bytes), on the calling thread. */
void repack_matrix(const tensor *t, void *out);

/* An MLX 4-bit (DT_AFFINE4) matrix t written into out as a packed Q4_1 matrix
 * (rows * cols / 32 * 20 bytes), on the calling thread; 0 if some scale or bias
 * is not exactly an f16 (out is then partly written). repack_weights does
 * this, in fast mode, to the layer matrices of MLX 4-bit models (repack.c). */
int repack_affine4_matrix(const tensor *t, void *out);

/* Row `row` of a repacked tensor dequantized to f32: the same values as
 * tensor_row_f32 gives from the file layout (embedding lookups read the
 * packed copy, so the released file pages stay released). */
void repack_row_f32(const tensor *t, int64_t row, float *out);

#endif
