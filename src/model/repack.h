/* repack.h - fast mode: the weight matrices the matmul plan routes to a packed layout
 * (plan.h; the layouts in the type table, quant.h, and kernels.h "Repacked weights")
 * rewritten once at load: groups of 8 rows interleaved per 128 columns, each group
 * one stream with its scales beside the payload. The copy has about the file's size;
 * the file pages it came from are released, so the model still holds one copy of
 * each weight. */
#ifndef LLMGEN_REPACK_H
#define LLMGEN_REPACK_H

#include "model.h"

/* Repack every matrix of m the plan routes so (layers, lm_head; an untied GGUF
 * embedding stays in the file mapping, an MLX 4-bit one is packed too), in
 * parallel over m->pool, setting tensor.packed: the layers' and the lm_head
 * into one arena laid out in the order the threads stream them (tensor.parts,
 * see repack.c), anything else on its own. -1 with a message if memory runs
 * out (what was repacked stays valid and is freed by repack_free). */
int repack_weights(model *m, char *err);

/* Release what repack_weights allocated (tensor.packed back to NULL). */
void repack_free(model *m);

/* The packed form of a whole 2-D tensor t of a type with a packed layout (quant.h) into
 * out (q8w_matrix_bytes of its packed type), on the calling thread. */
void repack_matrix(const tensor *t, void *out);

/* An MLX 4-bit matrix t written into out in the packed layout of plan_affine4_type (rows * cols / 32
 * * q8w_block_bytes(type) bytes), on the calling thread; 0 if some scale or bias
 * is not exactly an f16 (out is then partly written). repack_weights does this,
 * in fast mode, to every MLX 4-bit matrix (repack.c). */
int repack_affine4_matrix(const tensor *t, void *out);

/* Row `row` of a repacked tensor dequantized to f32: the same values as
 * tensor_row_f32 gives from the file layout (lookups in a tied or MLX embedding
 * read the packed copy, so the released file pages stay released). */
void repack_row_f32(const tensor *t, int64_t row, float *out);

#endif
