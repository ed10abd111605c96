/* slots.c - the server's scheduler (slots.h): slot threads on one llmgen_batch, a
 * bounded FIFO of jobs, prefix affinity when a job meets several free slots. */
#include "slots.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    serve_slots *S;
    int index;
    llmgen_session *s;
    serve_job *job;            /* given to this slot, not started yet; or running */
    int busy;
    pthread_cond_t cond;       /* a job was given, or stop */
    pthread_t th;
    int started;
} slot;

struct serve_slots {
    llmgen_model *m;
    llmgen_batch *b;
    pthread_mutex_t mu;
    slot slots[LLMGEN_MAX_SEQUENCES];
    int n;
    serve_job *head, *tail;    /* waiting for a slot */
    int n_queued, queue_max;
    int stop;
    int ctx;
    serve_stats st;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void serve_slots_lock(serve_slots *S) { pthread_mutex_lock(&S->mu); }
void serve_slots_unlock(serve_slots *S) { pthread_mutex_unlock(&S->mu); }

void serve_slots_wait(serve_slots *S, pthread_cond_t *cond, int ms) {
    struct timespec t; /* the conditions use the default clock */
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(cond, &S->mu, &t);
}

serve_job *serve_job_new(const request *q, int32_t *prompt, int n_prompt, pthread_cond_t *wake) {
    serve_job *j = calloc(1, sizeof *j);
    if (!j) {
        free(prompt);
        return NULL;
    }
    j->q = *q;
    j->q.ids = NULL; /* the prompt ids are in j->prompt; q's own stay with the caller */
    j->q.messages = NULL;
    j->prompt = prompt;
    j->n_prompt = n_prompt;
    j->wake = wake;
    j->refs = 2;
    j->slot = -1;
    return j;
}

static void job_unref_locked(serve_job *j, int *free_it) { *free_it = --j->refs == 0; }

static void job_free(serve_job *j) {
    free(j->prompt);
    free(j->pending);
    llmgen_result_free(&j->r);
    free(j);
}

void serve_job_release(serve_slots *S, serve_job *j) {
    if (!j) return;
    int f;
    pthread_mutex_lock(&S->mu);
    if (!j->done) j->cancel = 1;
    job_unref_locked(j, &f);
    pthread_mutex_unlock(&S->mu);
    if (f) job_free(j);
}

/* Text of a piece into the job's pending buffer (under the lock). */
static int pending_add(serve_job *j, const char *text, size_t len) {
    if (j->n_pending + len + 1 > j->cap_pending) {
        size_t cap = j->cap_pending ? j->cap_pending : 256;
        while (cap < j->n_pending + len + 1) cap *= 2;
        char *p = realloc(j->pending, cap);
        if (!p) return -1;
        j->pending = p;
        j->cap_pending = cap;
    }
    memcpy(j->pending + j->n_pending, text, len);
    j->n_pending += len;
    return 0;
}

static int on_piece(void *user, int32_t id, const char *text, size_t len) {
    slot *sl = user;
    serve_job *j = sl->job;
    pthread_mutex_lock(&sl->S->mu);
    int stop = j->cancel;
    if (id >= 0) j->n_generated++;
    if (len && pending_add(j, text, len)) stop = 1;
    if (j->wake && (len || id >= 0)) pthread_cond_broadcast(j->wake);
    pthread_mutex_unlock(&sl->S->mu);
    return stop;
}

/* The free slot for j: the one whose session holds the longest prefix of its prompt
 * (the lowest index among equals); -1 when none is free. Under the lock. */
static int pick_slot(serve_slots *S, const serve_job *j) {
    int best = -1, best_len = -1;
    for (int i = 0; i < S->n; i++) {
        slot *sl = &S->slots[i];
        if (sl->busy || sl->job) continue;
        int k = llmgen_session_common_prefix(sl->s, j->prompt, j->n_prompt);
        if (k > best_len) best = i, best_len = k;
    }
    return best;
}

static void give(serve_slots *S, int i, serve_job *j) {
    S->slots[i].job = j;
    j->slot = i;
    pthread_cond_signal(&S->slots[i].cond);
}

static void run_job(slot *sl, serve_job *j) {
    serve_slots *S = sl->S;
    llmgen_generate_params p;
    char err[ERR_LEN] = "";
    llmgen_result r = {0};
    request_params(&j->q, &p);
    p.reuse_prefix = 1; /* the slot's cache: the same logits bits, only the new text prefilled */
    p.on_piece = on_piece;
    p.user = sl;
    llmgen_status st = llmgen_batch_join(S->b, sl->s, err, sizeof err);
    if (!st) {
        st = llmgen_generate(sl->s, j->prompt, j->n_prompt, &p, &r, err, sizeof err);
        llmgen_batch_leave(sl->s);
    }
    pthread_mutex_lock(&S->mu);
    j->st = st;
    memcpy(j->err, err, sizeof err);
    j->r = r;
    j->done = 1;
    S->st.requests_done++;
    S->st.prompt_tokens += r.n_prompt;
    S->st.cached_tokens += r.n_cached;
    S->st.generated_tokens += r.n_ids;
    S->st.prefill_s += r.prefill_s;
    S->st.decode_s += r.decode_s;
    if (j->wake) pthread_cond_broadcast(j->wake);
    pthread_mutex_unlock(&S->mu);
}

static void *slot_main(void *arg) {
    slot *sl = arg;
    serve_slots *S = sl->S;
    pthread_mutex_lock(&S->mu);
    for (;;) {
        if (!sl->job && S->head) { /* the next queued job */
            serve_job *j = S->head;
            S->head = j->next;
            if (!S->head) S->tail = NULL;
            S->n_queued--;
            j->next = NULL;
            j->slot = sl->index;
            sl->job = j;
        }
        if (!sl->job) {
            if (S->stop) break;
            pthread_cond_wait(&sl->cond, &S->mu);
            continue;
        }
        serve_job *j = sl->job;
        sl->busy = 1;
        S->st.busy++;
        j->started = 1;
        int skip = j->cancel;
        pthread_mutex_unlock(&S->mu);
        if (skip) { /* the client left while it waited */
            pthread_mutex_lock(&S->mu);
            j->st = LLMGEN_OK;
            j->r.stop_reason = LLMGEN_STOP_CANCELLED;
            j->done = 1;
            if (j->wake) pthread_cond_broadcast(j->wake);
            pthread_mutex_unlock(&S->mu);
        } else {
            run_job(sl, j);
        }
        pthread_mutex_lock(&S->mu);
        sl->job = NULL;
        sl->busy = 0;
        S->st.busy--;
        int f;
        job_unref_locked(j, &f);
        if (f) {
            pthread_mutex_unlock(&S->mu);
            job_free(j);
            pthread_mutex_lock(&S->mu);
        }
    }
    pthread_mutex_unlock(&S->mu);
    return NULL;
}

llmgen_status serve_slots_new(llmgen_model *m, int n_slots, int ctx, int queue_max, serve_slots **out, char *err,
                              size_t errlen) {
    serve_slots *S = calloc(1, sizeof *S);
    llmgen_status st;
    *out = NULL;
    if (!S) return snprintf(err, errlen, "out of memory"), LLMGEN_E_NOMEM;
    S->m = m;
    S->queue_max = queue_max;
    pthread_mutex_init(&S->mu, NULL);
    if ((st = llmgen_batch_new(m, n_slots, ctx, &S->b, err, errlen))) goto fail;
    for (; S->n < n_slots; S->n++) {
        slot *sl = &S->slots[S->n];
        sl->S = S;
        sl->index = S->n;
        pthread_cond_init(&sl->cond, NULL);
        if ((st = llmgen_session_new(m, ctx, &sl->s, err, errlen))) goto fail;
    }
    S->ctx = llmgen_session_ctx(S->slots[0].s);
    S->st.total = S->n;
    for (int i = 0; i < S->n; i++) {
        if (pthread_create(&S->slots[i].th, NULL, slot_main, &S->slots[i])) {
            snprintf(err, errlen, "cannot start the slot threads");
            st = LLMGEN_E_NOMEM;
            goto fail;
        }
        S->slots[i].started = 1;
    }
    *out = S;
    return LLMGEN_OK;
fail:
    serve_slots_free(S);
    return st;
}

int serve_slots_ctx(const serve_slots *S) { return S->ctx; }

void serve_slots_cancel_all(serve_slots *S) {
    pthread_mutex_lock(&S->mu);
    for (serve_job *j = S->head; j; j = j->next) j->cancel = 1;
    for (int i = 0; i < S->n; i++)
        if (S->slots[i].job) S->slots[i].job->cancel = 1;
    pthread_mutex_unlock(&S->mu);
}

void serve_slots_free(serve_slots *S) {
    if (!S) return;
    serve_slots_cancel_all(S);
    pthread_mutex_lock(&S->mu);
    S->stop = 1;
    for (int i = 0; i < S->n; i++) pthread_cond_signal(&S->slots[i].cond);
    pthread_mutex_unlock(&S->mu);
    for (int i = 0; i < S->n; i++)
        if (S->slots[i].started) pthread_join(S->slots[i].th, NULL);
    for (int i = 0; i < S->n; i++) {
        llmgen_session_free(S->slots[i].s);
        pthread_cond_destroy(&S->slots[i].cond);
    }
    llmgen_batch_free(S->b);
    pthread_mutex_destroy(&S->mu);
    free(S);
}

int serve_slots_submit(serve_slots *S, serve_job **jobs, int n) {
    pthread_mutex_lock(&S->mu);
    int free_slots = 0;
    for (int i = 0; i < S->n; i++) free_slots += !S->slots[i].busy && !S->slots[i].job;
    if (S->stop || S->n_queued + n - free_slots > S->queue_max) {
        pthread_mutex_unlock(&S->mu);
        return -1;
    }
    double t = now_s();
    for (int k = 0; k < n; k++) {
        serve_job *j = jobs[k];
        j->t_queued = t;
        int i = S->head ? -1 : pick_slot(S, j); /* none waits before it: a free slot takes it now */
        if (i >= 0) {
            give(S, i, j);
            continue;
        }
        if (S->tail) S->tail->next = j;
        else S->head = j;
        S->tail = j;
        S->n_queued++;
    }
    pthread_mutex_unlock(&S->mu);
    return 0;
}

void serve_slots_stats(serve_slots *S, serve_stats *out) {
    pthread_mutex_lock(&S->mu);
    *out = S->st;
    out->queued = S->n_queued;
    pthread_mutex_unlock(&S->mu);
    llmgen_batch_stats(S->b, &out->passes, &out->seq_steps);
}

int serve_slots_active(serve_slots *S) {
    pthread_mutex_lock(&S->mu);
    int n = S->n_queued;
    for (int i = 0; i < S->n; i++) n += S->slots[i].busy || S->slots[i].job;
    pthread_mutex_unlock(&S->mu);
    return n;
}
