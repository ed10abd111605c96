/* load_json.c - a tokenizer from Hugging Face tokenizer.json (+ optional
 * tokenizer_config.json for bos / eos, add_bos_token and the chat template).
 *
 * Supported components (anything else is an error naming it):
 *   model          BPE (merges as "a b" strings or [a, b] pairs; byte_fallback,
 *                  ignore_merges, unk_token, fuse_unk)
 *   normalizer     NFC NFKC NFD NFKD Lowercase Prepend Replace(String) Sequence
 *   pre_tokenizer  Split(Regex|String; Isolated|Removed) ByteLevel Digits Metaspace Sequence
 *   decoder        ByteLevel, Metaspace, Sequence of Replace(U+2581 -> ' ') ByteFallback Fuse Strip
 *   post_processor TemplateProcessing (special tokens around $A), ByteLevel, Sequence */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok_internal.h"

typedef struct {
    tokenizer *t;
    const char *src;
    char *err;
    int has_bytelevel_pre, has_bytelevel_dec;
} ctx;

static const char *jstr(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jbool(json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static int unsupported(ctx *c, const char *what, const char *type)
{
    tok_errf(c->err, "%s: %s \"%s\" is not supported", c->src, what, type ? type : "(no type)");
    return -1;
}

/* ---- normalizers ---- */

static int add_norm(ctx *c, int kind, const char *a, const char *b)
{
    tokenizer *t = c->t;
    tok_norm *n = realloc(t->norms, (t->n_norms + 1) * sizeof *n);
    if (!n)
        return -1;
    t->norms = n;
    n = &t->norms[t->n_norms++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    if (a && !(n->a = strdup(a)))
        return -1;
    if (b && !(n->b = strdup(b)))
        return -1;
    n->alen = a ? strlen(a) : 0;
    n->blen = b ? strlen(b) : 0;
    return 0;
}

static int parse_normalizer(ctx *c, json_t *n)
{
    if (!n || json_is_null(n))
        return 0;
    const char *type = jstr(n, "type");
    static const struct {
        const char *name;
        int kind;
    } forms[] = {{"NFC", NORM_NFC}, {"NFKC", NORM_NFKC}, {"NFD", NORM_NFD}, {"NFKD", NORM_NFKD}, {"Lowercase", NORM_LOWERCASE}};
    if (!type)
        return unsupported(c, "normalizer", NULL);
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++)
        if (!strcmp(type, forms[i].name))
            return add_norm(c, forms[i].kind, NULL, NULL);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(n, "normalizers"), *x;
        size_t i;
        json_array_foreach(arr, i, x) if (parse_normalizer(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "Prepend")) {
        const char *p = jstr(n, "prepend");
        return p ? add_norm(c, NORM_PREPEND, p, NULL) : unsupported(c, "normalizer Prepend without", "prepend");
    }
    if (!strcmp(type, "Replace")) {
        const char *pat = jstr(json_object_get(n, "pattern"), "String"), *content = jstr(n, "content");
        if (!pat || !*pat || !content)
            return unsupported(c, "normalizer Replace pattern (only a non-empty String is)", "Regex");
        return add_norm(c, NORM_REPLACE, pat, content);
    }
    return unsupported(c, "normalizer", type);
}

/* ---- pre-tokenizers ---- */

static tok_pre *new_pre(ctx *c, int kind)
{
    tokenizer *t = c->t;
    tok_pre *p = realloc(t->pres, (t->n_pres + 1) * sizeof *p);
    if (!p)
        return NULL;
    t->pres = p;
    p = &t->pres[t->n_pres++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

/* A literal String pattern as a regex: \Q...\E (no \E inside our patterns). */
static int compile_split(ctx *c, tok_pre *p, json_t *pattern)
{
    const char *re = jstr(pattern, "Regex"), *lit = jstr(pattern, "String");
    if (re)
        return tok_pre_compile(p, re, strlen(re), c->err);
    if (!lit || strstr(lit, "\\E"))
        return unsupported(c, "Split pattern", lit ? lit : "(missing)");
    size_t n = strlen(lit);
    char *q = malloc(n + 5);
    if (!q)
        return -1;
    memcpy(q, "\\Q", 2);
    memcpy(q + 2, lit, n);
    memcpy(q + 2 + n, "\\E", 3);
    int rc = tok_pre_compile(p, q, n + 4, c->err);
    free(q);
    return rc;
}

static int parse_pre(ctx *c, json_t *n)
{
    if (!n || json_is_null(n))
        return 0;
    const char *type = jstr(n, "type");
    if (!type)
        return unsupported(c, "pre_tokenizer", NULL);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(n, "pretokenizers"), *x;
        size_t i;
        json_array_foreach(arr, i, x) if (parse_pre(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "Split")) {
        const char *beh = jstr(n, "behavior");
        if (jbool(n, "invert", 0))
            return unsupported(c, "pre_tokenizer Split with invert", "true");
        tok_pre *p = new_pre(c, PRE_SPLIT);
        if (!p)
            return -1;
        if (beh && !strcmp(beh, "Isolated"))
            p->behavior = SPLIT_ISOLATED;
        else if (beh && !strcmp(beh, "Removed"))
            p->behavior = SPLIT_REMOVED;
        else
            return unsupported(c, "pre_tokenizer Split behavior", beh);
        return compile_split(c, p, json_object_get(n, "pattern"));
    }
    if (!strcmp(type, "ByteLevel")) {
        tok_pre *p = new_pre(c, PRE_BYTELEVEL);
        if (!p)
            return -1;
        c->has_bytelevel_pre = 1;
        p->add_prefix_space = jbool(n, "add_prefix_space", 1);
        if (jbool(n, "use_regex", 1))
            return tok_pre_compile(p, TOK_RE_GPT2, strlen(TOK_RE_GPT2), c->err);
        return 0;
    }
    if (!strcmp(type, "Digits")) {
        tok_pre *p = new_pre(c, PRE_DIGITS);
        if (!p)
            return -1;
        p->individual = jbool(n, "individual_digits", 0);
        return 0;
    }
    if (!strcmp(type, "Metaspace")) {
        const char *rep = jstr(n, "replacement"), *scheme = jstr(n, "prepend_scheme");
        if (rep && strcmp(rep, "\xE2\x96\x81"))
            return unsupported(c, "Metaspace replacement", rep);
        tok_pre *p = new_pre(c, PRE_METASPACE);
        if (!p)
            return -1;
        p->split = jbool(n, "split", 1);
        p->prepend = jbool(n, "add_prefix_space", 1) ? 2 : 0;
        if (scheme)
            p->prepend = !strcmp(scheme, "always") ? 2 : !strcmp(scheme, "first") ? 1 : 0;
        return 0;
    }
    return unsupported(c, "pre_tokenizer", type);
}

/* ---- decoders ---- */

static int parse_decoder(ctx *c, json_t *n)
{
    if (!n || json_is_null(n))
        return 0;
    const char *type = jstr(n, "type");
    if (!type)
        return unsupported(c, "decoder", NULL);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(n, "decoders"), *x;
        size_t i;
        json_array_foreach(arr, i, x) if (parse_decoder(c, x)) return -1;
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
    if (!strcmp(type, "Fuse"))
        return 0;
    if (!strcmp(type, "Replace")) {
        const char *pat = jstr(json_object_get(n, "pattern"), "String"), *content = jstr(n, "content");
        if (pat && content && !strcmp(pat, "\xE2\x96\x81") && !strcmp(content, " "))
            return 0; /* applied by the piece table */
        return unsupported(c, "decoder Replace (only U+2581 -> ' ' is)", pat);
    }
    if (!strcmp(type, "Strip")) {
        const char *content = jstr(n, "content");
        json_int_t start = json_integer_value(json_object_get(n, "start"));
        json_int_t stop = json_integer_value(json_object_get(n, "stop"));
        if (content && !strcmp(content, " ") && start == 1 && stop == 0) {
            c->t->dec_strip_lead_space = 1;
            return 0;
        }
        return unsupported(c, "decoder Strip (only content ' ', start 1, stop 0 is)", content);
    }
    if (!strcmp(type, "Metaspace")) {
        const char *scheme = jstr(n, "prepend_scheme");
        int prepend = jbool(n, "add_prefix_space", 1);
        if (scheme)
            prepend = strcmp(scheme, "never") != 0;
        c->t->dec_strip_lead_space = prepend;
        return 0;
    }
    return unsupported(c, "decoder", type);
}

/* ---- post-processor: BOS / EOS around the sequence ---- */

static int32_t special_id(json_t *special_tokens, const char *name)
{
    json_t *ids = json_object_get(json_object_get(special_tokens, name), "ids");
    if (json_array_size(ids) != 1)
        return -1;
    return (int32_t)json_integer_value(json_array_get(ids, 0));
}

static int parse_post(ctx *c, json_t *n)
{
    if (!n || json_is_null(n))
        return 0;
    const char *type = jstr(n, "type");
    if (!type)
        return unsupported(c, "post_processor", NULL);
    if (!strcmp(type, "Sequence")) {
        json_t *arr = json_object_get(n, "processors"), *x;
        size_t i;
        json_array_foreach(arr, i, x) if (parse_post(c, x)) return -1;
        return 0;
    }
    if (!strcmp(type, "ByteLevel"))
        return 0; /* offsets only */
    if (strcmp(type, "TemplateProcessing"))
        return unsupported(c, "post_processor", type);
    json_t *single = json_object_get(n, "single"), *item, *st = json_object_get(n, "special_tokens");
    size_t i;
    int seen_seq = 0;
    json_array_foreach(single, i, item)
    {
        json_t *sp = json_object_get(item, "SpecialToken");
        if (json_object_get(item, "Sequence")) {
            seen_seq = 1;
            continue;
        }
        const char *name = jstr(sp, "id");
        int32_t id = name ? special_id(st, name) : -1;
        if (id < 0 || (seen_seq ? c->t->add_eos : c->t->add_bos)) {
            tok_errf(c->err, "%s: post_processor TemplateProcessing: only one single special token before "
                     "and one after $A are supported", c->src);
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

static int parse_merge(ctx *c, json_t *m, size_t r)
{
    const char *a, *b;
    size_t alen, blen;
    if (json_is_string(m)) {
        const char *s = json_string_value(m), *sp = strchr(s, ' ');
        if (!sp || sp == s) {
            tok_errf(c->err, "%s: model.merges[%zu] is not \"left right\"", c->src, r);
            return -1;
        }
        a = s;
        alen = (size_t)(sp - s);
        b = sp + 1;
        blen = strlen(b);
    } else if (json_array_size(m) == 2 && json_is_string(json_array_get(m, 0)) &&
               json_is_string(json_array_get(m, 1))) {
        a = json_string_value(json_array_get(m, 0));
        b = json_string_value(json_array_get(m, 1));
        alen = json_string_length(json_array_get(m, 0));
        blen = json_string_length(json_array_get(m, 1));
    } else {
        tok_errf(c->err, "%s: model.merges[%zu] is neither a string nor a pair of strings", c->src, r);
        return -1;
    }
    return tok_add_merge(c->t, a, alen, b, blen, (int32_t)r, c->src, c->err);
}

static int check_model(ctx *c, json_t *model)
{
    const char *type = jstr(model, "type");
    if (type && strcmp(type, "BPE"))
        return unsupported(c, "model type", type);
    const char *p = jstr(model, "continuing_subword_prefix"), *s = jstr(model, "end_of_word_suffix");
    if ((p && *p) || (s && *s))
        return unsupported(c, "BPE continuing_subword_prefix / end_of_word_suffix", p && *p ? p : s);
    json_t *d = json_object_get(model, "dropout");
    if (d && !json_is_null(d) && json_number_value(d) != 0.0)
        return unsupported(c, "BPE dropout", "non-zero");
    if (!json_is_object(json_object_get(model, "vocab")) || !json_is_array(json_object_get(model, "merges"))) {
        tok_errf(c->err, "%s: model.vocab (object) and model.merges (array) are required", c->src);
        return -1;
    }
    return 0;
}

/* Vocabulary texts by id, model vocab and added tokens together. */
static int build_vocab(ctx *c, json_t *vocab, json_t *added)
{
    size_t n = 0, i;
    const char *k;
    json_t *v, *a;
    json_object_foreach(vocab, k, v) if ((size_t)json_integer_value(v) + 1 > n) n = (size_t)json_integer_value(v) + 1;
    json_array_foreach(added, i, a)
    {
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        if ((size_t)id + 1 > n)
            n = (size_t)id + 1;
    }
    tok_str *texts = calloc(n ? n : 1, sizeof *texts);
    if (!texts)
        return -1;
    json_object_foreach(vocab, k, v)
    {
        json_int_t id = json_integer_value(v);
        if (id < 0 || !json_is_integer(v)) {
            free(texts);
            tok_errf(c->err, "%s: model.vocab[\"%s\"] is not a non-negative integer", c->src, k);
            return -1;
        }
        texts[id] = (tok_str){k, strlen(k)};
    }
    json_array_foreach(added, i, a)
    {
        json_int_t id = json_integer_value(json_object_get(a, "id"));
        const char *content = jstr(a, "content");
        if (!content || id < 0) {
            free(texts);
            tok_errf(c->err, "%s: added_tokens[%zu] needs id and content", c->src, i);
            return -1;
        }
        texts[id] = (tok_str){content, strlen(content)};
    }
    int rc = tok_set_vocab(c->t, n, texts, c->src, c->err);
    free(texts);
    if (rc)
        return -1;
    json_object_foreach(vocab, k, v) c->t->flags[json_integer_value(v)] |= TOKF_MODEL;
    json_array_foreach(added, i, a)
    {
        int32_t id = (int32_t)json_integer_value(json_object_get(a, "id"));
        const char *content = jstr(a, "content");
        c->t->flags[id] |= TOKF_ADDED;
        if (tok_add_added(c->t, content, strlen(content), id, jbool(a, "special", 0), jbool(a, "lstrip", 0),
                          jbool(a, "rstrip", 0), jbool(a, "single_word", 0), c->src, c->err))
            return -1;
    }
    tok_sort_added(c->t);
    return 0;
}

static int32_t find_token(const tokenizer *t, json_t *v)
{
    const char *s = json_is_string(v) ? json_string_value(v) : jstr(v, "content");
    if (!s)
        return -1;
    size_t n = strlen(s);
    for (size_t i = 0; i < t->n_vocab; i++) {
        size_t tl;
        const char *x = tok_text(t, (int32_t)i, &tl);
        if (tl == n && !memcmp(x, s, n))
            return (int32_t)i;
    }
    return -1;
}

static int apply_config(ctx *c, const char *path)
{
    json_error_t je;
    json_t *cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je); /* model_max_length can exceed int64 */
    if (!cfg) {
        tok_errf(c->err, "%s:%d: %s", path, je.line, je.text);
        return -1;
    }
    tokenizer *t = c->t;
    int32_t id;
    if ((id = find_token(t, json_object_get(cfg, "bos_token"))) >= 0)
        t->bos_id = id;
    if ((id = find_token(t, json_object_get(cfg, "eos_token"))) >= 0)
        t->eos_id = id;
    json_t *ab = json_object_get(cfg, "add_bos_token"), *ae = json_object_get(cfg, "add_eos_token");
    if (json_is_boolean(ab))
        t->add_bos = json_is_true(ab);
    if (json_is_boolean(ae))
        t->add_eos = json_is_true(ae);
    json_t *ct = json_object_get(cfg, "chat_template");
    const char *tmpl = json_is_string(ct) ? json_string_value(ct) : NULL;
    size_t i;
    json_t *x;
    if (json_is_array(ct)) /* named templates: take "default" */
        json_array_foreach(ct, i, x) if (jstr(x, "name") && !strcmp(jstr(x, "name"), "default")) tmpl = jstr(x, "template");
    int rc = 0;
    if (tmpl && !(t->chat_template = strdup(tmpl)))
        rc = -1;
    json_decref(cfg);
    return rc;
}

/* transformers 5 writes the template to chat_template.jinja beside the JSON files. */
static int load_jinja_template(ctx *c, const char *beside)
{
    const char *slash = strrchr(beside, '/');
    size_t dir = slash ? (size_t)(slash - beside) + 1 : 0;
    char *path = malloc(dir + sizeof "chat_template.jinja");
    if (!path)
        return -1;
    memcpy(path, beside, dir);
    strcpy(path + dir, "chat_template.jinja");
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return 0; /* no template: only tok_chat_render with a name works */
    tok_buf b = {0};
    char chunk[4096];
    size_t n;
    int rc = 0;
    while (!rc && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
        rc = tok_buf_put(&b, chunk, n);
    fclose(f);
    if (rc || !b.p) {
        tok_buf_free(&b);
        return rc;
    }
    c->t->chat_template = b.p;
    return 0;
}

static int load_body(ctx *c, json_t *root, const char *config_json)
{
    tokenizer *t = c->t;
    json_t *model = json_object_get(root, "model");
    if (check_model(c, model) || build_vocab(c, json_object_get(model, "vocab"), json_object_get(root, "added_tokens")))
        return -1;
    if (parse_normalizer(c, json_object_get(root, "normalizer")) ||
        parse_pre(c, json_object_get(root, "pre_tokenizer")) || parse_decoder(c, json_object_get(root, "decoder")) ||
        parse_post(c, json_object_get(root, "post_processor")))
        return -1;
    if (c->has_bytelevel_pre != c->has_bytelevel_dec) {
        tok_errf(c->err, "%s: ByteLevel %s without ByteLevel %s is not supported", c->src,
                 c->has_bytelevel_pre ? "pre_tokenizer" : "decoder", c->has_bytelevel_pre ? "decoder" : "pre_tokenizer");
        return -1;
    }
    t->kind = c->has_bytelevel_pre ? TOK_BYTELEVEL : TOK_SPM;
    t->byte_fallback = jbool(model, "byte_fallback", 0);
    t->ignore_merges = jbool(model, "ignore_merges", 0);
    t->fuse_unk = jbool(model, "fuse_unk", 0);
    const char *unk = jstr(model, "unk_token");
    json_t *merges = json_object_get(model, "merges"), *m;
    size_t r;
    if (pairmap_init(&t->merges, json_array_size(merges)) || tok_build_tables(t, c->src, c->err))
        return -1;
    t->unk_id = unk ? strmap_get(&t->bpe_vocab, unk, strlen(unk)) : -1;
    if (unk && t->unk_id < 0)
        t->unk_id = find_token(t, json_object_get(model, "unk_token"));
    json_array_foreach(merges, r, m) if (parse_merge(c, m, r)) return -1;
    if (config_json && apply_config(c, config_json))
        return -1;
    return t->chat_template ? 0 : load_jinja_template(c, config_json ? config_json : c->src);
}

int tok_load_json(const char *tokenizer_json, const char *config_json, tokenizer **out, char *err)
{
    *out = NULL;
    json_error_t je;
    json_t *root = json_load_file(tokenizer_json, 0, &je);
    if (!root) {
        tok_errf(err, "%s:%d: %s", tokenizer_json, je.line, je.text);
        return -1;
    }
    tokenizer *t = calloc(1, sizeof *t);
    ctx c = {t, tokenizer_json, err, 0, 0};
    int rc = t ? 0 : -1;
    if (t) {
        t->bos_id = t->eos_id = t->unk_id = -1;
        if (err)
            err[0] = 0;
        rc = load_body(&c, root, config_json);
    }
    json_decref(root);
    if (rc) {
        if (err && !err[0])
            tok_errf(err, "%s: out of memory", tokenizer_json);
        tok_free(t);
        return -1;
    }
    *out = t;
    return 0;
}
