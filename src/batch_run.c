/* batch_run.c - --batch FILE --parallel N: N requests generate at once, each on a
 * thread and a session of its own, the sessions joined to one llmgen_batch so a
 * step of all of them is one pass over the weights. A slot whose request ends
 * takes the next line at once (continuous batching). Each result is written whole,
 * as one line, when its request ends, or in input order with --ordered. A request's
 * result is the same bytes as in a sequential run (llmgen.h: batch invariance), so
 * only the order of the lines can differ.
 *
 * --resume OUT: the results go to OUT, appended, each with one write() of the whole
 * line; a request whose key (its "id", else its line number) OUT already holds is
 * skipped. A line torn by a kill (no newline at the end of OUT) is cut off first, so
 * a killed run resumed gives exactly one line per request. Part of the CLI. */
#include "batch_run.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A set of strings (request keys), open addressing. */
typedef struct {
    char **slot;
    size_t cap, n;
} key_set;

static size_t key_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static int key_has(const key_set *k, const char *s) {
    if (!k->cap) return 0;
    for (size_t i = key_hash(s) & (k->cap - 1); k->slot[i]; i = (i + 1) & (k->cap - 1))
        if (!strcmp(k->slot[i], s)) return 1;
    return 0;
}

/* Takes s (malloc'd); 0, or -1 out of memory (s freed). */
static int key_add(key_set *k, char *s) {
    if (key_has(k, s)) {
        free(s);
        return 0;
    }
    if (2 * (k->n + 1) > k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 256;
        char **slot = calloc(cap, sizeof *slot);
        if (!slot) {
            free(s);
            return -1;
        }
        for (size_t i = 0; i < k->cap; i++)
            if (k->slot[i]) {
                size_t j = key_hash(k->slot[i]) & (cap - 1);
                while (slot[j]) j = (j + 1) & (cap - 1);
                slot[j] = k->slot[i];
            }
        free(k->slot);
        k->slot = slot;
        k->cap = cap;
    }
    size_t j = key_hash(s) & (k->cap - 1);
    while (k->slot[j]) j = (j + 1) & (k->cap - 1);
    k->slot[j] = s;
    k->n++;
    return 0;
}

static void key_free(key_set *k) {
    for (size_t i = 0; i < k->cap; i++) free(k->slot[i]);
    free(k->slot);
}

/* A request's key: its "id" as compact JSON, else "line N". NULL: out of memory. */
static char *request_key(json_t *o, long lineno) {
    json_t *id = json_is_object(o) ? json_object_get(o, "id") : NULL;
    if (id) return json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    char buf[32];
    snprintf(buf, sizeof buf, "line %ld", lineno);
    return strdup(buf);
}

typedef struct {
    const batch_parallel *a;
    llmgen_batch *b;
    pthread_mutex_t in_mu, out_mu;
    long lineno, seq;          /* lines read; non-blank lines handed out (their order) */
    int eof, stop_out, first_fail, read_err;
    json_t **held;             /* --ordered: results waiting for an earlier one, by order */
    long n_held, next_out;
    int out_fd;                /* --resume: the results file, appended to; -1 otherwise */
    key_set done;              /* --resume: keys of the requests it holds */
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
        if (r->out_fd >= 0) { /* --resume: done already? */
            json_t *o = json_loadb(line, (size_t)n, 0, NULL);
            char *key = request_key(o, r->lineno);
            int done = key && key_has(&r->done, key);
            free(key);
            json_decref(o);
            if (done) continue;
        }
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

/* One result line: to the --resume file in one write() (a kill cannot leave half
 * of it unless the system call itself is cut), else through the caller. */
static int write_result(runner *r, json_t *out) {
    if (r->out_fd < 0) return r->a->emit(r->a->user, out);
    char *s = json_dumps(out, JSON_COMPACT);
    if (!s) return -1;
    size_t n = strlen(s);
    s[n] = '\n'; /* over the NUL: the line with its newline */
    const char *p = s;
    size_t left = n + 1;
    while (left) {
        ssize_t w = write(r->out_fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        p += w, left -= (size_t)w;
    }
    free(s);
    return left ? -1 : 0;
}

/* Write one result now, or hold it until the results before it are out (--ordered). */
static void put_result(runner *r, json_t *out, long seq, int code) {
    pthread_mutex_lock(&r->out_mu);
    if (code && !r->first_fail) r->first_fail = code;
    if (!r->a->ordered) {
        if (!r->stop_out && write_result(r, out)) r->stop_out = 1;
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
            if (!r->stop_out && write_result(r, out)) r->stop_out = 1;
            json_decref(out);
        }
        for (; r->next_out < r->n_held && r->held[r->next_out]; r->next_out++) {
            if (!r->stop_out && write_result(r, r->held[r->next_out])) r->stop_out = 1;
            json_decref(r->held[r->next_out]);
            r->held[r->next_out] = NULL;
        }
    }
    pthread_mutex_unlock(&r->out_mu);
}

/* A slot's loop: the next line, its result, until the lines or the output end. With a
 * batch (--parallel) the slot's session is joined to it for the request only, so a
 * slot between requests holds up no one; without, the lines run one after the other. */
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
        if (!r->b || !llmgen_batch_join(r->b, w->s, err, sizeof err)) {
            out = r->a->line(r->a->user, w->s, line, len, lineno, &code);
            if (r->b) llmgen_batch_leave(w->s);
        }
        free(line);
        if (out) put_result(r, out, seq, code);
    }
    return NULL;
}

