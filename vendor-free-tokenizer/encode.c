/* encode.c - text to ids: added tokens with normalized = false first (longest
 * match at the leftmost position, lstrip / rstrip absorbing whitespace,
 * single_word), then for each plain segment: normalizers, the added tokens with
 * normalized = true on the normalized text, pre-tokenizers, BPE; then BOS / EOS. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tok_internal.h"

/* Per-call cache of BPE results for short pre-tokens: text repeats words, and
 * the tokenizer itself stays immutable (shareable between threads). */
#define CACHE_SLOTS 16384 /* power of two; about 8k distinct words before it is reset */
#define CACHE_MAX_WORD 24
typedef struct {
    uint32_t hash; /* 0: empty */
    uint16_t len;  /* word length in bytes */
    uint16_t n_ids;
    uint32_t word; /* offset of the word in `words` */
    uint32_t ids;  /* offset of its ids in `ids` */
} cache_slot;

/* Added tokens matched in one pass: the reference matches the tokens with
 * normalized = false in the raw text first, then those with normalized = true in
 * each remaining piece after normalization (their contents were normalized at load). */
typedef struct {
    int normalized; /* which tokens this pass matches */
    unsigned char first_byte[256];
    int any;
} added_pass;

typedef struct {
    tok_buf norm, arena;
    tok_ids spans, tmp;
    tok_bpe_ws *bpe;
    void *md;
    cache_slot *cache; /* (CACHE_SLOTS) or NULL */
    size_t cache_n;
    tok_buf words;        /* cached words' bytes */
    tok_ids ids;          /* cached words' ids */
    added_pass pass_norm; /* the normalized added tokens (see encode_segment) */
    int parse_special;
} encoder;

static uint32_t word_hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h ? h : 1;
}

/* BPE of one pre-token, through the cache. */
static int bpe_cached(const tokenizer *t, encoder *e, const char *s, size_t n, tok_ids *out) {
    if (n > CACHE_MAX_WORD || !e->cache) return tok_bpe_word(t, s, n, e->bpe, out);
    uint32_t h = word_hash(s, n);
    size_t i = h & (CACHE_SLOTS - 1);
    for (; e->cache[i].hash; i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *c = &e->cache[i];
        if (c->hash == h && c->len == n && !memcmp(e->words.p + c->word, s, n)) {
            for (size_t k = 0; k < c->n_ids; k++)
                if (tok_ids_push(out, e->ids.p[c->ids + k])) return -1;
            return 0;
        }
    }
    size_t before = out->len;
    if (tok_bpe_word(t, s, n, e->bpe, out)) return -1;
    if (e->cache_n * 2 >= CACHE_SLOTS) { /* full: start over rather than grow */
        memset(e->cache, 0, CACHE_SLOTS * sizeof *e->cache);
        e->cache_n = 0;
        e->words.len = e->ids.len = 0;
        i = h & (CACHE_SLOTS - 1);
    }
    cache_slot c = {h, (uint16_t)n, (uint16_t)(out->len - before), (uint32_t)e->words.len, (uint32_t)e->ids.len};
    if (tok_buf_put(&e->words, s, n)) return -1;
    for (size_t k = before; k < out->len; k++)
        if (tok_ids_push(&e->ids, out->p[k])) return -1;
    e->cache[i] = c;
    e->cache_n++;
    return 0;
}

/* The reference's single_word test is the regex \w (Rust regex, Unicode): Alphabetic,
 * marks, decimal digits, connector punctuation and the joiners. Alphabetic is the
 * letters, letter numbers and Other_Alphabetic, whose members outside the marks are
 * the circled / squared Latin letters. */
static int is_word_char(uint32_t cp) {
    if (cp < 128) return cp == '_' || ((cp | 32) >= 'a' && (cp | 32) <= 'z') || (cp >= '0' && cp <= '9');
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC: return 1;
    default:
        return cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) ||
               (cp >= 0x1F150 && cp <= 0x1F169) || (cp >= 0x1F170 && cp <= 0x1F189);
    }
}

static int word_before(const char *s, size_t i) {
    if (!i) return 0;
    size_t j = i - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    uint32_t cp;
    tok_utf8_get(s + j, &cp);
    return is_word_char(cp);
}

static int word_after(const char *s, size_t n, size_t i) {
    uint32_t cp;
    return i < n && (tok_utf8_get(s + i, &cp), is_word_char(cp));
}

static void pass_init(const tokenizer *t, added_pass *p, int normalized) {
    memset(p, 0, sizeof *p);
    p->normalized = normalized;
    for (size_t k = 0; k < t->n_added; k++)
        if (t->added[k].normalized == normalized) {
            p->first_byte[(unsigned char)t->added[k].text[0]] = 1;
            p->any = 1;
        }
}

/* The leftmost-longest match in s[from..n) of the pass's tokens (added is sorted
 * longest first), or NULL. */
