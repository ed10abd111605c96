/* slots.h - the server's scheduler: N slots, each a thread with a session joined to one
 * llmgen_batch for the length of a request, so the requests of all busy slots step
 * together (one pass over the weights per step, continuous batching as --batch
 * --parallel does: a new request joins at the next step boundary). A job waits in a
 * bounded queue until a slot is free; a free slot is chosen by the longest prefix its
 * session already holds (a conversation's next turn prefills only its new text).
 * Part of the server front end; never prints. */
#ifndef LLMGEN_SERVE_SLOTS_H
#define LLMGEN_SERVE_SLOTS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "llmgen.h"
#include "cli/request.h"

typedef struct serve_slots serve_slots;

/* One generation (one choice of one prompt). The submitter fills q, prompt and wake;
 * the fields below "output" are written by the slot under the scheduler's lock
 * (serve_slots_lock) and read by the submitter under it. */
typedef struct serve_job {
    request q;                 /* its strings point into the request JSON, which the submitter keeps */
    int32_t *prompt;           /* (n_prompt) ids, owned by the job */
    int n_prompt;
    pthread_cond_t *wake;      /* signalled (under the lock) when pending text arrives or the job ends */
    /* output */
    char *pending;             /* text generated and not yet taken (serve_job_take), streaming */
    size_t n_pending, cap_pending;
    int n_generated;           /* ids generated so far */
    int started, done;         /* a slot took it; it ended (r, st and err are final) */
    llmgen_status st;
    char err[ERR_LEN];
    llmgen_result r;
    int cancel;                /* the client is gone: stop at the next step (set by the submitter) */
    double t_queued;           /* seconds the job waited for a slot */
    int slot;                  /* the slot that ran it */
    struct serve_job *next;    /* queue link */
    int refs;                  /* the submitter's and the slot's */
} serve_job;

typedef struct {
    long requests_done;        /* jobs that ended */
    long prompt_tokens, cached_tokens, generated_tokens;
    double prefill_s, decode_s;
    int busy, total, queued;   /* slots running a job, slots, jobs waiting */
    long passes, seq_steps;    /* the batch's forward passes and the sequence steps they carried */
} serve_stats;

/* n_slots sessions of context ctx (0: the default) of m in one batch, and their threads.
 * queue_max: jobs that may wait for a slot. */
llmgen_status serve_slots_new(llmgen_model *m, int n_slots, int ctx, int queue_max, serve_slots **out, char *err,
                              size_t errlen);
/* Cancel what runs and waits, join the threads, free. NULL is fine. */
void serve_slots_free(serve_slots *S);
int serve_slots_ctx(const serve_slots *S);

/* A new job for q (copied) and prompt (taken: the job frees it); refs 2. NULL: out of memory. */
serve_job *serve_job_new(const request *q, int32_t *prompt, int n_prompt, pthread_cond_t *wake);
/* Queue jobs[0..n) together (all or none): 0, or -1 when the queue has no room for them. */
int serve_slots_submit(serve_slots *S, serve_job **jobs, int n);
/* Drop the submitter's reference (under no lock); cancels the job if it has not ended. */
void serve_job_release(serve_slots *S, serve_job *j);

void serve_slots_lock(serve_slots *S);
void serve_slots_unlock(serve_slots *S);
/* Wait on cond with the scheduler's lock held, at most ms milliseconds. */
void serve_slots_wait(serve_slots *S, pthread_cond_t *cond, int ms);

void serve_slots_stats(serve_slots *S, serve_stats *out);
/* Jobs running or waiting (for a drain). */
int serve_slots_active(serve_slots *S);
/* Cancel every job running or waiting. */
void serve_slots_cancel_all(serve_slots *S);

#endif
