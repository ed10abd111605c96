/* encode.c - text to ids: added tokens first (longest match at the leftmost
 * position, lstrip / rstrip absorbing whitespace), then for each plain
 * segment: normalizers, pre-tokenizers, BPE; then BOS / EOS. */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

/* Per-call cache of BPE results for short pre-tokens: text repeats words, and
 * the tokenizer itself stays immutable (shareable between threads). */
#define CACHE_SLOTS 16384 /* power of two; about 8k distinct words before it is reset */
#define CACHE_MAX_WORD 24
typedef struct {
    uint32_t hash;     /* 0: empty */
    uint16_t len;      /* word length in bytes */
    uint16_t n_ids;
    uint32_t word;     /* offset of the word in `words` */
    uint32_t ids;      /* offset of its ids in `ids` */
} cache_slot;

typedef struct {
    tok_buf norm, arena;
    tok_ids spans, tmp;
    tok_bpe_ws *bpe;
    void *md;
    cache_slot *cache; /* (CACHE_SLOTS) or NULL */
    size_t cache_n;
    tok_buf words;     /* cached words' bytes */
    tok_ids ids;       /* cached words' ids */
} encoder;

static uint32_t word_hash(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ? h : 1;
}

/* BPE of one pre-token, through the cache. */
static int bpe_cached(const tokenizer *t, encoder *e, const char *s, size_t n, tok_ids *out)
{
    if (n > CACHE_MAX_WORD || !e->cache)
        return tok_bpe_word(t, s, n, e->bpe, out);
    uint32_t h = word_hash(s, n);
    size_t i = h & (CACHE_SLOTS - 1);
    for (; e->cache[i].hash; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *c = &e->cache[i];
        if (c->hash == h && c->len == n && !memcmp(e->words.p + c->word, s, n)) {
            for (size_t k = 0; k < c->n_ids; k++)
                if (tok_ids_push(out, e->ids.p[c->ids + k]))
                    return -1;
            return 0;
        }
    }
    size_t before = out->len;
    if (tok_bpe_word(t, s, n, e->bpe, out))
        return -1;
    if (e->cache_n * 2 >= CACHE_SLOTS) { /* full: start over rather than grow */
        memset(e->cache, 0, CACHE_SLOTS * sizeof *e->cache);
        e->cache_n = 0;
        e->words.len = e->ids.len = 0;
        i = h & (CACHE_SLOTS - 1);
    }
    cache_slot c = {h, (uint16_t)n, (uint16_t)(out->len - before), (uint32_t)e->words.len, (uint32_t)e->ids.len};
    if (tok_buf_put(&e->words, s, n))
        return -1;
    for (size_t k = before; k < out->len; k++)
        if (tok_ids_push(&e->ids, out->p[k]))
            return -1;
    e->cache[i] = c;
    e->cache_n++;
    return 0;
}

static int is_word_char(uint32_t cp)
{
    return cp == '_' || (cp < 128 ? ((cp | 32) >= 'a' && (cp | 32) <= 'z') || (cp >= '0' && cp <= '9') : cp > 127);
}

/* Added token matching at s[i] (longest first), or NULL. */
static const tok_added *match_added(const tokenizer *t, const char *s, size_t n, size_t i, int parse_special)
{
    for (size_t k = 0; k < t->n_added; k++) {
        const tok_added *a = &t->added[k];
        if (a->special && !parse_special)
            continue;
        if (a->len > n - i || a->text[0] != s[i] || memcmp(a->text, s + i, a->len))
            continue;
        if (a->single_word) {
            uint32_t cp;
            if (i > 0) {
                size_t j = i - 1;
                while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80)
                    j--;
                tok_utf8_get(s + j, &cp);
                if (is_word_char(cp))
                    continue;
            }
            if (i + a->len < n && (tok_utf8_get(s + i + a->len, &cp), is_word_char(cp)))
                continue;
        }
        return a;
    }
    return NULL;
}

