/* build.c - tables every loader ends with: each token's decoded piece, the
 * map BPE looks words up in, the byte tokens, the merge table. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

const char *tok_text(const tokenizer *t, int32_t id, size_t *len) {
    *len = (size_t)(t->text_off[id + 1] - t->text_off[id]);
    return t->text_pool + t->text_off[id];
}

/* "<0xNN>" -> NN, else -1. */
static int byte_token(const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    if (n != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    const char *h = strchr(hex, s[3]), *l = strchr(hex, s[4]);
    if (!h || !l || !s[3] || !s[4]) return -1;
    return (int)((h - hex) * 16 + (l - hex));
}

/* One token decoded alone, as the reference decoder chain treats it. */
static size_t piece_of(tokenizer *t, int32_t id, char *out) {
    size_t n;
    const char *s = tok_text(t, id, &n);
    if (t->kind == TOK_BYTELEVEL) {
        long m = tok_bytelevel_decode(s, n, out);
        if (m >= 0) return (size_t)m;
        t->flags[id] |= TOKF_RAW;
        memcpy(out, s, n); /* not all byte-level chars: the reference keeps the text */
        return n;
    }
    int b = t->dec_byte_fallback ? byte_token(s, n) : -1;
    if (b >= 0) {
        out[0] = (char)b;
        return 1;
    }
    size_t o = 0; /* Metaspace / Replace decoders: U+2581 -> ' ' */
    for (size_t i = 0; i < n; i++) {
        if (i + 3 <= n && !memcmp(s + i, "\xE2\x96\x81", 3)) {
            out[o++] = ' ';
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    return o;
}

static int build_pieces(tokenizer *t) {
    size_t total = t->text_off[t->n_vocab];
    t->piece_pool = malloc(total + 1);
    t->piece_off = malloc((t->n_vocab + 1) * sizeof *t->piece_off);
    if (!t->piece_pool || !t->piece_off) return -1;
    uint64_t o = 0;
    for (size_t i = 0; i < t->n_vocab; i++) {
        t->piece_off[i] = o;
        o += piece_of(t, (int32_t)i, t->piece_pool + o); /* a piece is never longer than its text */
    }
    t->piece_off[t->n_vocab] = o;
    return 0;
}

/* The key BPE uses for a token: raw bytes (byte-level) or the text itself. */
static const char *bpe_key(const tokenizer *t, int32_t id, size_t *len) {
    if (t->kind == TOK_BYTELEVEL) {
        *len = (size_t)(t->piece_off[id + 1] - t->piece_off[id]);
        return t->piece_pool + t->piece_off[id];
    }
    return tok_text(t, id, len);
}

/* The BPE key of model token i, noting byte tokens on the way; 0 if BPE can
 * never produce the token (a byte-level vocabulary's non-byte-level text). */
static int vocab_key(tokenizer *t, size_t i, const char **k, size_t *n) {
    if (!(t->flags[i] & TOKF_MODEL)) return 0;
    *k = bpe_key(t, (int32_t)i, n);
    if (t->kind == TOK_BYTELEVEL) {
        if ((t->flags[i] & TOKF_RAW) && !t->gguf_vocab) return 0; /* its key would be its text */
        if (*n == 1 && t->byte_id[(unsigned char)(*k)[0]] < 0) t->byte_id[(unsigned char)(*k)[0]] = (int32_t)i;
    } else {
        int b = byte_token(*k, *n);
        if (b >= 0) {
            t->flags[i] |= TOKF_BYTE;
            if (t->byte_id[b] < 0) t->byte_id[b] = (int32_t)i;
        }
    }
    return 1;
}

/* Inserts in id order (the first or, for GGUF, the last id of a key wins),
 * hashing and prefetching a batch ahead, as tok_add_merges does. */
int tok_build_tables(tokenizer *t, const char *source, char *err) {
    if (build_pieces(t) || strmap_init(&t->bpe_vocab, t->n_vocab)) {
        tok_errf(err, "%s: out of memory building the vocabulary tables", source);
        return -1;
    }
    for (int i = 0; i < 256; i++) t->byte_id[i] = -1;
    struct {
        const char *k;
        size_t n;
        uint64_t h;
        int32_t id;
    } batch[64];
    for (size_t i = 0; i < t->n_vocab;) {
        size_t nb = 0;
        for (; i < t->n_vocab && nb < 64; i++)
            if (vocab_key(t, i, &batch[nb].k, &batch[nb].n)) {
                batch[nb].id = (int32_t)i;
                batch[nb].h = strmap_hash(batch[nb].k, batch[nb].n);
                strmap_prefetch(&t->bpe_vocab, batch[nb++].h);
            }
        for (size_t j = 0; j < nb; j++) {
            int32_t prev = -1, id = batch[j].id;
            int rc = strmap_insert_hashed(&t->bpe_vocab, batch[j].k, batch[j].n, batch[j].h, id, t->gguf_vocab, &prev);
            if (rc < 0) {
                tok_errf(err, "%s: out of memory building the vocabulary map", source);
                return -1;
            }
            if (rc == 1) /* two ids share a key: the merge loader must ask the map which one won */
                t->flags[id] |= TOKF_DUP, t->flags[prev] |= TOKF_DUP;
        }
    }
    if (!t->merges.slots && pairmap_init(&t->merges, 1024)) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    return 0;
}

/* Text of a merge half in BPE-key form (raw bytes for byte-level). */
static int merge_key(const tokenizer *t, const char *s, size_t n, char *out, size_t *on) {
    if (t->kind == TOK_BYTELEVEL) {
        long m = tok_bytelevel_decode(s, n, out);
        if (m < 0) return -1;
        *on = (size_t)m;
    } else {
        memcpy(out, s, n);
        *on = n;
    }
    return 0;
}

/* The id of a merged token. Trained vocabularies list merged tokens in merge
 * order, so the token after the previous merge's result is tried first: a
 * sequential read instead of a random probe into the 128k-entry map, which is
 * what load time is made of (measured: about a third of the lookups' cost). */
static int32_t merged_id(tokenizer *t, const char *key, size_t n) {
    for (int32_t c = t->merge_hint; c <= t->merge_hint + 1; c++) {
        if (c < 0 || (size_t)c >= t->n_vocab || !(t->flags[c] & TOKF_MODEL)) continue;
        size_t kn;
        const char *k = bpe_key(t, c, &kn);
        if (kn == n && !memcmp(k, key, n) && !(t->flags[c] & TOKF_DUP)) {
            t->merge_hint = c;
            return c;
        }
    }
    int32_t id = strmap_get(&t->bpe_vocab, key, n);
    if (id >= 0) t->merge_hint = id;
    return id;
}

/* One merge of a batch: its halves' keys in the batch's buffer, their hashes, ids. */
typedef struct {
    size_t off, na, nb;
    uint64_t ha, hb;
    int32_t ia, ib, io;
    int bad_key; /* a half is not byte-level text */
} merge_job;

static int merge_error(const tok_merge_text *m, const merge_job *j, const char *source, char *err) {
    tok_errf(err, "%s: merge %d \"%.*s %.*s\": %s not in the vocabulary", source, (int)m->rank, (int)m->alen, m->a,
             (int)m->blen, m->b, j->ia < 0 || j->ib < 0 ? "a half is" : "the merged token is");
    return -1;
}

/* Loading a 128k vocabulary is made of three random probes per merge (two
 * halves in the vocabulary map, one pair into the merge map), each a cache miss
 * when done one after the other. A batch computes every hash first and
 * prefetches, so the misses of one stage overlap: the probes take about 25%
 * of the Llama 3.2 load instead of about 60%, and the load half the time
 * (`make bench-tokenizer`, `perf record`). */
int tok_add_merges(tokenizer *t, const tok_merge_text *m, size_t n, const char *source, char *err) {
    merge_job job[TOK_MERGE_BATCH];
    tok_buf keys = {0};
    int rc = 0;
    for (size_t base = 0; base < n && !rc; base += TOK_MERGE_BATCH) {
        size_t k = n - base < TOK_MERGE_BATCH ? n - base : TOK_MERGE_BATCH;
        const tok_merge_text *mm = m + base;
        keys.len = 0;
        for (size_t i = 0; i < k; i++) { /* keys and hashes; prefetch the vocabulary slots */
            merge_job *j = &job[i];
            j->ia = j->ib = j->io = -1;
            if (tok_buf_reserve(&keys, mm[i].alen + mm[i].blen)) {
                rc = -1;
                tok_errf(err, "%s: out of memory", source);
                break;
            }
            j->off = keys.len;
            char *kp = keys.p + j->off;
            j->bad_key = merge_key(t, mm[i].a, mm[i].alen, kp, &j->na) ||
                         merge_key(t, mm[i].b, mm[i].blen, kp + j->na, &j->nb);
            if (j->bad_key) continue;
            keys.len += j->na + j->nb;
            j->ha = strmap_hash(kp, j->na);
            j->hb = strmap_hash(kp + j->na, j->nb);
            strmap_prefetch(&t->bpe_vocab, j->ha);
            strmap_prefetch(&t->bpe_vocab, j->hb);
        }
        for (size_t i = 0; i < k && !rc; i++) { /* ids, in order (merged_id's hint); prefetch the pair slot */
            merge_job *j = &job[i];
            const char *kp = keys.p + j->off;
            if (!j->bad_key) {
                j->ia = strmap_get_hashed(&t->bpe_vocab, kp, j->na, j->ha);
                j->ib = strmap_get_hashed(&t->bpe_vocab, kp + j->na, j->nb, j->hb);
                j->io = merged_id(t, kp, j->na + j->nb);
            }
            if (j->ia < 0 || j->ib < 0 || j->io < 0) rc = merge_error(&mm[i], j, source, err);
            else pairmap_prefetch(&t->merges, j->ia, j->ib);
        }
        for (size_t i = 0; i < k && !rc; i++)
            if (pairmap_put(&t->merges, job[i].ia, job[i].ib, mm[i].rank, job[i].io)) {
                tok_errf(err, "%s: out of memory", source);
                rc = -1;
            }
    }
    tok_buf_free(&keys);
    return rc;
}

static int added_cmp(const void *x, const void *y) {
    const tok_added *a = x, *b = y;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

void tok_sort_added(tokenizer *t) {
    if (t->n_added) qsort(t->added, t->n_added, sizeof *t->added, added_cmp);
}

int tok_set_vocab(tokenizer *t, size_t n, const tok_str *texts, const char *source, char *err) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += texts[i].len;
    t->n_vocab = n;
    t->text_pool = malloc(total + 1);
    t->text_off = malloc((n + 1) * sizeof *t->text_off);
    t->flags = calloc(n ? n : 1, 1);
    if (!t->text_pool || !t->text_off || !t->flags) {
        tok_errf(err, "%s: out of memory for %zu tokens", source, n);
        return -1;
    }
    uint64_t o = 0;
    for (size_t i = 0; i < n; i++) {
        t->text_off[i] = o;
        if (texts[i].len) memcpy(t->text_pool + o, texts[i].ptr, texts[i].len);
        o += texts[i].len;
    }
    t->text_off[n] = o;
    return 0;
}

int tok_add_added(tokenizer *t, const char *text, size_t len, int32_t id, int special, int lstrip, int rstrip,
                  int single_word, int normalized, const char *source, char *err) {
    tok_added *a = realloc(t->added, (t->n_added + 1) * sizeof *a);
    if (!a) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    t->added = a;
    a = &t->added[t->n_added];
    a->text = malloc(len + 1);
    if (!a->text) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    memcpy(a->text, text, len);
    a->text[len] = 0;
    a->len = len;
    a->id = id;
    a->special = (unsigned char)special;
    a->lstrip = (unsigned char)lstrip;
    a->rstrip = (unsigned char)rstrip;
    a->single_word = (unsigned char)single_word;
    a->normalized = (unsigned char)normalized;
    t->n_added++;
    if (len == 0) {
        tok_errf(err, "%s: added token %d has empty content", source, (int)id);
        return -1;
    }
    return 0;
}
