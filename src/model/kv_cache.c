/* kv_cache.c - one sequence's KV cache (layout in kv_cache.h and kernels.h). */
#include "kv_cache.h"

#include <stdlib.h>
#include <string.h>

int kv_ring_size(const model_config *c) {
    int any = 0;
    for (int l = 0; l < c->n_layers; l++) any |= c->layer_flags[l] & LAYER_SLIDING;
    if (!any || c->sliding_window <= 0) return 0;
    /* a call of n <= FWD_CHUNK tokens at pos reads from the first token's window start
     * aligned down to a block, pos + 1 - window - (up to ATT_KBLOCK - 1), to pos + n - 1:
     * at most window + FWD_CHUNK + ATT_KBLOCK - 2 positions, none of them overwritten by
     * the call's own writes when the ring is at least that long */
    int64_t need = (int64_t)c->sliding_window + FWD_CHUNK + ATT_KBLOCK - 2;
    need = (need + ATT_KBLOCK - 1) / ATT_KBLOCK * ATT_KBLOCK;
    return need > INT32_MAX / 2 ? 0 : (int)need;
}

int kv_cache_init(kv_cache *kv, const model_config *c, int ctx, dtype type) {
    memset(kv, 0, sizeof *kv);
    /* sliding-window layers keep a ring of their window (plus a chunk) once the
     * context is longer: Gemma 3's 5 of 6 layers at window 512 hold 704 positions */
    int ring = kv_ring_size(c);
    kv->ctx = ctx;
    kv->type = type;
    kv->ring = ring && ring < ctx ? ring : 0;
    kv->layers = malloc((size_t)c->n_layers * sizeof *kv->layers);
    if (!kv->layers) return -1;
    size_t k_elems = 0, v_elems = 0, lin = 0;
    size_t lin_layer = config_lin_floats(c);
    for (int l = 0; l < c->n_layers; l++) {
        int r = c->layer_flags[l] & LAYER_SLIDING ? kv->ring : 0, cap = r ? r : ctx;
        int hd = c->per_layer ? c->layer_head_dim[l] : c->head_dim;
        int heads = c->per_layer ? c->layer_kv_heads[l] : c->n_kv_heads;
        size_t kvd = (size_t)heads * hd;
        kv->layers[l] = (kv_layer){r, k_elems, v_elems, lin, hd, heads};
        if (c->layer_flags[l] & LAYER_KV_SHARED) { /* an earlier layer's (config_set_kv_sharing) */
            kv->layers[l] = kv->layers[c->kv_source[l]];
            continue;
        }
        if (c->layer_flags[l] & LAYER_LINEAR) {
            lin += lin_layer;
            continue;
        }
        k_elems += kvd * (size_t)((cap + ATT_KBLOCK - 1) / ATT_KBLOCK * ATT_KBLOCK);
        v_elems += kvd * (size_t)kv_value_cap(type, cap);
    }
    /* calloc of large blocks maps zero pages lazily: the cache costs memory as it fills */
    size_t esz = dtype_row_bytes(type, 1);
    kv->bytes = (k_elems + v_elems) * esz + lin * sizeof(float);
    kv->k = calloc(k_elems ? k_elems : 1, esz);
    kv->v = calloc(v_elems ? v_elems : 1, esz);
    kv->lin_floats = lin;
    kv->lin = lin ? calloc(lin, sizeof(float)) : NULL;
    kv->lin_snap = lin ? calloc(lin, sizeof(float)) : NULL;
    kv->snap_pos = -1;
    kv->bytes += lin * sizeof(float);
    if (!kv->k || !kv->v || (lin && (!kv->lin || !kv->lin_snap))) {
        kv_cache_free(kv);
        return -1;
    }
    return 0;
}

void kv_cache_free(kv_cache *kv) {
    free(kv->layers);
    free(kv->k);
    free(kv->v);
    free(kv->lin);
    free(kv->lin_snap);
    memset(kv, 0, sizeof *kv);
}

void kv_lin_snapshot(kv_cache *kv, int pos) {
    memcpy(kv->lin_snap, kv->lin, kv->lin_floats * sizeof(float));
    kv->snap_pos = pos;
}

int kv_lin_restore(kv_cache *kv) {
    if (kv->snap_pos >= 0) memcpy(kv->lin, kv->lin_snap, kv->lin_floats * sizeof(float));
    return kv->snap_pos;
}

float *kv_lin_conv(const kv_cache *kv, int l) { return kv->lin + kv->layers[l].lin_off; }

float *kv_lin_state(const kv_cache *kv, const model_config *c, int l) {
    return kv->lin + kv->layers[l].lin_off + (size_t)(c->lin_conv - 1) * config_lin_channels(c);
}

