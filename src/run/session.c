/* session.c - sessions (llmgen.h): each owns a KV cache and a position; prefill
 * and decode step, alone or as a member of a batch (batch_sched.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "batch_sched.h"
#include "handles.h"
#include "base/util.h"

/* ---- sessions --------------------------------------------------------------------- */

llmgen_status llmgen_session_new(llmgen_model *lm, int ctx, llmgen_session **out, char *err, size_t errlen) {
    char e[ERR_LEN];
    *out = NULL;
    const model *m = lm->m;
    if (!m->pool) return fail(LLMGEN_E_USAGE, err, errlen, "this model was opened for its tokenizer only: no sessions");
    if (ctx < 0) return fail(LLMGEN_E_USAGE, err, errlen, "context size must be positive");
    if (ctx == 0) ctx = m->cfg.max_pos < LLMGEN_DEFAULT_CONTEXT ? m->cfg.max_pos : LLMGEN_DEFAULT_CONTEXT;
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

void llmgen_session_reset(llmgen_session *s) { s->pos = s->st.kv.written = 0; }

int llmgen_session_common_prefix(const llmgen_session *s, const int32_t *ids, int n) {
    int k = 0;
    while (k < n && k < s->pos && s->fed[k] == ids[k]) k++;
    /* a sliding layer's ring may have overwritten the window before k: then nothing is
     * reusable (an earlier point's window is older still) */
    return kv_cache_can_rewind(&s->st.kv, &s->owner->m->cfg, k) ? k : 0;
}

static void run_chunks(llmgen_session *s, const int32_t *ids, int n);
static llmgen_status acquire(llmgen_session *s, char *err, size_t errlen);
static void release(llmgen_session *s);

/* The recurrent states of a LAYER_LINEAR model as position pos has them, back from the
 * snapshot of an earlier position (kv_cache.h) by running the ids from there to pos again;
 * -1 when that cannot be done now. */
static int lin_rerun(llmgen_session *s, int pos) {
    kv_cache *kv = &s->st.kv;
    int snap = kv->snap_pos, n = pos - snap;
    if (snap < 0 || snap > pos) return -1;
    int32_t *ids = n ? malloc((size_t)n * sizeof *ids) : NULL;
    char e[ERR_LEN];
    if ((n && !ids) || (n && acquire(s, e, sizeof e))) {
        free(ids);
        return -1;
    }
    kv_lin_restore(kv);
    kv->written = snap;
    s->pos = snap;
    if (n) {
        memcpy(ids, s->fed + snap, (size_t)n * sizeof *ids);
        s->st.no_logits = 1;
        run_chunks(s, ids, n);
        s->st.no_logits = 0;
        release(s);
    }
    free(ids);
    return 0;
}

void llmgen_session_rewind(llmgen_session *s, int pos) {
    if (pos < 0 || pos > s->pos) return;
    if (!kv_cache_can_rewind(&s->st.kv, &s->owner->m->cfg, pos)) pos = 0; /* see llmgen.h */
    if (s->st.kv.lin && pos > 0 && pos < s->st.kv.written && lin_rerun(s, pos)) pos = 0;
    s->pos = pos;
    if (!pos) s->st.kv.written = 0;
}
int llmgen_session_pos(const llmgen_session *s) { return s->pos; }
int llmgen_session_ctx(const llmgen_session *s) { return s->st.ctx; }
size_t llmgen_session_kv_bytes(const llmgen_session *s, int *ring) {
    if (ring) *ring = s->st.kv.ring;
    return s->st.kv.bytes;
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

/* The contract of llmgen_decode_rows (llmgen.h): every kernel computes each token's row
 * on its own, so a pass's row t is what a decode step of that token alone gives. The
 * one input a pass shares is the RoPE factor LongRoPE picks by the call's end
 * (forward.h, seq_end): a step at position p picks by p + 1, so the pass is cut where
 * that choice changes (at the original context), and each part ends where its own
 * steps' choices agree. */
llmgen_status llmgen_decode_rows(llmgen_session *s, const int32_t *ids, int n, const float **rows, char *err,
                                 size_t errlen) {
    if (n <= 0 || !ids || !rows) return fail(LLMGEN_E_USAGE, err, errlen, "decode_rows: needs ids (n >= 1) and rows");
    if (n > s->st.chunk) {
        char e[ERR_LEN];
        snprintf(e, sizeof e, "decode_rows: %d ids exceed the session's %d per pass", n, s->st.chunk);
        return fail(LLMGEN_E_USAGE, err, errlen, e);
    }
    if (s->batch) return fail(LLMGEN_E_USAGE, err, errlen, "decode_rows: not for a session in a batch");
    llmgen_status st = check_ids(s, ids, n, err, errlen);
    if (st) return st;
    const model *m = s->owner->m;
    int V = m->cfg.vocab_size, orig = m->cfg.rope_orig_max_pos;
    if (!s->rows && !(s->rows = malloc((size_t)s->st.chunk * (size_t)V * sizeof(float))))
        return fail(LLMGEN_E_NOMEM, err, errlen, "out of memory for the logits of a chunk");
    if ((st = acquire(s, err, errlen))) return st;
    memcpy(s->fed + s->pos, ids, (size_t)n * sizeof *ids);
    for (int done = 0; done < n;) {
        int k = n - done;
        if (m->rope_inv_freq_long && s->pos < orig && s->pos + k > orig) k = orig - s->pos;
        s->st.seq_end = 0; /* each part's own end */
        s->st.logits_all = s->rows + (size_t)done * V;
        forward(m, &s->st, ids + done, k, s->pos);
        s->pos += k;
        done += k;
    }
    s->st.logits_all = NULL;
    release(s);
    *rows = s->rows;
    for (int t = 0; t < n && !st; t++) { /* every row, as n steps would check each */
        float *keep = s->st.logits;
        s->st.logits = s->rows + (size_t)t * V;
        st = check_logits(s, err, errlen);
        s->st.logits = keep;
    }
    return st;
}
