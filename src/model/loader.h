/* loader.h - a model from a file (model.h has the struct): each tensor found by name
 * through the architecture table, shapes checked, the matrices the plan routes so
 * repacked (repack.h), the tokenizer loaded. */
#ifndef LLMGEN_LOADER_H
#define LLMGEN_LOADER_H

#include "model.h"

typedef struct {
    int n_threads;           /* >= 1 */
    const char *kernels;     /* NULL = best for this CPU; "scalar", "avx2", "avx512", "neon" */
    int no_tokenizer;        /* 1: do not load the tokenizer */
    int exact;               /* 1: f32 activations on the file layout (token-exact with HF);
                                0: the matmul plan's int8 routes where a kernel exists (plan.h) */
    int split_all;           /* 1: every pass on all n_threads (plan.h) */
} model_options;

/* Open `path` (a .gguf file, a directory with config.json and safetensors, or a
 * .safetensors file with config.json beside it). On failure returns -1 with a
 * message; *io_error tells whether it was an I/O problem (missing / unreadable)
 * rather than bad content. */
int model_open(const char *path, const model_options *opt, model **out, int *io_error, char *err);
/* Only the tokenizer of `path` (a model directory, a tokenizer.json or a GGUF), no
 * weights: a model without layers, kernels or threads, for tokenize / detokenize. */
int model_open_tokenizer(const char *path, model **out, int *io_error, char *err);
void model_free(model *m);

/* Dequantize row `row` of a 2-D tensor into out (cols floats). */
void tensor_row_f32(const tensor *t, int64_t row, float *out);

#endif
