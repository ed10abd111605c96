/* batch_run.c - --batch FILE --parallel N: N requests generate at once, each on a
 * thread and a session of its own, the sessions joined to one llmgen_batch so a
 * step of all of them is one pass over the weights. A slot whose request ends
 * takes the next line at once (continuous batching). Each result is written whole,
 * as one line, when its request ends, or in input order with --ordered. A request's
 * result is the same bytes as in a sequential run (llmgen.h: batch invariance), so
 * only the order of the lines can differ. Part of the CLI. */
#include "batch_run.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const batch_parallel *a;
    llmgen_batch *b;
    pthread_mutex_t in_mu, out_mu;
    long lineno, seq;          /* lines read; non-blank lines handed out (their order) */
    int eof, stop_out, first_fail, read_err;
    json_t **held;             /* --ordered: results waiting for an earlier one, by order */
    long n_held, next_out;
} runner;

typedef struct {
    runner *r;
    llmgen_session *s;
} worker;

/* The next non-blank line (a copy) and its numbers, or NULL at the end. */
static char *next_line(runner *r, size_t *len, long *lineno, long *seq) {
    char *line = NULL, *copy = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&r->in_mu);
    while (!r->eof && !*r->a->stop) {
        errno = 0;
        ssize_t n = getline(&line, &cap, r->a->in);
        if (n < 0) {
            r->eof = 1;
            if (ferror(r->a->in)) r->read_err = errno;
            break;
        }
        r->lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if ((size_t)n <= strspn(line, " \t")) continue; /* blank lines are allowed */
        copy = malloc((size_t)n + 1);
        if (copy) {
            memcpy(copy, line, (size_t)n);
            copy[n] = '\0';
            *len = (size_t)n;
            *lineno = r->lineno;
            *seq = r->seq++;
        } else {
            r->eof = 1;
            r->read_err = ENOMEM;
        }
        break;
    }
    pthread_mutex_unlock(&r->in_mu);
    free(line);
    return copy;
}

/* Write one result now, or hold it until the results before it are out (--ordered). */
static void put_result(runner *r, json_t *out, long seq, int code) {
    pthread_mutex_lock(&r->out_mu);
    if (code && !r->first_fail) r->first_fail = code;
    if (!r->a->ordered) {
        if (!r->stop_out && r->a->emit(r->a->user, out)) r->stop_out = 1;
        json_decref(out);
    } else {
        if (seq >= r->n_held) {
            long n = r->n_held ? r->n_held : 64;
            while (n <= seq) n *= 2;
            json_t **h = realloc(r->held, (size_t)n * sizeof *h);
            if (h) {
                memset(h + r->n_held, 0, (size_t)(n - r->n_held) * sizeof *h);
                r->held = h;
                r->n_held = n;
            }
        }
        if (seq < r->n_held) {
            r->held[seq] = out;
        } else { /* out of memory to hold it: write it now rather than lose it */
            if (!r->stop_out && r->a->emit(r->a->user, out)) r->stop_out = 1;
            json_decref(out);
        }
        for (; r->next_out < r->n_held && r->held[r->next_out]; r->next_out++) {
            if (!r->stop_out && r->a->emit(r->a->user, r->held[r->next_out])) r->stop_out = 1;
            json_decref(r->held[r->next_out]);
            r->held[r->next_out] = NULL;
        }
    }
    pthread_mutex_unlock(&r->out_mu);
}

static void *work(void *arg) {
    worker *w = arg;
    runner *r = w->r;
    char err[256];
    size_t len;
    long lineno, seq;
    char *line;
    while (!r->stop_out && (line = next_line(r, &len, &lineno, &seq))) {
        int code = 0;
        json_t *out = NULL;
        /* joined for the request only: a slot between requests holds up no one */
        if (!llmgen_batch_join(r->b, w->s, err, sizeof err)) {
            out = r->a->line(r->a->user, w->s, line, len, lineno, &code);
            llmgen_batch_leave(w->s);
        }
        free(line);
        if (out) put_result(r, out, seq, code);
    }
    return NULL;
}

/* One line after the other on a->s, in this thread. */
static void run_sequential(runner *r) {
    size_t len;
    long lineno, seq;
    char *line;
    while (!r->stop_out && (line = next_line(r, &len, &lineno, &seq))) {
        int code = 0;
        json_t *out = r->a->line(r->a->user, r->a->s, line, len, lineno, &code);
        free(line);
        put_result(r, out, seq, code);
    }
}

int batch_run_lines(const batch_parallel *a, int *first_fail, int *read_err, char *err, size_t errlen) {
    runner r = {.a = a};
    worker ws[LLMGEN_MAX_SEQUENCES];
    pthread_t th[LLMGEN_MAX_SEQUENCES];
    int n = 0, started = 0, rc = 0;
    pthread_mutex_init(&r.in_mu, NULL);
    pthread_mutex_init(&r.out_mu, NULL);
    if (a->parallel <= 1) {
        run_sequential(&r);
        goto out;
    }
    if (llmgen_batch_new(a->m, a->parallel, a->ctx_len, &r.b, err, errlen)) {
        rc = -1;
        goto out;
    }
    for (; n < a->parallel; n++) {
        ws[n].r = &r;
        if (llmgen_session_new(a->m, a->ctx_len, &ws[n].s, err, errlen)) {
            rc = -1;
            goto out;
        }
    }
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, work, &ws[started])) break;
    if (!started) {
        snprintf(err, errlen, "cannot start the --parallel threads");
        rc = -1;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
out:
    for (long i = r.next_out; i < r.n_held; i++) json_decref(r.held[i]); /* unwritten after a write error */
    free(r.held);
    for (int i = 0; i < n; i++) llmgen_session_free(ws[i].s);
    llmgen_batch_free(r.b);
    pthread_mutex_destroy(&r.in_mu);
    pthread_mutex_destroy(&r.out_mu);
    *first_fail = r.first_fail;
    *read_err = r.read_err;
    return rc;
}
