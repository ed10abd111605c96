/* session.c - the public API (llmgen.h) over the internal modules: model open /
 * capabilities, tokenizer calls, sessions that own a KV cache and a position,
 * prefill and decode step.
 *
 * llmgen_model wraps the internal model with the one piece of mutable state the
 * API needs: a busy flag, because the model's worker pool serves one forward
 * pass at a time and sessions of the same model share it. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "forward.h"
#include "llmgen.h"
#include "tokenizer.h"
#include "util.h"

struct llmgen_model {
    model *m;
    atomic_int busy; /* 1 while a prefill / decode step of any session runs on m->pool */
};

struct llmgen_session {
    llmgen_model *owner;
    fwd_state st;
    int pos;     /* tokens in the KV cache */
    float *rows; /* (chunk, vocab) logits of every token of a chunk, for llmgen_prefill_rows; NULL until then */
    int32_t *fed; /* (ctx) the ids at positions 0 .. pos - 1 */
    llmgen_batch *batch; /* joined to this batch, or NULL */
    /* while joined: the step this session waits for */
    const int32_t *want_ids;
    int want_n, pending;
};

/* Sessions stepping together (see llmgen.h). The step runs when every joined
 * session is waiting in one (the last to arrive, or to leave, runs it). */
struct llmgen_batch {
    llmgen_model *owner;
    fwd_state scratch;            /* activations of up to FWD_CHUNK + max_seqs tokens; its own cache unused */
    pthread_mutex_t mu;
    pthread_cond_t done;
    llmgen_session *members[LLMGEN_MAX_SEQUENCES]; /* joined sessions, in join order */
    int max_seqs, ctx, n_members, n_pending;
    int running;                  /* a member is running steps (batch_run): arrivals wait for it */
    long passes, seq_steps;       /* forward passes run, and sequence steps in them */
};

struct llmgen_detok {
    tok_stream *ts;
};

static llmgen_status fail(llmgen_status st, char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return st;
}

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

/* ---- model ---------------------------------------------------------------------- */

llmgen_status llmgen_model_open(const char *path, const llmgen_model_options *opt, llmgen_model **out,
                                char *err, size_t errlen) {
    char e[ERR_LEN] = "";
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    model_options mo = {.n_threads = cpus < 1 ? 1 : cpus > 256 ? 256 : (int)cpus};
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
        if (opt->n_threads < 0 || opt->n_threads > 256)
            return fail(LLMGEN_E_USAGE, err, errlen, "thread count must be between 1 and 256");
        if (opt->n_threads) mo.n_threads = opt->n_threads;
        if (opt->kernels && !kernels_select(opt->kernels)) {
            if (err && errlen)
                snprintf(err, errlen, "kernels \"%s\": not available on this CPU or in this build "
                         "(scalar always is; others: avx2, avx512, neon)", opt->kernels);
            return LLMGEN_E_USAGE;
        }
        mo.kernels = opt->kernels;
        mo.no_tokenizer = opt->no_tokenizer;
        mo.exact = opt->exact;
    }
    llmgen_model *lm = calloc(1, sizeof *lm);
    if (!lm) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    int io = 0;
    if (model_open(path, &mo, &lm->m, &io, e)) {
        free(lm);
        return fail(io ? LLMGEN_E_IO : LLMGEN_E_FORMAT, err, errlen, e);
    }
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
        .max_sequences = LLMGEN_MAX_SEQUENCES,
        .has_tokenizer = m->tok != NULL,
    };
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
                         .vars_json = vars ? vars : opt->vars_json};
    int rc = tok_chat_render_jinja(lm && lm->m->tok ? lm->m->tok : NULL, opt->template_text, &in, out, e);
    free(tm);
    free(vars);
    if (rc) return fail(rc == -1 ? LLMGEN_E_USAGE : chat_status(rc), err, errlen, e);
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

/* ---- sessions --------------------------------------------------------------------- */

