/* load_spec.c - a tokenizer from GGUF-style metadata (tokenizer.ggml.*).
 *
 * "gpt2" vocabularies are byte-level BPE: the pre-tokenizer comes from
 * tokenizer.ggml.pre (the regexes llama.cpp and HF use for that family).
 * "llama" vocabularies are SentencePiece BPE: ' ' -> U+2581, an optional
 * U+2581 prefix on the first segment, byte fallback, and merges ranked by score when the file has
 * none (the highest-scoring mergeable pair first, as SentencePiece does).
 * Control (3) tokens become special added tokens, user-defined (4) plain added
 * tokens (matched whole, kept by parse_special = 0), as transformers does.
 * Two architectures read differently, as transformers' GGUF tokenizer builders do:
 *   gemma, gemma2, gemma3  tokens of spaces only are spelled with U+2581 (and so are vocabulary
 *                          tokens, not added ones), and merges are ranked by vocabulary order;
 *   phi3                   normalizer Prepend U+2581 + Replace ' ' -> U+2581 on every segment
 *                          (also after a special token, and before leading spaces), no Metaspace.
 * "gemma4" vocabularies (Gemma 4) are Gemma's SentencePiece BPE with the file's merges and no BOS
 * added (transformers' GGUF builder: the chat template writes <bos>; llama.cpp forces it on).
 * SentencePiece vocabularies also make <s>, </s> and <unk> special when present (the defaults of
 * transformers' LlamaTokenizer). */
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

static int str_is(tok_str s, const char *lit) { return s.len == strlen(lit) && !memcmp(s.ptr, lit, s.len); }

