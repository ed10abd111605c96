/* src/model/: one model's facts and forward pass: the architecture table, config readers,
 * loader, matmul plan, repacker, forward pass and KV cache. Knows nothing of sessions, sampling,
 * generation loops or the CLI.
 *
 * model.h - a loaded model of any family in arch.h: config, weight views into the file
 * mapping, the tokenizer (if the file has one), kernels and threads. loader.h opens one;
 * read-only after that: one model serves many sessions. */
#ifndef LLMGEN_MODEL_H
#define LLMGEN_MODEL_H

#include "config.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"
#include "plan.h"
#include "formats/safetensors.h"
#include "base/tensor.h"
#include "base/threads.h"
#include "tokenizer.h"

typedef struct model {
    char *path;              /* what the user gave: a .gguf file or a model directory */
    model_config cfg;
    gguf_file *gguf;         /* exactly one of gguf / st owns the weight mapping */
    st_file *st;
    const tensor *tok_embd;  /* (vocab, dim) any supported dtype; rows dequantized on lookup */
    layer_weights *layers;   /* (n_layers) */
    float *out_norm;         /* (dim) f32 */
    const tensor *lm_head;   /* (vocab, dim); == tok_embd when embeddings are tied */
    struct affine_store *affine; /* owns the assembled MLX affine views (affine.c); NULL if none */
    float *rope_inv_freq;    /* (rot_dim / 2) rotary frequencies, scaling applied (LongRoPE: the short
                                factors); one allocation with the two below */
    float *rope_inv_freq_swa;/* (rot_dim / 2) those of sliding-window layers with a base of their own
                                (Gemma 3), or NULL */
    float *rope_inv_freq_long;/* (rot_dim / 2) LongRoPE's long factors, or NULL */
    float embed_scale;       /* ARCH_EMBED_SCALE: sqrt(dim) rounded to f32; else 1 */
    model_config *layer_cfg; /* (n_layers) each layer's view of cfg (config_layer_view) when its shapes are
                                per layer (cfg.per_layer), else NULL: model_layer_cfg */
    const tensor *ple_embd;  /* ARCH_PER_LAYER_INPUT: (ple_vocab, n_layers * P) the per-layer embedding table,
                                a view of the mapping (a token reads its one row) */
    const tensor *ple_proj;  /* (n_layers * P, dim) per_layer_model_projection */
    float *ple_norm;         /* (P) per_layer_projection_norm */
    expert_block *experts;   /* (n_layers) the expert layers' blocks (layer_weights.moe points here), or NULL */
    const tensor **expert_ptrs; /* (expert layers, 3, n_experts) the blocks' gate / up / down lists */
    tensor *expert_views;    /* (expert layers, 3, n_experts) the experts cut out of stacked 3-D tensors */
    void **expert_copies;    /* (n_layers) owned: a layer's experts rewritten at load (HF's transposed stacks,
                                MXFP4 blocks into GGUF's; ARCH_EXPERT_BIAS), or NULL */
    tensor *views;           /* (n_layers * 5) row ranges of fused tensors (wq, wk, wv of a qkv tensor,
                                ...): owned here */
    int n_views;
    tokenizer *tok;          /* NULL when the file carries no tokenizer */
    const kernels *kern;
    thread_pool *pool;
    plan plan;               /* route, activation grouping and thread split of every matmul (plan.h) */
    const char *format;      /* "gguf" or "safetensors" */
    char weight_types[64];   /* e.g. "Q4_1+Q8_0+F32": distinct dtypes of the weights */
    void *arena;             /* fast mode: the repacked layer matrices and lm_head (repack.c) */
    size_t arena_bytes;
    packed_part *part_table; /* the tensors' packed_part runs, all in one allocation */
} model;

/* Layer l's config: its own shapes (model.layer_cfg) or the model's. */
static inline const model_config *model_layer_cfg(const model *m, int l) {
    return m->layer_cfg ? &m->layer_cfg[l] : &m->cfg;
}

#endif