llmgen_status llmgen_session_new(llmgen_model *lm, int ctx, llmgen_session **out, char *err, size_t errlen) {
    char e[ERR_LEN];
    *out = NULL;
    const model *m = lm->m;
    if (!m->pool) return fail(LLMGEN_E_USAGE, err, errlen, "this model was opened for its tokenizer only: no sessions");
    if (ctx < 0) return fail(LLMGEN_E_USAGE, err, errlen, "context size must be positive");
    if (ctx == 0) ctx = m->cfg.max_pos < 4096 ? m->cfg.max_pos : 4096;
    if (ctx > m->cfg.max_pos) {
        snprintf(e, sizeof e, "context size %d exceeds the model's maximum of %d positions", ctx, m->cfg.max_pos);
        return fail(LLMGEN_E_USAGE, err, errlen, e);
    }
    llmgen_session *s = calloc(1, sizeof *s);
    if (!s) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    s->owner = lm;
    s->fed = malloc((size_t)ctx * sizeof *s->fed);
    if (!s->fed) snprintf(e, sizeof e, "out of memory");
    if (!s->fed || fwd_state_init(&s->st, m, ctx, e)) {
        free(s->fed);
        free(s);
        return fail(LLMGEN_E_NOMEM, err, errlen, e);
    }
    *out = s;
    return LLMGEN_OK;
}

void llmgen_session_free(llmgen_session *s) {
    if (!s) return;
    llmgen_batch_leave(s);
    free(s->fed);
    fwd_state_free(&s->st);
    free(s->rows);
    free(s);
}

void llmgen_session_reset(llmgen_session *s) { s->pos = s->st.written = 0; }

int llmgen_session_common_prefix(const llmgen_session *s, const int32_t *ids, int n) {
    int k = 0;
    while (k < n && k < s->pos && s->fed[k] == ids[k]) k++;
    /* a sliding layer's ring may have overwritten the window before k: then nothing is
     * reusable (an earlier point's window is older still) */
    return fwd_cache_can_rewind(&s->st, &s->owner->m->cfg, k) ? k : 0;
}

void llmgen_session_rewind(llmgen_session *s, int pos) {
    if (pos < 0 || pos > s->pos) return;
    if (!fwd_cache_can_rewind(&s->st, &s->owner->m->cfg, pos)) pos = 0; /* see llmgen.h */
    s->pos = pos;
    if (!pos) s->st.written = 0;
}
int llmgen_session_pos(const llmgen_session *s) { return s->pos; }
int llmgen_session_ctx(const llmgen_session *s) { return s->st.ctx; }
size_t llmgen_session_kv_bytes(const llmgen_session *s, int *ring) {
    if (ring) *ring = s->st.ring;
    return s->st.kv_bytes;
}
llmgen_model *llmgen_session_model(const llmgen_session *s) { return s->owner; }

static llmgen_status check_ids(const llmgen_session *s, const int32_t *ids, int n, char *err, size_t errlen) {
    char e[ERR_LEN];
    if (n > s->st.ctx - s->pos) {
        snprintf(e, sizeof e, "out of context: %d tokens after %d would exceed the context size %d", n, s->pos,
                 s->st.ctx);
        return fail(LLMGEN_E_CONTEXT, err, errlen, e);
    }
    int V = s->owner->m->cfg.vocab_size;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V) {
            snprintf(e, sizeof e, "token id %d is outside the vocabulary [0, %d)", ids[i], V);
            return fail(LLMGEN_E_USAGE, err, errlen, e);
        }
    return LLMGEN_OK;
}

/* Take the model's worker pool for one call, or report who holds it. */
static llmgen_status acquire(llmgen_session *s, char *err, size_t errlen) {
    if (s->batch) return LLMGEN_OK; /* the batch takes the pool for each of its steps */
    if (atomic_exchange(&s->owner->busy, 1) == 0) return LLMGEN_OK;
    return fail(LLMGEN_E_BUSY, err, errlen,
                "another session of this model is running prefill or decode: sessions of one model take turns");
}

static void release(llmgen_session *s) {
    if (!s->batch) atomic_store(&s->owner->busy, 0);
}

/* Run the pending steps of b's members (all of them are waiting): as many
 * sequences per forward pass as fit the scratch, in join order. Called with b->mu
 * held; releases it during the passes (no member can change meanwhile: each is
 * waiting for this). */
