/* api.c - the public API (llmgen.h) over the internal modules: status names, model
 * open / capabilities, the tokenizer, chat-template and streaming-detokenizer calls.
 * Sessions are in session.c, batches in batch_sched.c, the prompt-cache file in
 * prompt_cache.c. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "handles.h"
#include "model/loader.h"
#include "tokenizer.h"
#include "base/util.h"

struct llmgen_detok {
    tok_stream *ts;
};
const char *llmgen_status_name(llmgen_status st) {
    switch (st) {
    case LLMGEN_OK: return "ok";
    case LLMGEN_E_USAGE: return "usage";
    case LLMGEN_E_FORMAT: return "format";
    case LLMGEN_E_IO: return "io";
    case LLMGEN_E_CONTEXT: return "context";
    case LLMGEN_E_NOMEM: return "nomem";
    case LLMGEN_E_BUSY: return "busy";
    case LLMGEN_E_TOKENIZER: return "tokenizer";
    case LLMGEN_E_TEMPLATE: return "template";
    }
    return "unknown";
}

void llmgen_free(void *p) { free(p); }

const char *llmgen_kernels_default(void) { return kernels_select(NULL)->name; }

/* ---- model ---------------------------------------------------------------------- */

llmgen_status llmgen_model_open(const char *path, const llmgen_model_options *opt, llmgen_model **out,
                                char *err, size_t errlen) {
    char e[ERR_LEN] = "";
    cpus_info cpus;
    cpus_of_process(&cpus);
    model_options mo = {.n_threads = cpus.n > LLMGEN_MAX_THREADS ? LLMGEN_MAX_THREADS : cpus.n};
    if (!out) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_model_open: out is NULL");
    *out = NULL;
    if (!path || !*path) return fail(LLMGEN_E_USAGE, err, errlen, "no model path given");
    if (opt && opt->tokenizer_only) {
        llmgen_model *lm = calloc(1, sizeof *lm);
        if (!lm) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
        int io = 0;
        if (model_open_tokenizer(path, &lm->m, &io, e)) {
            free(lm);
            return fail(io ? LLMGEN_E_IO : LLMGEN_E_FORMAT, err, errlen, e);
        }
        atomic_init(&lm->busy, 0);
        *out = lm;
        return LLMGEN_OK;
    }
    if (opt) {
        if (opt->n_threads < 0 || opt->n_threads > LLMGEN_MAX_THREADS) {
            if (err && errlen) snprintf(err, errlen, "thread count must be between 1 and %d", LLMGEN_MAX_THREADS);
            return LLMGEN_E_USAGE;
        }
        if (opt->n_threads) mo.n_threads = opt->n_threads;
        if (opt->kernels && !kernels_select(opt->kernels)) {
            static const char *const sets[] = {"avx512", "avx2", "neon"};
            char here[64] = "scalar";
            int known = !strcmp(opt->kernels, "scalar");
            for (int i = 0; i < 3; i++) {
                known |= !strcmp(opt->kernels, sets[i]);
                if (kernels_select(sets[i])) snprintf(here + strlen(here), sizeof here - strlen(here), ", %s", sets[i]);
            }
            if (err && errlen)
                snprintf(err, errlen, "kernels \"%s\": %s (available here: %s)", opt->kernels,
                         known ? "not available on this CPU or in this build" : "no such kernel set", here);
            return LLMGEN_E_USAGE;
        }
        mo.kernels = opt->kernels;
        mo.no_tokenizer = opt->no_tokenizer;
        mo.exact = opt->exact;
        mo.split_all = opt->split_all;
    }
    llmgen_model *lm = calloc(1, sizeof *lm);
    if (!lm) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    int io = 0;
    if (model_open(path, &mo, &lm->m, &io, e)) {
        free(lm);
        return fail(io ? LLMGEN_E_IO : LLMGEN_E_FORMAT, err, errlen, e);
    }
    lm->cpus = cpus;
    atomic_init(&lm->busy, 0);
    *out = lm;
    return LLMGEN_OK;
}

void llmgen_model_free(llmgen_model *lm) {
    if (!lm) return;
    model_free(lm->m);
    free(lm);
}

void llmgen_model_capabilities(const llmgen_model *lm, llmgen_capabilities *c) {
    const model *m = lm->m;
    *c = (llmgen_capabilities){
        .architecture = m->cfg.arch,
        .format = m->format,
        .weight_types = m->weight_types,
        .kernels = m->kern ? m->kern->name : "none",
        .context_length = m->cfg.max_pos,
        .vocab_size = m->cfg.vocab_size,
        .n_threads = m->pool ? pool_size(m->pool) : 0,
        .cpus = lm->cpus.n,
        .cpus_from = cpus_source_name(lm->cpus.why),
        .max_sequences = LLMGEN_MAX_SEQUENCES,
        .has_tokenizer = m->tok != NULL,
    };
}