static const tok_added *leftmost(const tokenizer *t, const added_pass *p, const char *s, size_t n, size_t from,
                                 size_t *at) {
    for (size_t i = from; i < n; i++) {
        if (!p->first_byte[(unsigned char)s[i]]) continue;
        for (size_t k = 0; k < t->n_added; k++) {
            const tok_added *a = &t->added[k];
            if (a->normalized == p->normalized && a->len <= n - i && a->text[0] == s[i] &&
                !memcmp(a->text, s + i, a->len)) {
                *at = i;
                return a;
            }
        }
    }
    return NULL;
}

static size_t space_before(const char *s, size_t lo, size_t i) {
    while (i > lo) {
        size_t j = i - 1;
        while (j > lo && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
        uint32_t cp;
        tok_utf8_get(s + j, &cp);
        if (!tok_is_space(cp)) break;
        i = j;
    }
    return i;
}

static size_t space_after(const char *s, size_t n, size_t i) {
    while (i < n) {
        uint32_t cp;
        size_t L = tok_utf8_get(s + i, &cp);
        if (!tok_is_space(cp)) break;
        i += L;
    }
    return i;
}

/* Pre-tokenizers and BPE on normalized text. `first`: the piece starts the input
 * (Metaspace's prepend_scheme "first"). */
static int encode_plain(const tokenizer *t, encoder *e, const char *s, size_t n, int first, tok_ids *out, char *err) {
    if (!n) return 0;
    if (tok_pretokenize(t, s, n, first, &e->arena, &e->spans, &e->tmp, e->md, err)) return -1;
    for (size_t i = 0; i < e->spans.len; i += 2)
        if (bpe_cached(t, e, e->arena.p + e->spans.p[i], (size_t)e->spans.p[i + 1], out)) {
            tok_errf(err, "encode: out of memory in BPE");
            return -1;
        }
    return 0;
}

/* Split s[0..n) on the pass's added tokens as the reference does: a match that
 * fails its single_word test, or a special token while parse_special is off, is
 * dropped and the search goes on after it (not inside it); lstrip never reaches
 * back past the previous token. `pieces` is encode_plain or the normalizing pass. */
typedef int (*piece_fn)(const tokenizer *t, encoder *e, const char *s, size_t n, int first, tok_ids *out, char *err);

static int split_added(const tokenizer *t, encoder *e, const added_pass *p, const char *s, size_t n, int first,
                       int parse_special, piece_fn pieces, tok_ids *out, char *err) {
    size_t seg = 0, from = 0, at;
    const tok_added *a;
    while (p->any && (a = leftmost(t, p, s, n, from, &at))) {
        size_t end = at + a->len;
        from = end;
        if ((a->special && !parse_special) || (a->single_word && (word_before(s, at) || word_after(s, n, end))))
            continue;
        size_t start = a->lstrip ? space_before(s, seg, at) : at;
        if (a->rstrip) end = space_after(s, n, end);
        if (pieces(t, e, s + seg, start - seg, first && seg == 0, out, err) || tok_ids_push(out, a->id)) return -1;
        seg = from = end;
    }
    return pieces(t, e, s + seg, n - seg, first && seg == 0, out, err);
}

/* A piece of the raw text between non-normalized added tokens: normalized, then
 * split on the normalized added tokens. */
static int encode_segment(const tokenizer *t, encoder *e, const char *s, size_t n, int first, tok_ids *out, char *err) {
    if (!n) return 0;
    if (t->n_norms) {
        if (tok_normalize(t, s, n, &e->norm, err)) return -1;
        s = e->norm.p;
        n = e->norm.len;
    }
    if (!e->pass_norm.any) return encode_plain(t, e, s, n, first, out, err);
    return split_added(t, e, &e->pass_norm, s, n, first, e->parse_special, encode_plain, out, err);
}

static int encode_all(const tokenizer *t, encoder *e, const char *text, size_t len, int parse_special, tok_ids *out,
                      char *err) {
    added_pass raw;
    pass_init(t, &raw, 0);
    pass_init(t, &e->pass_norm, 1);
    e->parse_special = parse_special;
    return split_added(t, e, &raw, text, len, 1, parse_special, encode_segment, out, err);
}

int tok_encode(const tokenizer *t, const char *text, size_t len, int add_special, int parse_special, int32_t **ids,
               size_t *n_ids, char *err) {
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
    if (rc) tok_errf(err, "encode: out of memory");
    if (!rc && add_special && t->add_bos && t->bos_id >= 0) rc = tok_ids_push(&out, t->bos_id);
    if (!rc) rc = encode_all(t, &e, text, len, parse_special, &out, err);
    if (!rc && add_special && t->add_eos && t->eos_id >= 0) rc = tok_ids_push(&out, t->eos_id);
    tok_buf_free(&e.norm);
    tok_buf_free(&e.arena);
    free(e.spans.p);
    free(e.tmp.p);
    tok_bpe_ws_free(e.bpe);
    free(e.cache);
    tok_buf_free(&e.words);
    free(e.ids.p);
    if (e.md) tok_match_data_free(e.md);
    if (rc) {
        free(out.p);
        if (err && !err[0]) tok_errf(err, "encode: out of memory");
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
