/* forward.h - the forward pass over a chunk of tokens, writing the KV cache. */
#ifndef LLMGEN_FORWARD_H
#define LLMGEN_FORWARD_H

#include "model.h"

/* Tokens of one attention task in prefill: the keys and values of a head are
 * read once for this many queries. */
#define ATT_TOKENS 16

/* Positions per block of the transposed key cache. */
#define ATT_KBLOCK 64

/* Where one layer's cache lives in fwd_state's k_cache and v_cache. */
typedef struct {
    int ring;         /* 0: position p in slot p, room for ctx positions; > 0 (a sliding-window
                         layer): a ring buffer of `ring` positions, position p in slot p % ring */
    size_t k_off;     /* elements of k_cache before this layer's keys */
    size_t v_off;     /* elements of v_cache before this layer's values */
} fwd_kv_layer;

/* Scratch and cache of one sequence. Owned by a session. */
typedef struct {
    int ctx;          /* KV capacity in tokens */
    int chunk;        /* most tokens per forward call */
    int fast;         /* fast mode (some weights take the int8-activation kernels): bf16
                         cache, the kernels' polynomial e^x in softmax and SwiGLU */
    dtype kv_type;    /* DT_F32 in exact mode (the f32 path stays token-exact), DT_BF16 in
                         fast mode (kernels.h's pair layouts): half the bytes decode attention
                         streams per token, and twice the products per instruction where the
                         CPU has a bf16 dot product */
    void *k_cache;    /* layer after layer (kvl), each (n_kv_heads, blocks, head_dim, ATT_KBLOCK)
                         kv_type with blocks = ceil(ctx / ATT_KBLOCK), or ring / ATT_KBLOCK
                         on a ring layer: keys transposed in blocks of positions, so q . K^T
                         is a broadcast-FMA over 64 positions per vector row (kernels.h,
                         att_scores), and a new position touches one block per head
                         (a layout with whole-context rows touched head_dim pages per
                         head on the first token: +15 ms to a cold start) */
    int score_ld;     /* floats per row of scores: ctx plus a cache line, so that rows
                         do not all map to the same cache sets */
    void *v_cache;    /* layer after layer, each (n_kv_heads, ctx or ring rounded up to even,
                         head_dim) kv_type (BF16: rows of position pairs interleaved):
                         values in rows, so probabilities times values is a broadcast-FMA
                         over dims, and one kv head's values are one contiguous stream */
    int ring;         /* positions a sliding-window layer keeps (fwd_ring_size), 0 when every
                         layer keeps ctx (no sliding layers, or a context no longer than that) */
    fwd_kv_layer *kvl;/* (n_layers) each layer's place in the caches */
    size_t kv_bytes;  /* bytes of k_cache and v_cache together */
    int written;      /* 1 + the last position written since the cache was empty (the
                         caller resets it with its position): what a ring may have overwritten */
    float *x;         /* (chunk, dim) residual stream */
    float *xb;        /* (chunk, dim) normed input / projection output */
    float *shared;    /* one allocation for q, att_out, k_new, v_new (attention phase of a
                         layer) and hb2 (its MLP phase, when those four are dead) */
    float *q;         /* (chunk, n_heads * head_dim) */
    float *k_new;     /* (chunk, n_kv_heads * head_dim) keys of this chunk, RoPE'd here
                         before their transposed copy into k_cache */
    float *v_new;     /* (chunk, n_kv_heads * head_dim) values of this chunk, before
                         their copy into v_cache */
    float *rope_cs;   /* (2, chunk, rot_dim) cos then sin of each token's angles: the model's
                         RoPE table, then the sliding layers' own (Gemma 3) */
    int seq_end;      /* set by the caller before a run of forward calls: the position after
                         the last token of the whole run (LongRoPE picks its factors by it);
                         0: each call's own end */
    float *att_out;   /* (chunk, n_heads * head_dim) attention output before wo */
    float *hb;        /* (chunk, hidden_dim) gate, then silu(gate) * up */
    float *hb2;       /* (chunk, hidden_dim) up; overlaps q .. v_new (see shared) */
    float *scores;    /* (n_threads, ATT_TOKENS * group, score_ld) attention scores, one block
                         per thread (group = n_heads / n_kv_heads) */
    float *att_rows;  /* (n_threads, 3, ATT_TOKENS * group, head_dim) per thread: a block's
                         queries gathered (token, head of the group), its outputs, and the
                         part of the outputs after a ring's wrap (ops_attend_block) */
    float *logits;    /* (vocab) logits of the last token of the last call */
    float *logits_all; /* (chunk, vocab) or NULL (the default): when set by the caller (who
                         owns it), forward() writes the logits of every token of the call
                         here, row t for token t, and s->logits as well */
    int max_seqs;     /* sequences a forward_batch call on this scratch may carry (0: itself only) */
    float *seq_logits;/* (max_seqs, vocab) forward_batch's logits rows, before their copy to each
                         sequence's state; NULL when max_seqs is 0 */
    int *tok_seg;     /* (chunk) sequence of each token row of the last call */
    int *tok_pos;     /* (chunk) its position */
    q8_act xq;        /* fast mode: a matmul input quantized to int8, buffers for
                         (chunk, max(dim, n_heads * head_dim, hidden_dim)) */
    q8_act xq_down;   /* fast mode: the down projection's input (chunk, hidden_dim),
                         quantized by the gate/up threads while others still read xq */
} fwd_state;

/* Most tokens per forward call of one sequence alone. */
#define FWD_CHUNK 128

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

/* The cache a sequence at position pos holds, as one flat run of bytes (per layer
 * and kv head: the key blocks, then the value rows, of positions [0, pos), or of
 * the whole ring once pos passes it, slot by slot): copied into buf (save = 1) or
 * from it (save = 0, which also sets s->written to pos); buf NULL: only the size.
 * Returns the size in bytes. */
size_t fwd_cache_io(fwd_state *s, const model_config *c, int pos, void *buf, int save);

/* Positions a sliding-window layer keeps in a ring: the window, the most tokens one
 * call adds (FWD_CHUNK), and the block-aligned start of the read (up to
 * ATT_KBLOCK - 1 positions before the window), rounded up to whole blocks; 0 for a
 * model without sliding layers. A constant of the model, so that a sequence's bits
 * (where a read wraps) do not depend on its context size or batch. */
int fwd_ring_size(const model_config *c);

/* 1 if the cache still holds every position a token at position pos reads (its
 * window), so that a sequence can go back to pos and continue: always without a
 * ring; with one, unless a later position has overwritten a slot in that window. */
int fwd_cache_can_rewind(const fwd_state *s, const model_config *c, int pos);

/* The rows of each weight matrix that thread `part` of `nth` starts on in a
 * decode step (its own share of each matmul, before it helps with the others'),
 * in the order forward() reads them: emit(ctx, w, row0, row1) for each
 * non-empty range. repack.c lays the packed weights out part after part in
 * this order, so each thread streams one contiguous run of memory per token. */
typedef void (*fwd_rows_fn)(void *ctx, const tensor *w, int row0, int row1);
void fwd_decode_rows(const model *m, int part, int nth, fwd_rows_fn emit, void *ctx);

#endif