void llmgen_model_sync_counts(const llmgen_model *lm, int64_t *syncs, int64_t *solo) {
    pool_counts c = lm->m->pool ? pool_get_counts(lm->m->pool) : (pool_counts){0};
    *syncs = (int64_t)c.runs;
    *solo = (int64_t)c.solo_runs;
}

int llmgen_is_eos(const llmgen_model *lm, int32_t id) {
    const model *m = lm->m;
    for (int i = 0; i < m->cfg.n_eos; i++)
        if (m->cfg.eos_ids[i] == id) return 1;
    return m->tok && tok_eos(m->tok) >= 0 && tok_eos(m->tok) == id;
}

/* ---- tokenizer -------------------------------------------------------------------- */

static llmgen_status need_tokenizer(const llmgen_model *lm, char *err, size_t errlen) {
    if (lm->m->tok) return LLMGEN_OK;
    if (err && errlen) snprintf(err, errlen, "%s: this model has no tokenizer (use token ids)", lm->m->path);
    return LLMGEN_E_TOKENIZER;
}

const char *llmgen_token_bytes(const llmgen_model *lm, int32_t id, size_t *len) {
    *len = 0;
    return lm->m->tok ? tok_piece(lm->m->tok, id, len) : NULL;
}

llmgen_status llmgen_tokenize(const llmgen_model *lm, const char *text, size_t len, int add_special,
                              int parse_special, int32_t **ids, size_t *n_ids, char *err, size_t errlen) {
    char e[TOK_ERR_LEN];
    *ids = NULL;
    *n_ids = 0;
    llmgen_status st = need_tokenizer(lm, err, errlen);
    if (st) return st;
    if (!text && len) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_tokenize: text is NULL");
    if (tok_encode(lm->m->tok, text ? text : "", len, add_special, parse_special, ids, n_ids, e))
        return fail(LLMGEN_E_TOKENIZER, err, errlen, e);
    return LLMGEN_OK;
}

llmgen_status llmgen_detokenize(const llmgen_model *lm, const int32_t *ids, size_t n, char **text, size_t *len,
                                char *err, size_t errlen) {
    char e[TOK_ERR_LEN];
    *text = NULL;
    *len = 0;
    llmgen_status st = need_tokenizer(lm, err, errlen);
    if (st) return st;
    if (tok_decode(lm->m->tok, ids, n, text, len, e)) return fail(LLMGEN_E_TOKENIZER, err, errlen, e);
    return LLMGEN_OK;
}

/* tok_chat_* return codes as API statuses */
static llmgen_status chat_status(int rc) {
    return rc == TOK_CHAT_E_TEMPLATE ? LLMGEN_E_TEMPLATE : rc == TOK_CHAT_E_ARG ? LLMGEN_E_USAGE : LLMGEN_E_TOKENIZER;
}

llmgen_status llmgen_chat_render_as(const llmgen_model *lm, const char *name, const char *date, const char *system,
                                    const char *user, char **out, char *err, size_t errlen) {
    char e[TOK_ERR_LEN];
    *out = NULL;
    llmgen_status st = need_tokenizer(lm, err, errlen);
    if (st) return st;
    if (!user) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_chat_render: user message is NULL");
    int rc = tok_chat_render_at(lm->m->tok, name, system, user, date, out, e);
    if (rc) return fail(chat_status(rc), err, errlen, e);
    return LLMGEN_OK;
}

