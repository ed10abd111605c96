/* forward.h - the Llama forward pass over a chunk of tokens, writing the KV cache. */
#ifndef LLMGEN_FORWARD_H
#define LLMGEN_FORWARD_H

#include "model.h"

/* Scratch and cache of one sequence. Owned by a session. */
typedef struct {
    int ctx;          /* KV capacity in tokens */
    int chunk;        /* most tokens per forward call */
    float *k_cache;   /* (n_layers, ctx, n_kv_heads * head_dim) */
    float *v_cache;   /* (n_layers, ctx, n_kv_heads * head_dim) */
    float *x;         /* (chunk, dim) residual stream */
    float *xb;        /* (chunk, dim) normed input / projection output */
    float *q;         /* (chunk, n_heads * head_dim) */
    float *att_out;   /* (chunk, n_heads * head_dim) attention output before wo */
    float *hb;        /* (chunk, hidden_dim) gate, then silu(gate) * up */
    float *hb2;       /* (chunk, hidden_dim) up */
    float *scores;    /* (n_threads, ctx) attention scores, one row per thread */
    float *logits;    /* (vocab) logits of the last token of the last call */
    q8_act xq;        /* fast mode: a matmul input quantized to int8, buffers for
                         (chunk, max(dim, n_heads * head_dim, hidden_dim)) */
} fwd_state;

int fwd_state_init(fwd_state *s, const model *m, int ctx, char *err);
void fwd_state_free(fwd_state *s);

/* Run tokens ids[0..n) at positions pos..pos+n (n <= s->chunk, pos + n <= s->ctx),
 * appending their keys and values to the cache; fills s->logits for the last token. */
void forward(const model *m, fwd_state *s, const int32_t *ids, int n, int pos);

#endif