static int add_pre(tokenizer *t, int kind, const char *re, char *err) {
    tok_pre *p = realloc(t->pres, (t->n_pres + 1) * sizeof *p);
    if (!p) {
        tok_errf(err, "out of memory");
        return -1;
    }
    t->pres = p;
    p = &t->pres[t->n_pres++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->behavior = SPLIT_ISOLATED;
    return re ? tok_pre_compile(p, re, strlen(re), err) : 0;
}

/* Pre-tokenizer of a byte-level vocabulary, by tokenizer.ggml.pre. */
static int setup_bytelevel_pre(tokenizer *t, tok_str pre, const char *source, char *err) {
    const char *split = NULL;
    if (!pre.len || str_is(pre, "default") || str_is(pre, "gpt2") || str_is(pre, "smollm"))
        split = NULL; /* ByteLevel's own GPT-2 regex */
    /* llama.cpp reads "lfm2" (the converter's name for LFM2 / LFM2.5's vocabularies) as llama3's */
    else if (str_is(pre, "llama-bpe") || str_is(pre, "llama3") || str_is(pre, "llama-v3") || str_is(pre, "lfm2"))
        split = TOK_RE_LLAMA3;
    else if (str_is(pre, "qwen2")) split = TOK_RE_QWEN2;
    else if (str_is(pre, "qwen35")) split = TOK_RE_QWEN35;
    else if (str_is(pre, "gpt-4o")) split = TOK_RE_O200K; /* the converter's name for o200k (gpt-oss) */
    else {
        tok_errf(err,
                 "%s: tokenizer.ggml.pre \"%.*s\" is not a supported pre-tokenizer "
                 "(supported: default, gpt2, smollm, llama-bpe, lfm2, qwen2, qwen35, gpt-4o)",
                 source, (int)pre.len, pre.ptr);
        return -1;
    }
    if (split) {
        if (add_pre(t, PRE_SPLIT, split, err) || add_pre(t, PRE_BYTELEVEL, NULL, err)) return -1;
    } else if (add_pre(t, PRE_BYTELEVEL, TOK_RE_GPT2, err)) return -1;
    return 0;
}

/* One derived merge, with the keys of its rank. */
typedef struct {
    float score;  /* the merged token's score */
    int32_t llen; /* left / right length in characters */
    int32_t rlen;
    int32_t out, a, b;
} cand;

/* transformers' generate_merges with scores (its GGUF path): sorted by
 * (score, left length, right length) descending; equal keys keep the order of
 * generation (merged id, then left id, then right id, ascending). */
static int cand_cmp(const void *x, const void *y) {
    const cand *p = x, *q = y;
    if (p->score != q->score) return p->score > q->score ? -1 : 1;
    if (p->llen != q->llen) return p->llen > q->llen ? -1 : 1;
    if (p->rlen != q->rlen) return p->rlen > q->rlen ? -1 : 1;
    if (p->out != q->out) return p->out < q->out ? -1 : 1;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

static int32_t n_chars(const char *s, size_t n) {
    int32_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* SentencePiece has no merge list: every split of a token into two vocabulary
 * tokens is a merge, ranked as transformers ranks them when it reads a GGUF. */
static int merges_from_scores(tokenizer *t, const float *scores, const char *source, char *err) {
    cand *c = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < t->n_vocab; i++) {
        size_t len;
        const char *s = tok_text(t, (int32_t)i, &len);
        if (!(t->flags[i] & TOKF_MODEL)) continue;
        for (size_t k = 1; k < len; k++) {
            if ((s[k] & 0xC0) == 0x80) continue; /* split only between characters */
            int32_t a = strmap_get(&t->bpe_vocab, s, k), b = strmap_get(&t->bpe_vocab, s + k, len - k);
            if (a < 0 || b < 0) continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 4096;
                cand *g = realloc(c, cap * sizeof *c);
                if (!g) {
                    free(c);
                    tok_errf(err, "%s: out of memory", source);
                    return -1;
                }
                c = g;
            }
            c[n++] = (cand){scores[i], n_chars(s, k), n_chars(s + k, len - k), (int32_t)i, a, b};
        }
    }
    if (n) qsort(c, n, sizeof *c, cand_cmp);
    for (size_t r = 0; r < n; r++)
        if (pairmap_put(&t->merges, c[r].a, c[r].b, (int32_t)r, c[r].out)) {
            free(c);
            tok_errf(err, "%s: out of memory", source);
            return -1;
        }
    free(c);
    return 0;
}

static int add_norm(tokenizer *t, int kind, const char *a, const char *b) {
    tok_norm *n = realloc(t->norms, (t->n_norms + 1) * sizeof *n);
    if (!n) return -1;
    t->norms = n;
    n = &t->norms[t->n_norms++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    if ((a && !(n->a = strdup(a))) || (b && !(n->b = strdup(b)))) return -1;
    n->alen = a ? strlen(a) : 0;
    n->blen = b ? strlen(b) : 0;
    return 0;
}

/* A token of spaces only (at least one): Gemma files store them so, transformers spells them U+2581. */
static int spaces_only(tok_str s) {
    if (!s.len) return 0;
    for (size_t i = 0; i < s.len; i++)
        if (s.ptr[i] != ' ') return 0;
    return 1;
}

/* Gemma: the token list with space-only tokens spelled as U+2581 runs (*buf holds them). */
static tok_str *gemma_tokens(const tok_spec *spec, char **buf) {
    size_t extra = 0;
    for (size_t i = 0; i < spec->n_tokens; i++) extra += spaces_only(spec->tokens[i]) ? 3 * spec->tokens[i].len : 0;
    tok_str *v = malloc(spec->n_tokens * sizeof *v);
    char *b = malloc(extra ? extra : 1);
    if (!v || !b) {
        free(v);
        free(b);
        return NULL;
    }
    char *p = b;
    for (size_t i = 0; i < spec->n_tokens; i++) {
        v[i] = spec->tokens[i];
        if (!spaces_only(spec->tokens[i])) continue;
        v[i].ptr = p;
        v[i].len = 3 * spec->tokens[i].len;
        for (size_t k = 0; k < spec->tokens[i].len; k++, p += 3) memcpy(p, "\xe2\x96\x81", 3);
    }
    *buf = b;
    return v;
}

static int load_spec_body(tokenizer *t, const tok_spec *spec, const char *source, char *err) {
    int spm, gemma4 = str_is(spec->model, "gemma4");
    if (str_is(spec->model, "gpt2")) spm = 0;
    else if (str_is(spec->model, "llama") || gemma4) spm = 1;
    else {
        tok_errf(err, "%s: tokenizer.ggml.model \"%.*s\" is not supported (expected gpt2, llama or gemma4)", source,
                 (int)spec->model.len, spec->model.ptr);
        return -1;
    }
    if (!spec->n_tokens || !spec->tokens) {
        tok_errf(err, "%s: tokenizer.ggml.tokens is missing or empty", source);
        return -1;
    }
    int gemma = gemma4 || (spm && (str_is(spec->arch, "gemma") || str_is(spec->arch, "gemma2") ||
                                   str_is(spec->arch, "gemma3")));
    int phi3 = spm && str_is(spec->arch, "phi3");
    t->kind = spm ? TOK_SPM : TOK_BYTELEVEL;
    t->gguf_vocab = 1;
    char *respelled_buf = NULL;
    tok_str *respelled = gemma ? gemma_tokens(spec, &respelled_buf) : NULL;
    if (gemma && !respelled) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    int rc = tok_set_vocab(t, spec->n_tokens, respelled ? respelled : spec->tokens, source, err);
    free(respelled);
    free(respelled_buf);
    if (rc) return -1;
    for (size_t i = 0; i < spec->n_tokens; i++) {
        int type = spec->token_types ? spec->token_types[i] : 1;
        t->flags[i] = TOKF_MODEL;
        if (gemma && spaces_only(spec->tokens[i]))
            continue; /* a vocabulary token once spelled with U+2581, not an added one */
        if ((type == 3 || type == 4) && spec->tokens[i].len) {
            t->flags[i] |= TOKF_ADDED;
            if (tok_add_added(t, spec->tokens[i].ptr, spec->tokens[i].len, (int32_t)i, type == 3, 0, 0, 0, 0, source,
                              err))
                return -1;
        }
    }
    /* transformers makes the tokens named by bos / eos / unk / pad special tokens too, and for
     * SentencePiece vocabularies <s> </s> <unk> (its LlamaTokenizer's defaults) */
    int32_t named[7] = {spec->bos_id, spec->eos_id, spec->unk_id, spec->pad_id, -1, -1, -1};
    if (spm && !gemma) {
        static const char *const dflt[3] = {"<s>", "</s>", "<unk>"};
        for (int k = 0; k < 3; k++)
            for (size_t i = 0; i < spec->n_tokens; i++)
                if (str_is(spec->tokens[i], dflt[k])) {
                    named[4 + k] = (int32_t)i;
                    break;
                }
    }
    for (int k = 0; k < 7; k++) {
        int32_t id = named[k];
        if (id < 0 || (size_t)id >= spec->n_tokens || (t->flags[id] & TOKF_ADDED) || !spec->tokens[id].len) continue;
        t->flags[id] |= TOKF_ADDED;
        if (tok_add_added(t, spec->tokens[id].ptr, spec->tokens[id].len, id, 1, 0, 0, 0, 0, source, err)) return -1;
    }
    /* an added token that is already there (user-defined </s>) becomes special when named */
    for (int k = 0; k < 7; k++)
        for (size_t a = 0; named[k] >= 0 && a < t->n_added; a++)
            if (t->added[a].id == named[k]) t->added[a].special = 1;
    tok_sort_added(t);
    if (phi3) {
        t->byte_fallback = 1;
        t->dec_byte_fallback = 1;
        t->dec_strip_lead_space = 1;
        if (add_norm(t, NORM_PREPEND, "\xe2\x96\x81", NULL) || add_norm(t, NORM_REPLACE, " ", "\xe2\x96\x81")) {
            tok_errf(err, "%s: out of memory", source);
            return -1;
        }
    } else if (spm) {
        t->byte_fallback = 1;
        t->dec_byte_fallback = 1;
        t->dec_strip_lead_space = spec->add_space_prefix != 0;
        /* ' ' -> U+2581, and U+2581 before the first segment only (as llama.cpp and
         * HF's Metaspace prepend_scheme "first" do, not before text after a special token) */
        if (add_pre(t, PRE_METASPACE, NULL, err)) return -1;
        t->pres[t->n_pres - 1].prepend = spec->add_space_prefix != 0;
        t->pres[t->n_pres - 1].split = 0;
    } else if (setup_bytelevel_pre(t, spec->pre, source, err)) return -1;
    if (pairmap_init(&t->merges, spec->n_merges ? spec->n_merges : spec->n_tokens * 2)) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    if (tok_build_tables(t, source, err)) return -1;
    tok_merge_text batch[TOK_MERGE_BATCH];
    size_t k = 0;
    for (size_t r = 0; r < spec->n_merges; r++) {
        const char *m = spec->merges[r].ptr, *sp = memchr(m, ' ', spec->merges[r].len);
        if (!sp || sp == m) {
            tok_errf(err, "%s: tokenizer.ggml.merges[%zu] is not \"left right\"", source, r);
            return -1;
        }
        batch[k++] = (tok_merge_text){m, sp + 1, (size_t)(sp - m), spec->merges[r].len - (size_t)(sp - m) - 1,
                                      (int32_t)r};
        if ((k == TOK_MERGE_BATCH || r + 1 == spec->n_merges) && tok_add_merges(t, batch, k, source, err)) return -1;
        k = k == TOK_MERGE_BATCH ? 0 : k;
    }
    if (spm && !spec->n_merges) {
        if (!spec->scores) {
            tok_errf(err, "%s: SentencePiece vocabulary has neither merges nor tokenizer.ggml.scores", source);
            return -1;
        }
        float *pos = NULL;
        if (gemma) { /* Gemma's scores do not follow its merge order, the vocabulary order does */
            if (!(pos = malloc(spec->n_tokens * sizeof *pos))) {
                tok_errf(err, "%s: out of memory", source);
                return -1;
            }
            for (size_t i = 0; i < spec->n_tokens; i++) pos[i] = -(float)i;
        }
        rc = merges_from_scores(t, pos ? pos : spec->scores, source, err);
        free(pos);
        if (rc) return -1;
    }
    t->unk_id = spm ? spec->unk_id : -1;
    t->bos_id = spec->bos_id;
    t->eos_id = spec->eos_id;
    t->add_bos = gemma4 ? 0 : spec->add_bos >= 0 ? spec->add_bos : spm;
    t->add_eos = spec->add_eos > 0;
    if (spec->chat_template.len) {
        t->chat_template = strndup(spec->chat_template.ptr, spec->chat_template.len);
        if (!t->chat_template) {
            tok_errf(err, "%s: out of memory", source);
            return -1;
        }
    }
    int32_t ids[2] = {t->bos_id, t->eos_id};
    for (int i = 0; i < 2; i++)
        if (ids[i] >= (int32_t)t->n_vocab) {
            tok_errf(err, "%s: %s token id %d is outside the vocabulary (%zu tokens)", source, i ? "eos" : "bos",
                     (int)ids[i], t->n_vocab);
            return -1;
        }
    return 0;
}

int tok_load_spec(const tok_spec *spec, const char *source, tokenizer **out, char *err) {
    tokenizer *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t) {
        tok_errf(err, "%s: out of memory", source);
        return -1;
    }
    t->bos_id = t->eos_id = t->unk_id = -1;
    if (load_spec_body(t, spec, source, err)) {
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