/* --resume: open OUT for appending, cut a torn last line, collect the keys it holds. */
static int open_resume(runner *r, const char *path, char *err, size_t errlen) {
    r->out_fd = open(path, O_RDWR | O_CREAT | O_APPEND, 0644);
    if (r->out_fd < 0) return snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)), -1;
    struct stat st;
    if (fstat(r->out_fd, &st)) return snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1;
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) return snprintf(err, errlen, "%s: out of memory", path), -1;
    while (got < n) {
        ssize_t k = pread(r->out_fd, buf + got, n - got, (off_t)got);
        if (k <= 0) {
            free(buf);
            return snprintf(err, errlen, "%s: read error", path), -1;
        }
        got += (size_t)k;
    }
    size_t whole = n;
    while (whole > 0 && buf[whole - 1] != '\n') whole--;
    if (whole < n && ftruncate(r->out_fd, (off_t)whole)) {
        free(buf);
        return snprintf(err, errlen, "%s: cannot cut its torn last line: %s", path, strerror(errno)), -1;
    }
    int rc = 0;
    for (size_t i = 0; i < whole && !rc;) {
        size_t e = i;
        while (buf[e] != '\n') e++;
        json_t *o = json_loadb(buf + i, e - i, 0, NULL);
        json_t *line = json_is_object(o) ? json_object_get(o, "line") : NULL;
        if (o && (json_object_get(o, "id") || json_is_integer(line))) {
            char *key = request_key(o, json_is_integer(line) ? (long)json_integer_value(line) : 0);
            if (!key || key_add(&r->done, key)) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = -1;
            }
        }
        json_decref(o);
        i = e + 1;
    }
    free(buf);
    return rc;
}

int batch_run_lines(const batch_parallel *a, int *first_fail, int *read_err, int *io, char *err, size_t errlen) {
    runner r = {.a = a, .out_fd = -1};
    worker ws[LLMGEN_MAX_SEQUENCES];
    pthread_t th[LLMGEN_MAX_SEQUENCES];
    int n = 0, started = 0, rc = 0;
    *io = 0;
    pthread_mutex_init(&r.in_mu, NULL);
    pthread_mutex_init(&r.out_mu, NULL);
    if (a->resume && open_resume(&r, a->resume, err, errlen)) {
        *io = 1;
        rc = -1;
        goto out;
    }
    if (a->parallel <= 1) { /* one slot, on a->s, in this thread */
        worker one = {&r, a->s};
        work(&one);
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
    if (r.out_fd >= 0 && close(r.out_fd) && !rc && !r.stop_out) r.stop_out = 1;
    key_free(&r.done);
    if (r.stop_out && a->resume && !rc) {
        snprintf(err, errlen, "%s: write error", a->resume);
        *io = 1;
        rc = -1;
    }
    *first_fail = r.first_fail;
    *read_err = r.read_err;
    return rc;
}