/* Positions layer l's cache holds, and its key blocks per head. */
static int layer_cap(const kv_cache *kv, int l) { return kv->layers[l].ring ? kv->layers[l].ring : kv->ctx; }
static int layer_blocks(const kv_cache *kv, int l) { return (layer_cap(kv, l) + ATT_KBLOCK - 1) / ATT_KBLOCK; }

void *kv_key_head(const kv_cache *kv, const model_config *c, int l, int h) {
    (void)c;
    int64_t per_head = (int64_t)layer_blocks(kv, l) * kv->layers[l].hd * ATT_KBLOCK;
    return (char *)kv->k + dtype_row_bytes(kv->type, (int64_t)kv->layers[l].k_off + h * per_head);
}

void *kv_value_head(const kv_cache *kv, const model_config *c, int l, int h) {
    (void)c;
    int64_t per_head = (int64_t)kv_value_cap(kv->type, layer_cap(kv, l)) * kv->layers[l].hd;
    return (char *)kv->v + dtype_row_bytes(kv->type, (int64_t)kv->layers[l].v_off + h * per_head);
}

void kv_key_put(dtype type, void *kh, int slot, const float *x, int hd) {
    if (type == DT_F32) {
        for (int d = 0; d < hd; d++) ((float *)kh)[kv_key_at(type, slot, d, hd)] = x[d];
        return;
    }
    for (int d = 0; d < hd; d += 2) { /* a pair of dimensions per dword */
        uint16_t pair[2] = {kv_bf16(x[d]), kv_bf16(x[d + 1])};
        memcpy((uint16_t *)kh + kv_key_at(type, slot, d, hd), pair, 4);
    }
}

void kv_value_put(dtype type, void *vh, int slot, const float *x, int hd) {
    if (type == DT_F32) {
        memcpy((float *)vh + (size_t)slot * hd, x, (size_t)hd * sizeof(float));
        return;
    }
    uint16_t *dst = (uint16_t *)vh + kv_bf16_value(slot, 0, (size_t)hd);
    for (int d = 0; d < hd; d++) dst[2 * d] = kv_bf16(x[d]);
}

/* The first position a token at pos reads in a sliding layer: its window's start,
 * down to a key block (ops_attend_block reads whole blocks). */
static int window_block(const model_config *c, int pos) {
    int lo = pos + 1 - c->sliding_window;
    return lo > 0 ? lo / ATT_KBLOCK * ATT_KBLOCK : 0;
}

size_t kv_cache_io(kv_cache *kv, const model_config *c, int pos, void *buf, int save) {
    size_t at = 0;
    for (int l = 0; l < c->n_layers; l++) {
        if (c->layer_flags[l] & LAYER_LINEAR) {
            size_t nb = config_lin_floats(c) * sizeof(float);
            if (buf) {
                char *b = (char *)buf + at;
                if (save) memcpy(b, kv_lin_conv(kv, l), nb);
                else memcpy(kv_lin_conv(kv, l), b, nb);
            }
            at += nb;
            continue;
        }
        if (c->layer_flags[l] & LAYER_KV_SHARED) continue; /* its producer's cache */
        /* a ring past its length holds its every slot; before, as a plain cache, [0, pos) */
        int held = kv->layers[l].ring && pos > kv->layers[l].ring ? kv->layers[l].ring : pos;
        int kb = (held + ATT_KBLOCK - 1) / ATT_KBLOCK, hd = kv->layers[l].hd;
        size_t kbytes = dtype_row_bytes(kv->type, (int64_t)kb * hd * ATT_KBLOCK);
        size_t vbytes = dtype_row_bytes(kv->type, (int64_t)kv_value_cap(kv->type, held) * hd);
        for (int h = 0; h < kv->layers[l].heads; h++) {
            void *k = kv_key_head(kv, c, l, h), *v = kv_value_head(kv, c, l, h);
            if (buf) {
                char *b = (char *)buf + at;
                if (save) memcpy(b, k, kbytes), memcpy(b + kbytes, v, vbytes);
                else memcpy(k, b, kbytes), memcpy(v, b + kbytes, vbytes);
            }
            at += kbytes + vbytes;
        }
    }
    if (buf && !save) kv->snap_pos = -1;
    if (buf && !save) {
        /* the saved ring's slots may hold positions past pos (a pass taken back before
         * the save): count as written every position a rewind to pos allows, so that no
         * earlier rewind reads an overwritten slot */
        int last = window_block(c, pos) + kv->ring;
        kv->written = kv->ring && pos > 0 && last > pos ? last : pos;
    }
    return at;
}

int kv_cache_can_rewind(const kv_cache *kv, const model_config *c, int pos) {
    if (pos <= 0) return 1;
    if (kv->lin) return pos >= kv->written || (kv->snap_pos >= 0 && pos >= kv->snap_pos);
    if (!kv->ring) return 1;
    /* the next token's read starts here (ops_attend_block); a slot of a position p
     * before pos may hold p + ring (or later) once that was written */
    return (int64_t)window_block(c, pos) + kv->ring >= kv->written;
}
