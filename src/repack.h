/* repack.h - fast mode: GGUF Q4_0 / Q4_1 / Q8_0 / Q5_0 / Q5_1 / Q6_K / Q4_K weight
 * matrices rewritten once at load into the layout the int8-activation kernels read
 * (kernels.h, "Repacked weights"): groups of 8 rows interleaved per 128 columns,
 * each group one stream with its scales beside the payload. The copy has about the
 * file's size (Q6_K: up to 48 bytes more per 8 rows; Q4_K: 4.625 bits per weight
 * instead of 4.5); the file pages it came from are released, so the model still
 * holds one copy of each weight. */
#ifndef LLMGEN_REPACK_H
#define LLMGEN_REPACK_H

#include "model.h"

/* Repack every Q4_0 / Q4_1 / Q8_0 / Q5_0 / Q5_1 / Q6_K / Q4_K matrix of m (layers, lm_head / embeddings),
 * in parallel over m->pool, setting tensor.packed: the layers' and the lm_head
 * into one arena laid out in the order the threads stream them (tensor.parts,
 * see repack.c), anything else on its own. -1 with a message if memory runs
 * out (what was repacked stays valid and is freed by repack_free). */
int repack_weights(model *m, char *err);

/* Release what repack_weights allocated (tensor.packed back to NULL). */
void repack_free(model *m);

/* Whether repack_weights handles this dtype. */
int repack_supported(dtype t);

/* Whether repack_weights packs t: a dtype it handles, with an int8 kernel in m's table. */
int repack_will_pack(const model *m, const tensor *t);

/* The packed form of a whole 2-D tensor t of a type repack_supported accepts into
 * out (q8w_matrix_bytes of its packed type), on the calling thread. */
void repack_matrix(const tensor *t, void *out);

/* The packed type an MLX 4-bit (DT_AFFINE4) matrix takes in fast mode: DT_Q4_1
 * for group 32, DT_Q4_1G64 / DT_Q4_1G128 (one scale and bias per group, the
 * file's size); DT_COUNT for anything else. */
dtype repack_affine4_type(const tensor *t);

/* An MLX 4-bit matrix t written into out in that packed layout (rows * cols / 32
 * * q8w_block_bytes(type) bytes), on the calling thread; 0 if some scale or bias
 * is not exactly an f16 (out is then partly written). repack_weights does this,
 * in fast mode, to every MLX 4-bit matrix (repack.c). */
int repack_affine4_matrix(const tensor *t, void *out);

/* Row `row` of a repacked tensor dequantized to f32: the same values as
 * tensor_row_f32 gives from the file layout (embedding lookups read the
 * packed copy, so the released file pages stay released). */
void repack_row_f32(const tensor *t, int64_t row, float *out);

#endif
