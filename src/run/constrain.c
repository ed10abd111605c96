/* constrain.c - see constrain.h. */
#include "constrain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "base/util.h"

struct constrain {
    grammar *g;
    tm_vocab *v;
    tm_matcher *mt;
    uint32_t *mask;   /* ((V + 31) / 32) the last mask */
    uint32_t *fit;    /* ((V + 31) / 32) scratch: the ids of mask that fit a budget */
    float *masked;    /* (V) logits with forbidden ids at -inf */
    int V;
    double compile_s;
};

static const char *piece(void *user, int32_t id, size_t *len) { return llmgen_token_bytes(user, id, len); }
static int stop(void *user, int32_t id) { return llmgen_is_eos(user, id); }

static llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen && msg) snprintf(err, errlen, "%s", msg);
    return st;
}

llmgen_status constrain_new(const llmgen_model *m, const llmgen_generate_params *p, constrain **out, char *err,
                            size_t errlen) {
    *out = NULL;
    if (!p->grammar && !p->json_schema) return LLMGEN_OK;
    if (p->grammar && p->json_schema) return fail(LLMGEN_E_USAGE, err, errlen, "give a grammar or a JSON schema, not both");
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    if (!caps.has_tokenizer)
        return fail(LLMGEN_E_USAGE, err, errlen, "a grammar needs a tokenizer (this model has none)");
    double t0 = now_seconds();
    constrain *c = calloc(1, sizeof *c);
    if (!c) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    c->V = caps.vocab_size;
    char *text = NULL;
    json_schema_opts so = {.strict = p->strict_schema};
    if (p->json_schema && json_schema_to_gbnf(p->json_schema, strlen(p->json_schema), &so, &text, err, errlen)) {
        free(c);
        return LLMGEN_E_USAGE;
    }
    const char *gt = text ? text : p->grammar;
    int rc = grammar_parse(gt, strlen(gt), &c->g, err, errlen);
    free(text);
    if (rc) {
        if (p->json_schema && err && errlen && strstr(err, "no finite text"))
            snprintf(err, errlen, "json schema: no instance is finite (a required property refers back to its own schema)");
        free(c);
        return LLMGEN_E_USAGE;
    }
    c->v = tm_vocab_new(c->V, piece, stop, (void *)m);
    c->mask = malloc(((size_t)c->V + 31) / 32 * sizeof *c->mask);
    c->fit = malloc(((size_t)c->V + 31) / 32 * sizeof *c->fit);
    c->masked = malloc((size_t)c->V * sizeof *c->masked);
    if (!c->v || !c->mask || !c->fit || !c->masked) {
        constrain_free(c);
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    }
    if (tm_matcher_new(c->g, c->v, &c->mt, err, errlen)) {
        constrain_free(c);
        return LLMGEN_E_USAGE;
    }
    memset(c->mask, 0, ((size_t)c->V + 31) / 32 * sizeof *c->mask);
    c->compile_s = now_seconds() - t0;
    *out = c;
    return LLMGEN_OK;
}

llmgen_status llmgen_json_schema_check(const char *schema, int strict, char *warn, size_t warnlen, char *err,
                                       size_t errlen) {
    json_schema_opts so = {.strict = strict, .warn = warn, .warnlen = warnlen};
    char *text = NULL;
    grammar *g = NULL;
    if (json_schema_to_gbnf(schema, strlen(schema), &so, &text, err, errlen)) return LLMGEN_E_USAGE;
    int rc = grammar_parse(text, strlen(text), &g, err, errlen);
    free(text);
    grammar_free(g);
    if (rc && err && errlen && strstr(err, "no finite text"))
        snprintf(err, errlen, "json schema: no instance is finite (a required property refers back to its own schema)");
    return rc ? LLMGEN_E_USAGE : LLMGEN_OK;
}

void constrain_free(constrain *c) {
    if (!c) return;
    tm_matcher_free(c->mt);
    tm_vocab_free(c->v);
    grammar_free(c->g);
    free(c->mask);
    free(c->fit);
    free(c->masked);
    free(c);
}

const float *constrain_mask(constrain *c, const float *logits, int V, llmgen_status *st, char *err, size_t errlen) {
    int n = tm_fill_mask(c->mt, c->mask, err, errlen);
    if (n < 0) {
        *st = LLMGEN_E_USAGE;
        return NULL;
    }
    if (n == 0) {
        *st = fail(LLMGEN_E_USAGE, err, errlen, "grammar: no token of this vocabulary can continue the output");
        return NULL;
    }
    for (int w = 0; w < (V + 31) / 32; w++) {
        uint32_t b = c->mask[w];
        int base = w * 32, lim = V - base < 32 ? V - base : 32;
        if (b == 0xFFFFFFFFu && lim == 32) {
            memcpy(c->masked + base, logits + base, 32 * sizeof *logits);
            continue;
        }
        for (int k = 0; k < lim; k++) c->masked[base + k] = (b >> k & 1) ? logits[base + k] : -INFINITY;
    }
    *st = LLMGEN_OK;
    return c->masked;
}

int constrain_allows(const constrain *c, int32_t id) {
    return id >= 0 && id < c->V && (c->mask[id >> 5] >> (id & 31) & 1);
}

int constrain_fits(constrain *c, int32_t id, int32_t bytes) {
    if (!constrain_allows(c, id)) return 0;
    int32_t need = tm_min_bytes_after(c->mt, id);
    return need >= 0 && need <= bytes;
}

int constrain_keep_within(constrain *c, int32_t bytes) {
    int n = tm_keep_within(c->mt, c->mask, c->fit, bytes);
    if (n <= 0) return 0;
    for (int w = 0; w < (c->V + 31) / 32; w++) {
        for (uint32_t gone = c->mask[w] & ~c->fit[w]; gone; gone &= gone - 1)
            c->masked[w * 32 + __builtin_ctz(gone)] = -INFINITY;
        c->mask[w] = c->fit[w];
    }
    return n;
}

int constrain_accept(constrain *c, int32_t id) { return tm_accept(c->mt, id); }
int constrain_finished(const constrain *c) { return tm_is_terminated(c->mt); }
void constrain_rollback(constrain *c, int n) { tm_rollback(c->mt, n); }
double constrain_compile_seconds(const constrain *c) { return c->compile_s; }
