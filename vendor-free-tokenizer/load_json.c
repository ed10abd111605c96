/* load_json.c - a tokenizer from Hugging Face tokenizer.json (+ optional
 * tokenizer_config.json for bos / eos, add_bos_token and the chat template).
 *
 * Supported components (anything else is an error naming it):
 *   model          BPE (merges as "a b" strings or [a, b] pairs; byte_fallback,
 *                  ignore_merges, unk_token, fuse_unk)
 *   normalizer     NFC NFKC NFD NFKD Lowercase Prepend Replace(String) Sequence
 *   pre_tokenizer  Split(Regex|String; Isolated|Removed|MergedWithPrevious|MergedWithNext|Contiguous) ByteLevel Digits Metaspace Sequence
 *   decoder        ByteLevel, Metaspace, Sequence of Replace(U+2581 -> ' ') ByteFallback Fuse Strip
 *   post_processor TemplateProcessing (special tokens around $A), ByteLevel, Sequence */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"
#include "tok_json.h"

typedef struct {
    tokenizer *t;
    const char *src;
    char *err;
    int has_bytelevel_pre, has_bytelevel_dec;
} ctx;

static int64_t jint(const jnode *v) { return J_IS(v, J_NUMBER) ? v->i : 0; }
static size_t jcount(const jnode *v) { return (J_IS(v, J_ARRAY) || J_IS(v, J_OBJECT)) ? v->n : 0; }
static jnode *jat(const jnode *v, size_t k) {
    jnode *x = J_IS(v, J_ARRAY) ? v->child : NULL;
    while (x && k--) x = x->next;
    return x;
}

static int unsupported(ctx *c, const char *what, const char *type) {
    tok_errf(c->err, "%s: %s \"%s\" is not supported", c->src, what, type ? type : "(no type)");
    return -1;
}

/* ---- normalizers ---- */

