/* batch_sched.c - several sessions stepping together (llmgen_batch of llmgen.h): a
 * joined session's step waits until every member waits, then the last to arrive
 * runs the pending steps, as many sequences per forward pass as fit. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "batch_sched.h"
#include "handles.h"
#include "base/util.h"

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
void batch_step(llmgen_session *s, const int32_t *ids, int n) {
    llmgen_batch *b = s->batch;
    pthread_mutex_lock(&b->mu);
    s->want_ids = ids;
    s->want_n = n;
    s->pending = 1;
    if (++b->n_pending == b->n_members && !b->running) batch_run(b);
    while (s->pending) pthread_cond_wait(&b->done, &b->mu);
    pthread_mutex_unlock(&b->mu);
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
    if (ctx == 0) ctx = m->cfg.max_pos < LLMGEN_DEFAULT_CONTEXT ? m->cfg.max_pos : LLMGEN_DEFAULT_CONTEXT;
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