static void batch_run(llmgen_batch *b) {
    fwd_seg segs[LLMGEN_MAX_SEQUENCES];
    llmgen_session *who[LLMGEN_MAX_SEQUENCES];
    b->running = 1;
    while (atomic_exchange(&b->owner->busy, 1)) /* a session outside the batch is mid-step */
        sched_yield();
    /* members that arrive meanwhile (joined late, or stepped again) are taken in the next pass */
    while (b->n_pending) {
        int nseg = 0, tokens = 0;
        for (int i = 0; i < b->n_members && nseg < b->max_seqs; i++) {
            llmgen_session *s = b->members[i];
            if (!s->pending || (nseg && tokens + s->want_n > b->scratch.chunk)) continue;
            segs[nseg] = (fwd_seg){&s->st, s->want_ids, s->want_n, s->pos, s->st.seq_end};
            who[nseg++] = s;
            tokens += s->want_n;
        }
        pthread_mutex_unlock(&b->mu);
        forward_batch(b->owner->m, &b->scratch, segs, nseg);
        pthread_mutex_lock(&b->mu);
        b->passes++;
        b->seq_steps += nseg;
        for (int i = 0; i < nseg; i++) {
            who[i]->pending = 0;
            who[i]->pos += who[i]->want_n;
        }
        b->n_pending -= nseg;
    }
    pool_park(b->owner->m->pool); /* the members sample now, on these cores */
    atomic_store(&b->owner->busy, 0);
    b->running = 0;
    pthread_cond_broadcast(&b->done);
}