static int add_norm(ctx *c, int kind, const char *a, const char *b) {
    tokenizer *t = c->t;
    tok_norm *n = realloc(t->norms, (t->n_norms + 1) * sizeof *n);
    if (!n) return -1;
    t->norms = n;
    n = &t->norms[t->n_norms++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    if (a && !(n->a = strdup(a))) return -1;
    if (b && !(n->b = strdup(b))) return -1;
    n->alen = a ? strlen(a) : 0;
    n->blen = b ? strlen(b) : 0;
    return 0;
}

static int parse_normalizer(ctx *c, jnode *n) {
    if (!n || J_IS(n, J_NULL)) return 0;
    const char *type = jstr(n, "type");
    static const struct {
        const char *name;
        int kind;
    } forms[] = {
        {"NFC", NORM_NFC}, {"NFKC", NORM_NFKC}, {"NFD", NORM_NFD}, {"NFKD", NORM_NFKD}, {"Lowercase", NORM_LOWERCASE}};
    if (!type) return unsupported(c, "normalizer", NULL);
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        if (!strcmp(type, forms[i].name)) return add_norm(c, forms[i].kind, NULL, NULL);
    if (!strcmp(type, "Sequence")) {
        jnode *arr = jget(n, "normalizers"), *x;
        size_t i;
        JFOREACH(arr, i, x) if (parse_normalizer(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "Prepend")) {
        const char *p = jstr(n, "prepend");
        return p ? add_norm(c, NORM_PREPEND, p, NULL) : unsupported(c, "normalizer Prepend without", "prepend");
    }
    if (!strcmp(type, "Replace")) {
        const char *pat = jstr(jget(n, "pattern"), "String"), *content = jstr(n, "content");
        if (!pat || !*pat || !content)
            return unsupported(c, "normalizer Replace pattern (only a non-empty String is)", "Regex");
        return add_norm(c, NORM_REPLACE, pat, content);
    }
    return unsupported(c, "normalizer", type);
}

/* ---- pre-tokenizers ---- */

static tok_pre *new_pre(ctx *c, int kind) {
    tokenizer *t = c->t;
    tok_pre *p = realloc(t->pres, (t->n_pres + 1) * sizeof *p);
    if (!p) return NULL;
    t->pres = p;
    p = &t->pres[t->n_pres++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

/* A literal String pattern as a regex: \Q...\E (no \E inside our patterns). */
static int compile_split(ctx *c, tok_pre *p, jnode *pattern) {
    const char *re = jstr(pattern, "Regex"), *lit = jstr(pattern, "String");
    if (re) return tok_pre_compile(p, re, strlen(re), c->err);
    if (!lit || strstr(lit, "\\E")) return unsupported(c, "Split pattern", lit ? lit : "(missing)");
    size_t n = strlen(lit);
    char *q = malloc(n + 5);
    if (!q) return -1;
    memcpy(q, "\\Q", 2);
    memcpy(q + 2, lit, n);
    memcpy(q + 2 + n, "\\E", 3);
    int rc = tok_pre_compile(p, q, n + 4, c->err);
    free(q);
    return rc;
}

static int parse_pre(ctx *c, jnode *n) {
    if (!n || J_IS(n, J_NULL)) return 0;
    const char *type = jstr(n, "type");
    if (!type) return unsupported(c, "pre_tokenizer", NULL);
    if (!strcmp(type, "Sequence")) {
        jnode *arr = jget(n, "pretokenizers"), *x;
        size_t i;
        JFOREACH(arr, i, x) if (parse_pre(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "Split")) {
        const char *beh = jstr(n, "behavior");
        if (jbool(n, "invert", 0)) return unsupported(c, "pre_tokenizer Split with invert", "true");
        tok_pre *p = new_pre(c, PRE_SPLIT);
        if (!p) return -1;
        if (beh && !strcmp(beh, "Isolated")) p->behavior = SPLIT_ISOLATED;
        else if (beh && !strcmp(beh, "Removed")) p->behavior = SPLIT_REMOVED;
        else if (beh && !strcmp(beh, "MergedWithPrevious")) p->behavior = SPLIT_MERGED_PREV;
        else if (beh && !strcmp(beh, "MergedWithNext")) p->behavior = SPLIT_MERGED_NEXT;
        else if (beh && !strcmp(beh, "Contiguous")) p->behavior = SPLIT_CONTIGUOUS;
        else return unsupported(c, "pre_tokenizer Split behavior", beh);
        return compile_split(c, p, jget(n, "pattern"));
    }
    if (!strcmp(type, "ByteLevel")) {
        tok_pre *p = new_pre(c, PRE_BYTELEVEL);
        if (!p) return -1;
        c->has_bytelevel_pre = 1;
        p->add_prefix_space = jbool(n, "add_prefix_space", 1);
        if (jbool(n, "use_regex", 1)) return tok_pre_compile(p, TOK_RE_GPT2, strlen(TOK_RE_GPT2), c->err);
        return 0;
    }
    if (!strcmp(type, "Digits")) {
        tok_pre *p = new_pre(c, PRE_DIGITS);
        if (!p) return -1;
        p->individual = jbool(n, "individual_digits", 0);
        return 0;
    }
    if (!strcmp(type, "Metaspace")) {
        const char *rep = jstr(n, "replacement"), *scheme = jstr(n, "prepend_scheme");
        if (rep && strcmp(rep, "\xE2\x96\x81")) return unsupported(c, "Metaspace replacement", rep);
        tok_pre *p = new_pre(c, PRE_METASPACE);
        if (!p) return -1;
        p->split = jbool(n, "split", 1);
        p->prepend = jbool(n, "add_prefix_space", 1) ? 2 : 0;
        if (scheme) p->prepend = !strcmp(scheme, "always") ? 2 : !strcmp(scheme, "first") ? 1 : 0;
        return 0;
    }
    return unsupported(c, "pre_tokenizer", type);
}

/* ---- decoders ---- */

static int parse_decoder(ctx *c, jnode *n) {
    if (!n || J_IS(n, J_NULL)) return 0;
    const char *type = jstr(n, "type");
    if (!type) return unsupported(c, "decoder", NULL);
    if (!strcmp(type, "Sequence")) {
        jnode *arr = jget(n, "decoders"), *x;
        size_t i;
        JFOREACH(arr, i, x) if (parse_decoder(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) {
        c->has_bytelevel_dec = 1;
        return 0;
    }
    if (!strcmp(type, "ByteFallback")) {
        c->t->dec_byte_fallback = 1;
        return 0;
    }
    if (!strcmp(type, "Fuse")) return 0;
    if (!strcmp(type, "Replace")) {
        const char *pat = jstr(jget(n, "pattern"), "String"), *content = jstr(n, "content");
        if (pat && content && !strcmp(pat, "\xE2\x96\x81") && !strcmp(content, " "))
            return 0; /* applied by the piece table */
        return unsupported(c, "decoder Replace (only U+2581 -> ' ' is)", pat);
    }
    if (!strcmp(type, "Strip")) {
        const char *content = jstr(n, "content");
        int64_t start = jint(jget(n, "start"));
        int64_t stop = jint(jget(n, "stop"));
        if (content && !strcmp(content, " ") && start == 1 && stop == 0) {
            c->t->dec_strip_lead_space = 1;
            return 0;
        }
        return unsupported(c, "decoder Strip (only content ' ', start 1, stop 0 is)", content);
    }
    if (!strcmp(type, "Metaspace")) {
        const char *scheme = jstr(n, "prepend_scheme");
        int prepend = jbool(n, "add_prefix_space", 1);
        if (scheme) prepend = strcmp(scheme, "never") != 0;
        c->t->dec_strip_lead_space = prepend;
        return 0;
    }
    return unsupported(c, "decoder", type);
}

/* ---- post-processor: BOS / EOS around the sequence ---- */

static int32_t special_id(jnode *special_tokens, const char *name) {
    jnode *ids = jget(jget(special_tokens, name), "ids");
    if (jcount(ids) != 1) return -1;
    return (int32_t)jint(jat(ids, 0));
}

static int parse_post(ctx *c, jnode *n) {
    if (!n || J_IS(n, J_NULL)) return 0;
    const char *type = jstr(n, "type");
    if (!type) return unsupported(c, "post_processor", NULL);
    if (!strcmp(type, "Sequence")) {
        jnode *arr = jget(n, "processors"), *x;
        size_t i;
        JFOREACH(arr, i, x) if (parse_post(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel")) return 0; /* offsets only */
    if (strcmp(type, "TemplateProcessing")) return unsupported(c, "post_processor", type);
    jnode *single = jget(n, "single"), *item, *st = jget(n, "special_tokens");
    size_t i;
    int seen_seq = 0;
    JFOREACH(single, i, item) {
        jnode *sp = jget(item, "SpecialToken");
        if (jget(item, "Sequence")) {
            seen_seq = 1;
            continue;
        }
        const char *name = jstr(sp, "id");
        int32_t id = name ? special_id(st, name) : -1;
        if (id < 0 || (seen_seq ? c->t->add_eos : c->t->add_bos)) {
            tok_errf(c->err,
                     "%s: post_processor TemplateProcessing: only one single special token before "
                     "and one after $A are supported",
                     c->src);
            return -1;
        }
        if (seen_seq) {
            c->t->add_eos = 1;
            c->t->eos_id = id;
        } else {
            c->t->add_bos = 1;
            c->t->bos_id = id;
        }
    }
    return 0;
}

/* ---- model ---- */

static int parse_merge(ctx *c, jnode *m, size_t r, tok_merge_text *out) {
    const char *a, *b;
    size_t alen, blen;
    if (J_IS(m, J_STRING)) {
        const char *s = (m)->s, *sp = strchr(s, ' ');
        if (!sp || sp == s) {
            tok_errf(c->err, "%s: model.merges[%zu] is not \"left right\"", c->src, r);
            return -1;
        }
        a = s;
        alen = (size_t)(sp - s);
        b = sp + 1;
        blen = strlen(b);
    } else if (jcount(m) == 2 && J_IS(jat(m, 0), J_STRING) && J_IS(jat(m, 1), J_STRING)) {
        a = (jat(m, 0))->s;
        b = (jat(m, 1))->s;
        alen = (jat(m, 0))->len;
        blen = (jat(m, 1))->len;
    } else {
        tok_errf(c->err, "%s: model.merges[%zu] is neither a string nor a pair of strings", c->src, r);
        return -1;
    }
    *out = (tok_merge_text){a, b, alen, blen, (int32_t)r};
    return 0;
}

/* model.merges, handed to the tokenizer in batches. */
static int parse_merges(ctx *c, jnode *merges) {
    tok_merge_text batch[TOK_MERGE_BATCH];
    size_t r, k = 0;
    jnode *m;
    JFOREACH(merges, r, m) {
        if (parse_merge(c, m, r, &batch[k])) return -1;
        if (++k == TOK_MERGE_BATCH) {
            if (tok_add_merges(c->t, batch, k, c->src, c->err)) return -1;
            k = 0;
        }
    }
    return k ? tok_add_merges(c->t, batch, k, c->src, c->err) : 0;
}

static int check_model(ctx *c, jnode *model) {
    const char *type = jstr(model, "type");
    if (type && strcmp(type, "BPE")) return unsupported(c, "model type", type);
    const char *p = jstr(model, "continuing_subword_prefix"), *s = jstr(model, "end_of_word_suffix");
    if ((p && *p) || (s && *s))
        return unsupported(c, "BPE continuing_subword_prefix / end_of_word_suffix", p && *p ? p : s);
    jnode *d = jget(model, "dropout");
    if (J_IS(d, J_NUMBER) && d->num != 0.0) return unsupported(c, "BPE dropout", "non-zero");
    if (!J_IS(jget(model, "vocab"), J_OBJECT) || !J_IS(jget(model, "merges"), J_ARRAY)) {
        tok_errf(c->err, "%s: model.vocab (object) and model.merges (array) are required", c->src);
        return -1;
    }
    return 0;
}

/* Vocabulary texts by id, model vocab and added tokens together. */
#define MAX_VOCAB (1 << 24)

static int valid_id(const jnode *v) { return J_IS(v, J_NUMBER) && v->is_int && v->i >= 0 && v->i < MAX_VOCAB; }

/* The text an added token stands for. The reference normalizes the content of a
 * token with normalized = true (the default for non-special ones) once, when it
 * is added: that form is what it matches in normalized text and what it decodes to. */
static int added_text(ctx *c, jnode *a, tok_buf *normed, tok_str *out) {
    jnode *content = jget(a, "content");
    *out = (tok_str){content->s, content->len};
    if (!c->t->n_norms || !jbool(a, "normalized", !jbool(a, "special", 0)) || !content->len) return 0;
    if (tok_normalize(c->t, content->s, content->len, normed, c->err)) return -1;
    if (!normed->p && tok_buf_put(normed, "", 0)) return -1;
    *out = (tok_str){normed->p, normed->len};
    return 0;
}

static int build_vocab(ctx *c, jnode *vocab, jnode *added) {
    size_t n = 0, i;
    jnode *v, *a;
    JFOREACH(vocab, i, v) {
        if (!valid_id(v)) {
            tok_errf(c->err, "%s: model.vocab[\"%s\"] is not an id in 0..%d", c->src, v->key, MAX_VOCAB - 1);
            return -1;
        }
        if ((size_t)v->i + 1 > n) n = (size_t)v->i + 1;
    }
    JFOREACH(added, i, a) {
        if (!valid_id(jget(a, "id")) || !J_IS(jget(a, "content"), J_STRING)) {
            tok_errf(c->err, "%s: added_tokens[%zu] needs an id in 0..%d and a content string", c->src, i,
                     MAX_VOCAB - 1);
            return -1;
        }
        if ((size_t)jget(a, "id")->i + 1 > n) n = (size_t)jget(a, "id")->i + 1;
    }
    tok_str *texts = calloc(n ? n : 1, sizeof *texts);
    tok_buf *normed = calloc(jcount(added) + 1, sizeof *normed);
    int rc = texts && normed ? 0 : -1;
    JFOREACH(vocab, i, v) if (!rc) texts[v->i] = (tok_str){v->key, v->klen};
    JFOREACH(added, i, a) if (!rc) rc = added_text(c, a, &normed[i], &texts[jget(a, "id")->i]);
    rc = rc || tok_set_vocab(c->t, n, texts, c->src, c->err);
    if (!rc) JFOREACH(vocab, i, v) c->t->flags[v->i] |= TOKF_MODEL;
    JFOREACH(added, i, a) {
        if (rc) break;
        int32_t id = (int32_t)jget(a, "id")->i;
        int special = jbool(a, "special", 0);
        c->t->flags[id] |= TOKF_ADDED;
        rc = tok_add_added(c->t, texts[id].ptr, texts[id].len, id, special, jbool(a, "lstrip", 0),
                           jbool(a, "rstrip", 0), jbool(a, "single_word", 0), jbool(a, "normalized", !special), c->src,
                           c->err);
    }
    for (i = 0; normed && i < jcount(added); i++) tok_buf_free(&normed[i]);
    free(normed);
    free(texts);
    if (rc) return -1;
    tok_sort_added(c->t);
    return 0;
}

static int32_t find_token(const tokenizer *t, jnode *v) {
    const char *s = J_IS(v, J_STRING) ? (v)->s : jstr(v, "content");
    if (!s) return -1;
    size_t n = strlen(s);
    for (size_t i = 0; i < t->n_vocab; i++) {
        size_t tl;
        const char *x = tok_text(t, (int32_t)i, &tl);
        if (tl == n && !memcmp(x, s, n)) return (int32_t)i;
    }
    return -1;
}

static int apply_config(ctx *c, const char *path) {
    jdoc *doc = jdoc_load(path, c->err);
    if (!doc) return -1;
    jnode *cfg = jdoc_root(doc);
    tokenizer *t = c->t;
    int32_t id;
    if ((id = find_token(t, jget(cfg, "bos_token"))) >= 0) t->bos_id = id;
    if ((id = find_token(t, jget(cfg, "eos_token"))) >= 0) t->eos_id = id;
    jnode *ab = jget(cfg, "add_bos_token"), *ae = jget(cfg, "add_eos_token");
    if (J_IS(ab, J_BOOL)) t->add_bos = ((ab)->i != 0);
    if (J_IS(ae, J_BOOL)) t->add_eos = ((ae)->i != 0);
    jnode *ct = jget(cfg, "chat_template");
    const char *tmpl = J_IS(ct, J_STRING) ? (ct)->s : NULL;
    size_t i;
    jnode *x;
    if (J_IS(ct, J_ARRAY)) /* named templates: take "default" */
        JFOREACH(ct, i, x) if (jstr(x, "name") && !strcmp(jstr(x, "name"), "default")) tmpl = jstr(x, "template");
    int rc = 0;
    if (tmpl && !(t->chat_template = strdup(tmpl))) rc = -1;
    jdoc_free(doc);
    return rc;
}

/* transformers 5 writes the template to chat_template.jinja beside the JSON files. */
static int load_jinja_template(ctx *c, const char *beside) {
    const char *slash = strrchr(beside, '/');
    size_t dir = slash ? (size_t)(slash - beside) + 1 : 0;
    char *path = malloc(dir + sizeof "chat_template.jinja");
    if (!path) return -1;
    memcpy(path, beside, dir);
    strcpy(path + dir, "chat_template.jinja");
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f) return 0; /* no template: only tok_chat_render with a name works */
    tok_buf b = {0};
    char chunk[4096];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0) rc = tok_buf_put(&b, chunk, n);
    fclose(f);
    if (rc || !b.p) {
        tok_buf_free(&b);
        return rc;
    }
    c->t->chat_template = b.p;
    return 0;
}

static int load_body(ctx *c, jnode *root, const char *config_json) {
    tokenizer *t = c->t;
    jnode *model = jget(root, "model");
    /* the normalizer first: added tokens are normalized when they are added */
    if (check_model(c, model) || parse_normalizer(c, jget(root, "normalizer")) ||
        build_vocab(c, jget(model, "vocab"), jget(root, "added_tokens")))
        return -1;
    if (parse_pre(c, jget(root, "pre_tokenizer")) || parse_decoder(c, jget(root, "decoder")) ||
        parse_post(c, jget(root, "post_processor")))
        return -1;
    if (c->has_bytelevel_pre != c->has_bytelevel_dec) {
        tok_errf(c->err, "%s: ByteLevel %s without ByteLevel %s is not supported", c->src,
                 c->has_bytelevel_pre ? "pre_tokenizer" : "decoder",
                 c->has_bytelevel_pre ? "decoder" : "pre_tokenizer");
        return -1;
    }
    t->kind = c->has_bytelevel_pre ? TOK_BYTELEVEL : TOK_SPM;
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    t->fuse_unk = jbool(model, "fuse_unk", 0);
    const char *unk = jstr(model, "unk_token");
    jnode *merges = jget(model, "merges");
    if (pairmap_init(&t->merges, jcount(merges)) || tok_build_tables(t, c->src, c->err)) return -1;
    t->unk_id = unk ? strmap_get(&t->bpe_vocab, unk, strlen(unk)) : -1;
    if (unk && t->unk_id < 0) t->unk_id = find_token(t, jget(model, "unk_token"));
    if (parse_merges(c, merges)) return -1;
    if (config_json && apply_config(c, config_json)) return -1;
    return t->chat_template ? 0 : load_jinja_template(c, config_json ? config_json : c->src);
}

int tok_load_json(const char *tokenizer_json, const char *config_json, tokenizer **out, char *err) {
    *out = NULL;
    jdoc *doc = jdoc_load(tokenizer_json, err);
    if (!doc) return -1;
    jnode *root = jdoc_root(doc);
    tokenizer *t = calloc(1, sizeof *t);
    ctx c = {t, tokenizer_json, err, 0, 0};
    int rc = t ? 0 : -1;
    if (t) {
        t->bos_id = t->eos_id = t->unk_id = -1;
        if (err) err[0] = 0;
        rc = load_body(&c, root, config_json);
    }
    jdoc_free(doc);
    if (rc) {
        if (err && !err[0]) tok_errf(err, "%s: out of memory", tokenizer_json);
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
