/* kv_cache.h - one sequence's KV cache: where each layer's keys and values live (a
 * plain cache of ctx positions, or a ring on a sliding-window layer), how one
 * position is written, saved and restored, and whether a sequence can go back. */
#ifndef LLMGEN_KV_CACHE_H
#define LLMGEN_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "kernels/kernels.h"

/* Positions per block of the transposed key cache. */
#define ATT_KBLOCK 64

/* Most tokens per forward call of one sequence alone (forward.h): a ring holds the
 * window plus this many, so that one call never overwrites what it reads. */
#define FWD_CHUNK 128

/* Where one layer's cache lives in kv_cache's k and v. */
typedef struct {
    int ring;         /* 0: position p in slot p, room for ctx positions; > 0 (a sliding-window
                         layer): a ring buffer of `ring` positions, position p in slot p % ring */
    size_t k_off;     /* elements of k before this layer's keys */
    size_t v_off;     /* elements of v before this layer's values */
    size_t lin_off;   /* a LAYER_LINEAR layer (no keys, no values): floats of lin before its states */
    int hd, heads;    /* its head_dim and kv heads (the layer's own with per-layer shapes) */
} kv_layer;

typedef struct {
    int ctx;          /* capacity in positions */
    dtype type;       /* DT_F32 in exact mode (the f32 path stays token-exact), DT_BF16 in
                         fast mode (kernels.h's pair layouts): half the bytes decode attention
                         streams per token, and twice the products per instruction where the
                         CPU has a bf16 dot product */
    void *k;          /* layer after layer (layers), each (n_kv_heads, blocks, head_dim, ATT_KBLOCK)
                         of type with blocks = ceil(ctx / ATT_KBLOCK), or ring / ATT_KBLOCK
                         on a ring layer: keys transposed in blocks of positions, so q . K^T
                         is a broadcast-FMA over 64 positions per vector row (kernels.h,
                         att_scores), and a new position touches one block per head
                         (a layout with whole-context rows touched head_dim pages per
                         head on the first token: +15 ms to a cold start) */
    void *v;          /* layer after layer, each (n_kv_heads, ctx or ring rounded up to even,
                         head_dim) of type (BF16: rows of position pairs interleaved):
                         values in rows, so probabilities times values is a broadcast-FMA
                         over dims, and one kv head's values are one contiguous stream */
    int ring;         /* positions a sliding-window layer keeps (kv_ring_size), 0 when every
                         layer keeps ctx (no sliding layers, or a context no longer than that) */
    kv_layer *layers; /* (n_layers) each layer's place in k and v; a LAYER_KV_SHARED layer's is its
                         kv_source's (it owns no cache: nothing allocated for it) */
    float *lin;       /* the LAYER_LINEAR layers' states, f32 in every mode (kv_lin_conv, kv_lin_state);
                         NULL without such layers. They hold what the sequence's positions [0, written)
                         left, so the sequence can go back only to 0 (kv_cache_can_rewind) */
    size_t lin_floats;
    float *lin_snap;  /* (lin_floats) the states as they stood at position snap_pos: taken by every
                         forward call of several tokens (and at position 0), so that a sequence can go
                         back to any position from snap_pos on by running its ids from there again */
    int snap_pos;     /* -1: no snapshot */
    size_t bytes;     /* bytes of k, v and lin together */
    int written;      /* 1 + the last position written since the cache was empty (the
                         caller resets it with its position): what a ring may have overwritten */
} kv_cache;

/* A cache of ctx positions of element type `type` (DT_F32 or DT_BF16) for the layers of c;
 * -1 when memory runs out (nothing to free then). Pages are mapped as the cache fills. */
int kv_cache_init(kv_cache *kv, const model_config *c, int ctx, dtype type);
void kv_cache_free(kv_cache *kv);

/* Positions a sliding-window layer keeps in a ring: the window, the most tokens one
 * call adds (FWD_CHUNK), and the block-aligned start of the read (up to
 * ATT_KBLOCK - 1 positions before the window), rounded up to whole blocks; 0 for a
 * model without sliding layers. A constant of the model, so that a sequence's bits
 * (where a read wraps) do not depend on its context size or batch. */
int kv_ring_size(const model_config *c);

/* A LAYER_LINEAR layer's conv state, (lin_conv - 1, conv channels) oldest input first, and its
 * recurrent state, (lin_hv, lin_dk, lin_dv). */
float *kv_lin_conv(const kv_cache *kv, int l);
float *kv_lin_state(const kv_cache *kv, const model_config *c, int l);

/* The LAYER_LINEAR states into the snapshot, as position pos has them; back from it (returns
 * its position, -1 when there is none). */
void kv_lin_snapshot(kv_cache *kv, int pos);
int kv_lin_restore(kv_cache *kv);

/* Layer l's keys of kv head h: (blocks, head_dim, ATT_KBLOCK); values: (ctx or ring,
 * rounded up to even for BF16's position pairs, head_dim). */
void *kv_key_head(const kv_cache *kv, const model_config *c, int l, int h);
void *kv_value_head(const kv_cache *kv, const model_config *c, int l, int h);

/* The slot position p takes in layer l (its ring, or p itself). */
static inline int kv_slot(const kv_cache *kv, int l, int p) {
    int ring = kv->layers[l].ring;
    return ring ? p % ring : p;
}

/* The positions a kv head's value cache spans when it holds cap of them: BF16 keeps
 * whole pairs of positions (kernels.h), so an odd cap takes one more. */
static inline int kv_value_cap(dtype type, int cap) { return type == DT_BF16 ? cap + (cap & 1) : cap; }

/* Element index of dimension d of position `slot` in a kv head's key cache of `type`:
 * keys transposed in blocks of ATT_KBLOCK positions (f32: one element per row of the
 * block; BF16: a pair of dimensions per dword row). */
static inline size_t kv_key_at(dtype type, int slot, int d, int hd) {
    if (type == DT_BF16) return kv_bf16_key(slot, d, ATT_KBLOCK, hd);
    return ((size_t)slot / ATT_KBLOCK * hd + (size_t)d) * ATT_KBLOCK + slot % ATT_KBLOCK;
}

/* The hd values x of position `slot` into one kv head's keys kh (from kv_key_head) or
 * values vh (kv_value_head), as `type` lays them out (values in rows; BF16: rows of a
 * position pair interleaved). */
void kv_key_put(dtype type, void *kh, int slot, const float *x, int hd);
void kv_value_put(dtype type, void *vh, int slot, const float *x, int hd);

/* The cache a sequence at position pos holds, as one flat run of bytes (per layer
 * and kv head: the key blocks, then the value rows, of positions [0, pos), or of
 * the whole ring once pos passes it, slot by slot; per LAYER_LINEAR layer its conv and
 * recurrent states, as position pos left them): copied into buf (save = 1) or
 * from it (save = 0, which also sets kv->written to pos, or with a ring to the last
 * position a rewind to pos allows: the saved slots may hold any of them); buf NULL:
 * only the size.
 * Returns the size in bytes. */
size_t kv_cache_io(kv_cache *kv, const model_config *c, int pos, void *buf, int save);

/* 1 if the cache still holds every position a token at position pos reads (its
 * window), so that a sequence can go back to pos and continue: always without a
 * ring; with one, unless a later position has overwritten a slot in that window.
 * With LAYER_LINEAR layers (whose states cannot be rolled back) pos 0, pos >= written,
 * and the positions from the snapshot's on (the caller restores it and runs the ids
 * from snap_pos to pos again). */
int kv_cache_can_rewind(const kv_cache *kv, const model_config *c, int pos);

#endif