/* One step of a joined session: wait until it has run (maybe run it). */
static void batch_step(llmgen_session *s, const int32_t *ids, int n) {
    llmgen_batch *b = s->batch;
    pthread_mutex_lock(&b->mu);
    s->want_ids = ids;
    s->want_n = n;
    s->pending = 1;
    if (++b->n_pending == b->n_members && !b->running) batch_run(b);
    while (s->pending) pthread_cond_wait(&b->done, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

/* Run ids through the model in chunks; callers have checked them. */
static void run_chunks(llmgen_session *s, const int32_t *ids, int n) {
    s->st.seq_end = s->pos + n; /* one call, one sequence length (LongRoPE) */
    memcpy(s->fed + s->pos, ids, (size_t)n * sizeof *ids);
    for (int done = 0; done < n;) {
        int k = n - done < s->st.chunk ? n - done : s->st.chunk;
        if (s->batch) {
            batch_step(s, ids + done, k); /* advances s->pos */
        } else {
            forward(s->owner->m, &s->st, ids + done, k, s->pos);
            s->pos += k;
        }
        done += k;
    }
}

/* NaN or Inf weights show up as non-finite logits; a scan of the logits (vocab
 * floats, microseconds) is far cheaper than a scan of every weight at load. */
static llmgen_status check_logits(const llmgen_session *s, char *err, size_t errlen) {
    const model *m = s->owner->m;
    const float *lg = s->st.logits;
    int V = m->cfg.vocab_size, i = 0;
    /* a branch-free pass first, 16 at a time (vectorized): a float is not finite when
     * its exponent bits are all ones, and then adding one to them carries into bit 31 */
    uint32_t acc[16] = {0}, bad = 0;
    for (; i + 16 <= V; i += 16) {
        uint32_t b[16];
        memcpy(b, lg + i, sizeof b);
        _Pragma("GCC unroll 16") for (int k = 0; k < 16; k++) acc[k] |= (b[k] & 0x7f800000u) + 0x00800000u;
    }
    for (int k = 0; k < 16; k++) bad |= acc[k];
    for (; i < V; i++) { /* the vocabulary's last V % 16 */
        uint32_t b;
        memcpy(&b, lg + i, sizeof b);
        bad |= (b & 0x7f800000u) + 0x00800000u;
    }
    if (!(bad & 0x80000000u)) return LLMGEN_OK;
    for (i = 0; i < V; i++)
        if (!isfinite(lg[i])) {
            if (err && errlen)
                snprintf(err, errlen, "%s: logit %d at position %d is %g: the weights contain NaN or Inf values",
                         m->path, i, s->pos - 1, (double)s->st.logits[i]);
            return LLMGEN_E_FORMAT;
        }
    return LLMGEN_OK;
}

llmgen_status llmgen_prefill(llmgen_session *s, const int32_t *ids, int n, const float **logits, char *err,
                             size_t errlen) {
    if (n <= 0 || !ids) return fail(LLMGEN_E_USAGE, err, errlen, "empty prompt: prefill needs at least one token");
    llmgen_status st = check_ids(s, ids, n, err, errlen);
    if (st || (st = acquire(s, err, errlen))) return st;
    run_chunks(s, ids, n);
    release(s);
    *logits = s->st.logits;
    return check_logits(s, err, errlen);
}

llmgen_status llmgen_decode_step(llmgen_session *s, int32_t id, const float **logits, char *err, size_t errlen) {
    llmgen_status st = check_ids(s, &id, 1, err, errlen);
    if (st || (st = acquire(s, err, errlen))) return st;
    run_chunks(s, &id, 1);
    release(s);
    *logits = s->st.logits;
    return check_logits(s, err, errlen);
}

llmgen_status llmgen_prefill_rows(llmgen_session *s, const int32_t *ids, int n, int first, llmgen_rows_fn fn,
                                  void *user, const float **logits, char *err, size_t errlen) {
    if (n <= 0 || !ids) return fail(LLMGEN_E_USAGE, err, errlen, "empty prompt: prefill needs at least one token");
    if (first < 0 || first > n || !fn)
        return fail(LLMGEN_E_USAGE, err, errlen, "prefill_rows: first must be in [0, n] and fn not NULL");
    llmgen_status st = check_ids(s, ids, n, err, errlen);
    if (st) return st;
    int V = s->owner->m->cfg.vocab_size;
    if (!s->rows && !(s->rows = malloc((size_t)s->st.chunk * (size_t)V * sizeof(float))))
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory for the logits of a chunk");
    if (s->batch) return fail(LLMGEN_E_USAGE, err, errlen, "prefill_rows: not for a session in a batch");
    if ((st = acquire(s, err, errlen))) return st;
    s->st.seq_end = s->pos + n; /* one call, one sequence length (LongRoPE) */
    for (int done = 0; done < n;) {
        int k = n - done < s->st.chunk ? n - done : s->st.chunk;
        memcpy(s->fed + s->pos, ids + done, (size_t)k * sizeof *ids);
        s->st.logits_all = done + k > first ? s->rows : NULL;
        forward(s->owner->m, &s->st, ids + done, k, s->pos);
        s->pos += k;
        for (int t = first > done ? first - done : 0; s->st.logits_all && t < k; t++)
            fn(user, done + t, s->rows + (size_t)t * V, V);
        done += k;
    }
    s->st.logits_all = NULL;
    release(s);
    if (logits) *logits = s->st.logits;
    return check_logits(s, err, errlen);
}

/* ---- several sequences per step ------------------------------------------------------ */

llmgen_status llmgen_batch_new(llmgen_model *lm, int max_sequences, int ctx, llmgen_batch **out, char *err,
                               size_t errlen) {
    char e[ERR_LEN];
    *out = NULL;
    const model *m = lm->m;
    if (!m->pool) return fail(LLMGEN_E_USAGE, err, errlen, "this model was opened for its tokenizer only: no batches");
    if (max_sequences < 1 || max_sequences > LLMGEN_MAX_SEQUENCES) {
        snprintf(e, sizeof e, "a batch holds 1 to %d sequences", LLMGEN_MAX_SEQUENCES);
        return fail(LLMGEN_E_USAGE, err, errlen, e);
    }
    if (ctx == 0) ctx = m->cfg.max_pos < 4096 ? m->cfg.max_pos : 4096;
    if (ctx < 1 || ctx > m->cfg.max_pos) return fail(LLMGEN_E_USAGE, err, errlen, "context size out of range");
    llmgen_batch *b = calloc(1, sizeof *b);
    if (!b) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    b->owner = lm;
    b->max_seqs = max_sequences;
    b->ctx = ctx;
    /* one full prefill chunk beside a decode token of every other sequence; its own
     * cache is one block (unused) */
    if (fwd_state_init_batch(&b->scratch, m, ctx, FWD_CHUNK + max_sequences, max_sequences, e)) {
        free(b);
        return fail(LLMGEN_E_NOMEM, err, errlen, e);
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->done, NULL);
    *out = b;
    return LLMGEN_OK;
}

void llmgen_batch_free(llmgen_batch *b) {
    if (!b) return;
    for (int i = b->n_members - 1; i >= 0; i--) b->members[i]->batch = NULL;
    fwd_state_free(&b->scratch);
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->done);
    free(b);
}

llmgen_status llmgen_batch_join(llmgen_batch *b, llmgen_session *s, char *err, size_t errlen) {
    if (s->owner != b->owner) return fail(LLMGEN_E_USAGE, err, errlen, "the session belongs to another model");
    if (s->batch) return fail(LLMGEN_E_USAGE, err, errlen, "the session is already in a batch");
    if (s->st.ctx > b->ctx) return fail(LLMGEN_E_USAGE, err, errlen, "the session's context exceeds the batch's");
    pthread_mutex_lock(&b->mu);
    if (b->n_members == b->max_seqs) {
        pthread_mutex_unlock(&b->mu);
        return fail(LLMGEN_E_USAGE, err, errlen, "the batch is full");
    }
    b->members[b->n_members++] = s;
    s->batch = b;
    s->pending = 0;
    pthread_mutex_unlock(&b->mu);
    return LLMGEN_OK;
}

void llmgen_batch_leave(llmgen_session *s) {
    llmgen_batch *b = s ? s->batch : NULL;
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    int i = 0;
    while (b->members[i] != s) i++;
    memmove(&b->members[i], &b->members[i + 1], (size_t)(b->n_members - i - 1) * sizeof b->members[0]);
    b->n_members--;
    s->batch = NULL;
    /* the others may all be waiting for this one */
    if (b->n_members && b->n_pending == b->n_members && !b->running) batch_run(b);
    pthread_mutex_unlock(&b->mu);
}

void llmgen_batch_stats(llmgen_batch *b, long *passes, long *seq_steps) {
    pthread_mutex_lock(&b->mu);
    *passes = b->passes;
    *seq_steps = b->seq_steps;
    pthread_mutex_unlock(&b->mu);
}

/* ---- the cache in a file (--prompt-cache) ---------------------------------------------
 *
 * "LLMGENKV", u32 version 1, u32 n + the fingerprint (n bytes), u32 pos, pos i32 ids,
 * u64 n + the cache bytes (fwd_cache_io), u64 FNV-1a of everything before it. The
 * fingerprint names everything a result depends on: the model file (real path, size,
 * modification time), its architecture and weight types, the mode, the kernel set
 * (fast-mode bits differ between them) with the activations its kernels ask for
 * (kernels.act_group: AVX-512 with VNNI quantizes Q4_K inputs per 256, older builds
 * per 32 under the same kernel-set name), and the cache layout. */

#define KV_MAGIC "LLMGENKV"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static int fingerprint(const llmgen_session *s, char *out, size_t n, char *err, size_t errlen) {
    const model *m = s->owner->m;
    const model_config *c = &m->cfg;
    struct stat st;
    char *real = realpath(m->path, NULL);
    if (!real || stat(real, &st)) {
        free(real);
        snprintf(err, errlen, "%s: %s", m->path, strerror(errno));
        return -1;
    }
    /* a model with sliding layers also names its ring (fwd_ring_size, a constant of the
     * model): a session whose context is no longer keeps those layers whole, the same
     * bytes for every position its file can hold (pos <= that context <= ring) */
    int ring = fwd_ring_size(c);
    char ring_s[32] = "";
    if (ring) snprintf(ring_s, sizeof ring_s, "|ring %d", ring);
    char act[128] = "";
    for (int t = 0, k = 0; t < DT_COUNT && k < (int)sizeof act - 24; t++)
        if (m->kern->act_group[t]) k += snprintf(act + k, sizeof act - (size_t)k, "|act %s/%d", dtype_name((dtype)t), 32 * m->kern->act_group[t]);
    snprintf(out, n, "llmgen kv 1|model %s|size %lld|mtime %lld.%09ld|%s|%s|%s|kernels %s%s|cache %s|%dx%dx%d|rot %d%s",
             real, (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec, c->arch, m->weight_types,
             s->st.fast ? "fast" : "exact", m->kern->name, act, dtype_name(s->st.kv_type), c->n_layers, c->n_kv_heads,
             c->head_dim, c->rot_dim, ring_s);
    free(real);
    return 0;
}

llmgen_status llmgen_session_save(llmgen_session *s, const char *path, char *err, size_t errlen) {
    char fp[1024];
    if (fingerprint(s, fp, sizeof fp, err, errlen)) return LLMGEN_E_IO;
    const model_config *c = &s->owner->m->cfg;
    uint32_t ver = 1, nfp = (uint32_t)strlen(fp), pos = (uint32_t)s->pos;
    uint64_t nb = fwd_cache_io(&s->st, c, s->pos, NULL, 1);
    void *cache = malloc(nb ? nb : 1);
    if (!cache) return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory");
    fwd_cache_io(&s->st, c, s->pos, cache, 1);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    uint64_t h = 1469598103934665603ull;
    int ok = f != NULL;
#define PUT(p, n) (ok = ok && fwrite((p), 1, (n), f) == (n), h = fnv1a(h, (p), (n)))
    PUT(KV_MAGIC, 8);
    PUT(&ver, 4);
    PUT(&nfp, 4);
    PUT(fp, nfp);
    PUT(&pos, 4);
    PUT(s->fed, (size_t)pos * 4);
    PUT(&nb, 8);
    PUT(cache, nb);
#undef PUT
    ok = ok && fwrite(&h, 1, 8, f) == 8;
    if (f && fclose(f)) ok = 0;
    free(cache);
    /* written whole to a temporary name first: a killed save never leaves half a cache */
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        if (err && errlen) snprintf(err, errlen, "%s: cannot write the prompt cache: %s", path, strerror(errno));
        return LLMGEN_E_IO;
    }
    return LLMGEN_OK;
}