llmgen_status llmgen_chat_render_messages(const llmgen_model *lm, const llmgen_message *msgs, size_t n,
                                          int add_generation_prompt, const llmgen_chat_options *opt,
                                          char **out, char *err, size_t errlen) {
    static const llmgen_chat_options none = {0};
    char e[TOK_ERR_LEN];
    *out = NULL;
    if (!opt) opt = &none;
    if (!opt->template_text) {
        if (!lm) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_chat_render_messages: no model and no template");
        llmgen_status st = need_tokenizer(lm, err, errlen);
        if (st) return st;
    }
    if (n && !msgs) return fail(LLMGEN_E_USAGE, err, errlen, "llmgen_chat_render_messages: messages is NULL");
    if (opt->messages_json && (n || opt->template_name))
        return fail(LLMGEN_E_USAGE, err, errlen,
                    "llmgen_chat_render_messages: messages_json goes with n = 0 and the Jinja template");
    if (opt->template_name && opt->template_text)
        return fail(LLMGEN_E_USAGE, err, errlen, "chat: a built-in template name and a template text cannot be combined");
    tok_chat_msg *tm = malloc((n ? n : 1) * sizeof *tm);
    char *vars = NULL;
    if (!tm) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    for (size_t i = 0; i < n; i++) tm[i] = (tok_chat_msg){msgs[i].role, msgs[i].content};
    if (opt->template_name) { /* a built-in family: every family one exchange, chatml and llama3.x conversations */
        int rc = tok_chat_render_messages(lm->m->tok, opt->template_name, opt->date, tm, n, add_generation_prompt,
                                          out, e);
        free(tm);
        if (rc) return fail(chat_status(rc), err, errlen, e);
        return LLMGEN_OK;
    }
    if (opt->tools_json) { /* {"tools": TOOLS, <the members of vars_json>} */
        const char *v = opt->vars_json ? opt->vars_json : "{}";
        while (*v == ' ' || *v == '\n' || *v == '\t' || *v == '\r') v++;
        size_t need = strlen(opt->tools_json) + strlen(v) + 16;
        if (*v != '{') {
            free(tm);
            return fail(LLMGEN_E_USAGE, err, errlen, "chat: the extra variables are not a JSON object");
        }
        if (!(vars = malloc(need))) {
            free(tm);
            return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
        }
        const char *rest = v + 1;
        while (*rest == ' ' || *rest == '\n' || *rest == '\t' || *rest == '\r') rest++;
        snprintf(vars, need, "{\"tools\": %s%s%s", opt->tools_json, *rest == '}' ? "" : ", ", rest);
    }
    tok_chat_input in = {.messages = tm, .n_messages = n, .add_generation_prompt = add_generation_prompt,
                         .date = opt->date, .bos_token = opt->bos_token, .eos_token = opt->eos_token,
                         .vars_json = vars ? vars : opt->vars_json, .messages_json = opt->messages_json};
    int rc = tok_chat_render_jinja(lm && lm->m->tok ? lm->m->tok : NULL, opt->template_text, &in, out, e);
    free(tm);
    free(vars);
    if (rc) return fail(rc == -1 ? LLMGEN_E_USAGE : chat_status(rc), err, errlen, e);
    return LLMGEN_OK;
}

llmgen_status llmgen_chat_template_check(const llmgen_model *lm, const char *name, char *missing, size_t n,
                                         char *err, size_t errlen) {
    const char *sp = tok_chat_builtin_specials(name);
    llmgen_status st = need_tokenizer(lm, err, errlen);
    if (st) return st;
    if (!sp) {
        if (err && errlen) snprintf(err, errlen, "unknown template name \"%s\"", name ? name : "(null)");
        return LLMGEN_E_USAGE;
    }
    size_t w = 0;
    if (n) missing[0] = '\0';
    while (*sp) {
        size_t k = strcspn(sp, " ");
        int32_t *ids = NULL;
        size_t nid = 0;
        char e[TOK_ERR_LEN];
        if (tok_encode(lm->m->tok, sp, k, 0, 1, &ids, &nid, e) || nid != 1) {
            int wrote = snprintf(missing + w, w < n ? n - w : 0, "%s%.*s", w ? " " : "", (int)k, sp);
            w += wrote > 0 ? (size_t)wrote : 0;
        }
        free(ids);
        sp += k + (sp[k] == ' ');
    }
    return LLMGEN_OK;
}

llmgen_status llmgen_chat_render(const llmgen_model *lm, const char *system, const char *user, char **out,
                                 char *err, size_t errlen) {
    return llmgen_chat_render_as(lm, NULL, NULL, system, user, out, err, errlen);
}

llmgen_status llmgen_detok_new(const llmgen_model *lm, llmgen_detok **out, char *err, size_t errlen) {
    *out = NULL;
    llmgen_status st = need_tokenizer(lm, err, errlen);
    if (st) return st;
    llmgen_detok *d = calloc(1, sizeof *d);
    if (!d || !(d->ts = tok_stream_new(lm->m->tok))) {
        free(d);
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    }
    *out = d;
    return LLMGEN_OK;
}

llmgen_status llmgen_detok_put(llmgen_detok *d, int32_t id, const char **piece, size_t *len, char *err,
                               size_t errlen) {
    char e[TOK_ERR_LEN];
    if (tok_stream_put(d->ts, id, piece, len, e)) {
        *piece = "";
        *len = 0;
        return fail(LLMGEN_E_TOKENIZER, err, errlen, e);
    }
    return LLMGEN_OK;
}

void llmgen_detok_flush(llmgen_detok *d, const char **piece, size_t *len) {
    if (tok_stream_flush(d->ts, piece, len)) {
        *piece = "";
        *len = 0;
    }
}

void llmgen_detok_free(llmgen_detok *d) {
    if (!d) return;
    tok_stream_free(d->ts);
    free(d);
}