static size_t space_before(const char *s, size_t lo, size_t i)
{
    while (i > lo) {
        size_t j = i - 1;
        while (j > lo && ((unsigned char)s[j] & 0xC0) == 0x80)
            j--;
        uint32_t cp;
        tok_utf8_get(s + j, &cp);
        if (!tok_is_space(cp))
            break;
        i = j;
    }
    return i;
}

static size_t space_after(const char *s, size_t n, size_t i)
{
    while (i < n) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (!tok_is_space(cp))
            break;
        i += L;
    }
    return i;
}

static int encode_segment(const tokenizer *t, encoder *e, const char *s, size_t n, int first, tok_ids *out,
                          char *err)
{
    if (!n)
        return 0;
    if (t->n_norms) {
        if (tok_normalize(t, s, n, &e->norm, err))
            return -1;
        s = e->norm.p;
        n = e->norm.len;
    }
    if (tok_pretokenize(t, s, n, first, &e->arena, &e->spans, &e->tmp, e->md, err))
        return -1;
    for (size_t i = 0; i < e->spans.len; i += 2)
        if (bpe_cached(t, e, e->arena.p + e->spans.p[i], (size_t)e->spans.p[i + 1], out)) {
            tok_errf(err, "encode: out of memory in BPE");
            return -1;
        }
    return 0;
}

static int encode_all(const tokenizer *t, encoder *e, const char *text, size_t len, int parse_special,
                      tok_ids *out, char *err)
{
    unsigned char first_byte[256] = {0};
    int any = 0;
    for (size_t k = 0; k < t->n_added; k++)
        if (!t->added[k].special || parse_special) {
            first_byte[(unsigned char)t->added[k].text[0]] = 1;
            any = 1;
        }
    size_t seg = 0, i = 0;
    while (any && i < len) {
        const tok_added *a = first_byte[(unsigned char)text[i]] ? match_added(t, text, len, i, parse_special) : NULL;
        if (!a) {
            i++;
            continue;
        }
        size_t seg_end = a->lstrip ? space_before(text, seg, i) : i;
        if (encode_segment(t, e, text + seg, seg_end - seg, seg == 0, out, err) || tok_ids_push(out, a->id))
            return -1;
        i += a->len;
        if (a->rstrip)
            i = space_after(text, len, i);
        seg = i;
    }
    return encode_segment(t, e, text + seg, len - seg, seg == 0, out, err);
}

int tok_encode(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
               int32_t **ids, size_t *n_ids, char *err)
{
    *ids = NULL;
    *n_ids = 0;
    size_t bad = tok_utf8_check(text, len);
    if (bad < len) {
        tok_errf(err, "encode: input is not valid UTF-8 (byte 0x%02X at offset %zu)", (unsigned char)text[bad], bad);
        return -1;
    }
    encoder e = {0};
    tok_ids out = {0};
    e.bpe = tok_bpe_ws_new();
    e.md = tok_match_data_new();
    if (len >= 256) /* short texts would spend more on the table than they save */
        e.cache = calloc(CACHE_SLOTS, sizeof *e.cache);
    int rc = (!e.bpe || !e.md) ? -1 : 0;
    if (rc)
        tok_errf(err, "encode: out of memory");
    if (!rc && add_special && t->add_bos && t->bos_id >= 0)
        rc = tok_ids_push(&out, t->bos_id);
    if (!rc)
        rc = encode_all(t, &e, text, len, parse_special, &out, err);
    if (!rc && add_special && t->add_eos && t->eos_id >= 0)
        rc = tok_ids_push(&out, t->eos_id);
    tok_buf_free(&e.norm);
    tok_buf_free(&e.arena);
    free(e.spans.p);
    free(e.tmp.p);
    tok_bpe_ws_free(e.bpe);
    free(e.cache);
    tok_buf_free(&e.words);
    free(e.ids.p);
    if (e.md)
        tok_match_data_free(e.md);
    if (rc) {
        free(out.p);
        if (err && !err[0])
            tok_errf(err, "encode: out of memory");
        return -1;
    }
    if (!out.p && !(out.p = malloc(sizeof *out.p))) {
        tok_errf(err, "encode: out of memory");
        return -1;
    }
    *ids = out.p;
    *n_ids = out.len;
    return 0;
}