llmgen_status llmgen_session_load(llmgen_session *s, const char *path, char *err, size_t errlen) {
    char fp[1024];
    if (fingerprint(s, fp, sizeof fp, err, errlen)) return LLMGEN_E_IO;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return LLMGEN_E_IO;
    }
    struct stat st;
    size_t n = fstat(fileno(f), &st) ? 0 : (size_t)st.st_size;
    unsigned char *b = n >= 8 + 4 + 4 + 4 + 8 + 8 ? malloc(n) : NULL;
    int rd = b && fread(b, 1, n, f) == n;
    fclose(f);
    const char *why = NULL;
    uint32_t ver, nfp, pos;
    uint64_t nb, h;
    size_t at = 12;
    if (!rd) why = b || n < 36 ? "too short or unreadable" : "out of memory";
    else if (memcmp(b, KV_MAGIC, 8)) why = "not an llmgen prompt cache";
    else if (memcpy(&ver, b + 8, 4), ver != 1) why = "an unknown version";
    else if (memcpy(&nfp, b + 12, 4), (at = 16 + (size_t)nfp) + 4 > n) why = "truncated";
    else if (nfp != strlen(fp) || memcmp(b + 16, fp, nfp))
        why = "made with another model file, mode, kernel set or cache layout";
    else if (memcpy(&pos, b + at, 4), pos > (uint32_t)s->st.ctx) why = "longer than this session's context";
    else if ((at += 4 + (size_t)pos * 4) + 8 > n) why = "truncated";
    else if (memcpy(&nb, b + at, 8), nb != fwd_cache_io(&s->st, &s->owner->m->cfg, (int)pos, NULL, 0) ||
             at + 8 + nb + 8 != n)
        why = "truncated or of another cache layout";
    else if (memcpy(&h, b + n - 8, 8), h != fnv1a(1469598103934665603ull, b, n - 8))
        why = "damaged (checksum)";
    if (why) {
        free(b);
        if (err && errlen) snprintf(err, errlen, "%s: prompt cache %s", path, why);
        return LLMGEN_E_FORMAT;
    }
    for (uint32_t i = 0; i < pos; i++) {
        int32_t id;
        memcpy(&id, b + 20 + nfp + 4 * (size_t)i, 4);
        if (id < 0 || id >= s->owner->m->cfg.vocab_size) {
            free(b);
            if (err && errlen) snprintf(err, errlen, "%s: prompt cache holds a token outside the vocabulary", path);
            return LLMGEN_E_FORMAT;
        }
        s->fed[i] = id;
    }
    fwd_cache_io(&s->st, &s->owner->m->cfg, (int)pos, b + at + 8, 0);
    s->pos = (int)pos;
    free(b);
    return LLMGEN_OK;
}
