/* session.c - the public API: model open / capabilities, sessions that own a KV
 * cache and a position, prefill and decode step. */
#include <stdio.h>
#include <stdlib.h>

#include "forward.h"
#include "llmgen.h"
#include "util.h"

struct llmgen_session {
    const model *m;
    fwd_state st;
    int pos; /* tokens in the KV cache */
};

static llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return st;
}

llmgen_status llmgen_model_open(const char *path, const llmgen_model_options *opt, llmgen_model **out,
                                char *err, size_t errlen) {
    char e[ERR_LEN] = "";
    model_options mo = {.n_threads = 2};
    *out = NULL;
    if (!path) return fail(LLMGEN_E_USAGE, err, errlen, "no model path given");
    if (opt) {
        if (opt->n_threads < 0 || opt->n_threads > 256)
            return fail(LLMGEN_E_USAGE, err, errlen, "thread count must be between 1 and 256");
        if (opt->n_threads) mo.n_threads = opt->n_threads;
        mo.kernels = opt->kernels;
        mo.no_tokenizer = opt->no_tokenizer;
    }
    int io = 0;
    if (model_open(path, &mo, out, &io, e)) return fail(io ? LLMGEN_E_IO : LLMGEN_E_FORMAT, err, errlen, e);
    return LLMGEN_OK;
}

void llmgen_model_free(llmgen_model *m) { model_free(m); }

void llmgen_model_capabilities(const llmgen_model *m, llmgen_capabilities *c) {
    *c = (llmgen_capabilities){
        .architecture = m->cfg.arch,
        .format = m->format,
        .weight_types = m->weight_types,
        .kernels = m->kern->name,
        .context_length = m->cfg.max_pos,
        .vocab_size = m->cfg.vocab_size,
        .n_threads = pool_size(m->pool),
        .max_sequences = 1,
        .has_tokenizer = m->tok != NULL,
    };
}

llmgen_status llmgen_session_new(llmgen_model *m, int ctx, llmgen_session **out, char *err, size_t errlen) {
    char e[ERR_LEN];
    *out = NULL;
    if (ctx < 0) return fail(LLMGEN_E_USAGE, err, errlen, "context size must be positive");
    if (ctx == 0) ctx = m->cfg.max_pos < 4096 ? m->cfg.max_pos : 4096;
    if (ctx > m->cfg.max_pos) {
        snprintf(e, sizeof e, "context size %d exceeds the model's maximum of %d positions", ctx, m->cfg.max_pos);
        return fail(LLMGEN_E_USAGE, err, errlen, e);
    }
    llmgen_session *s = calloc(1, sizeof *s);
    if (!s) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    s->m = m;
    if (fwd_state_init(&s->st, m, ctx, e)) {
        free(s);
        return fail(LLMGEN_E_NOMEM, err, errlen, e);
    }
    *out = s;
    return LLMGEN_OK;
}

void llmgen_session_free(llmgen_session *s) {
    if (!s) return;
    fwd_state_free(&s->st);
    free(s);
}

void llmgen_session_reset(llmgen_session *s) { s->pos = 0; }
int llmgen_session_pos(const llmgen_session *s) { return s->pos; }
int llmgen_session_ctx(const llmgen_session *s) { return s->st.ctx; }

static llmgen_status check_ids(const llmgen_session *s, const int32_t *ids, int n, char *err, size_t errlen) {
    char e[ERR_LEN];
    if (n > s->st.ctx - s->pos) {
        snprintf(e, sizeof e, "out of context: %d tokens after %d would exceed the context size %d", n, s->pos,
                 s->st.ctx);
        return fail(LLMGEN_E_CONTEXT, err, errlen, e);
    }
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= s->m->cfg.vocab_size) {
            snprintf(e, sizeof e, "token id %d is outside the vocabulary [0, %d)", ids[i], s->m->cfg.vocab_size);
            return fail(LLMGEN_E_USAGE, err, errlen, e);
        }
    return LLMGEN_OK;
}

llmgen_status llmgen_prefill(llmgen_session *s, const int32_t *ids, int n, const float **logits, char *err,
                             size_t errlen) {
    if (n <= 0) return fail(LLMGEN_E_USAGE, err, errlen, "empty prompt: prefill needs at least one token");
    llmgen_status st = check_ids(s, ids, n, err, errlen);
    if (st) return st;
    for (int done = 0; done < n;) {
        int k = n - done < s->st.chunk ? n - done : s->st.chunk;
        forward(s->m, &s->st, ids + done, k, s->pos);
        s->pos += k;
        done += k;
    }
    *logits = s->st.logits;
    return LLMGEN_OK;
}

llmgen_status llmgen_decode_step(llmgen_session *s, int32_t id, const float **logits, char *err, size_t errlen) {
    llmgen_status st = check_ids(s, &id, 1, err, errlen);
    if (st) return st;
    forward(s->m, &s->st, &id, 1, s->pos);
    s->pos += 1;
    *logits = s->st.logits;
    return LLMGEN_OK;
}
