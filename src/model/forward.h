/* forward.h - the forward pass over a chunk of tokens, writing the KV cache. */
#ifndef LLMGEN_FORWARD_H
#define LLMGEN_FORWARD_H

#include <stdatomic.h>

#include "kv_cache.h"
#include "model.h"

/* Tokens of one attention task in prefill: the keys and values of a head are
 * read once for this many queries. */
#define ATT_TOKENS 16

/* Scratch and cache of one sequence. Owned by a session. */
typedef struct {
    int ctx;          /* KV capacity in tokens */
    int chunk;        /* most tokens per forward call */
    int fast;         /* fast mode (some weights take the int8-activation kernels): bf16
                         cache, the kernels' polynomial e^x in softmax and SwiGLU */
    kv_cache kv;      /* the sequence's keys and values (kv_cache.h) */
    int score_ld;     /* floats per row of scores: ctx plus a cache line, so that rows
                         do not all map to the same cache sets */
    float *x;         /* (chunk, dim) residual stream */
    float *xb;        /* (chunk, dim) normed input / projection output */
    float *shared;    /* one allocation for q, att_out, k_new, v_new (attention phase of a
                         layer) and hb2 (its MLP phase, when those four are dead) */
    float *q;         /* (chunk, n_heads * head_dim) */
    float *k_new;     /* (chunk, n_kv_heads * head_dim) keys of this chunk, RoPE'd here
                         before their transposed copy into the cache */
    float *v_new;     /* (chunk, n_kv_heads * head_dim) values of this chunk, before
                         their copy into the cache */
    float *rope_cs;   /* (2, chunk, rot_dim) cos then sin of each token's angles: the model's
                         RoPE table, then the sliding layers' own (Gemma 3) */
    int seq_end;      /* set by the caller before a run of forward calls: the position after
                         the last token of the whole run (LongRoPE picks its factors by it);
                         0: each call's own end */
    float *att_out;   /* (chunk, n_heads * head_dim) attention output before wo */
    float *q_gate;    /* ARCH_ATTN_GATE: (chunk, 2 * n_heads * head_dim) q_proj's output, per head the
                         query (copied to q once normed and rotated) then the output gate; else NULL */
    float *lin_in;    /* LAYER_LINEAR layers: (chunk, lin_ld) the input projections (conv channels, z,
                         b, a; deltanet.h), the conv's output in place of its inputs; else NULL */
    float *lin_out;   /* (chunk, lin_hv * lin_dv) the DeltaNet's output before out_proj */
    int lin_ld;
    float *hb;        /* (chunk, hidden_dim) gate, then silu(gate) * up */
    float *hb2;       /* (chunk, hidden_dim) up; overlaps q .. v_new (see shared) */
    float *scores;    /* (n_threads, ATT_TOKENS * group, score_ld) attention scores, one block
                         per thread (group = n_heads / n_kv_heads) */
    float *att_rows;  /* (n_threads, 3, ATT_TOKENS * group, head_dim) per thread: a block's
                         queries gathered (token, head of the group), its outputs, and the
                         part of the outputs after a ring's wrap (ops_attend_block) */
    float *logits;    /* (vocab) logits of the last token of the last call */
    int no_logits;    /* set by the caller: forward() leaves logits as they are (a rerun that only
                         rebuilds the states, kv_cache.h's snapshot) */
    float *logits_all; /* (chunk, vocab) or NULL (the default): when set by the caller (who
                         owns it), forward() writes the logits of every token of the call
                         here, row t for token t, and s->logits as well */
    int max_seqs;     /* sequences a forward_batch call on this scratch may carry (0: itself only) */
    float *seq_logits;/* (max_seqs, vocab) forward_batch's logits rows, before their copy to each
                         sequence's state; NULL when max_seqs is 0 */
    int *tok_seg;     /* (chunk) sequence of each token row of the last call */
    int *tok_pos;     /* (chunk) its position */
    atomic_int *kv_ready; /* (n_kv_heads) the qkv pass's rows written per kv head (forward.c,
                         attention_in_qkv) */
    q8_act xq;        /* fast mode: a matmul input quantized to int8, buffers for
                         (chunk, max(dim, n_heads * head_dim, hidden_dim)) */
    q8_act xq_down;   /* fast mode: the down projection's input (chunk, hidden_dim),
                         quantized by the gate/up threads while others still read xq */
    struct fwd_moe *moe; /* an expert layer's scratch (forward.c, stage_experts), or NULL */
    float *pli;       /* ARCH_PER_LAYER_INPUT: (chunk, n_layers * P) each token's per-layer inputs; else NULL */
    float *pl_h;      /* (chunk, P) a layer's gate over them */
} fwd_state;

int fwd_state_init(fwd_state *s, const model *m, int ctx, char *err);
/* A state whose scratch takes `chunk` tokens of up to max_seqs sequences per call
 * (forward_batch), with a KV cache of ctx positions of its own. max_seqs 0: a
 * sequence's own state (forward, or forward_batch with itself as the one kv). */
int fwd_state_init_batch(fwd_state *s, const model *m, int ctx, int chunk, int max_seqs, char *err);
void fwd_state_free(fwd_state *s);

/* Run tokens ids[0..n) at positions pos..pos+n (n <= s->chunk <= FWD_CHUNK, pos + n <= s->ctx),
 * appending their keys and values to the cache; fills s->logits for the last token
 * (and s->logits_all for every token when it is set). */
void forward(const model *m, fwd_state *s, const int32_t *ids, int n, int pos);

/* One sequence's part of a batched step: its tokens, at positions pos.., go into
 * kv's cache, and kv->logits gets its last token's logits. */
typedef struct {
    fwd_state *kv;
    const int32_t *ids;
    int n, pos;
    int seq_end;      /* as fwd_state.seq_end, for this sequence */
} fwd_seg;

/* Several sequences in one pass: every matmul reads the weights once for all their
 * tokens (sum of n <= s->chunk, nseg <= s->max_seqs; kv states of the same model
 * and mode, ctx <= s->ctx, each segment's n <= FWD_CHUNK: a ring holds no more); s is scratch only (s may be segs[0].kv when nseg is 1).
 * A sequence's logits are the same bits as when it runs alone: every kernel's
 * output element depends only on its own row (kernels.h). */
void forward_batch(const model *m, fwd_state *s, const fwd_seg *segs, int nseg);

#endif
