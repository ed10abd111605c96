/* batch_run.c - --batch FILE --parallel N: N requests generate at once, each on a
 * thread and a session of its own, the sessions joined to one llmgen_batch so a
 * step of all of them is one pass over the weights. A slot whose request ends
 * takes the next line at once (continuous batching). Each result is written whole,
 * as one line, when its request ends, or in input order with --ordered. A request's
 * result is the same bytes as in a sequential run (llmgen.h: batch invariance), so
 * only the order of the lines can differ.
 *
 * Every line is read before anything runs: a request "id" that two lines give is an
 * error naming both, with nothing run (a result must name one request).
 *
 * --resume OUT: the results go to OUT, appended, each with one write() of the whole
 * line; a request whose key (its "id", else its line number) OUT already holds is
 * skipped. OUT is locked (flock) for the run, so a second run resuming into it is
 * refused instead of writing the same requests again. A line torn by a kill (no
 * newline at the end of OUT) is cut off first, so a killed run resumed gives exactly
 * one line per request. Part of the CLI. */
#include "batch_run.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* A set of strings (request keys) with the line that gave each, open addressing. */
typedef struct {
    char **slot;
    long *line;
    size_t cap, n;
} key_set;

static size_t key_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

/* The line that gave key s, or 0 when the set does not hold it. */
static long key_line(const key_set *k, const char *s) {
    if (!k->cap) return 0;
    for (size_t i = key_hash(s) & (k->cap - 1); k->slot[i]; i = (i + 1) & (k->cap - 1))
        if (!strcmp(k->slot[i], s)) return k->line[i];
    return 0;
}

/* Takes s (malloc'd), from line (>= 1); 0, or -1 out of memory (s freed). A key the
 * set holds already keeps its first line. */
static int key_add(key_set *k, char *s, long line) {
    if (key_line(k, s)) {
        free(s);
        return 0;
    }
    if (2 * (k->n + 1) > k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 256;
        char **slot = calloc(cap, sizeof *slot);
        long *lines = calloc(cap, sizeof *lines);
        if (!slot || !lines) {
            free(slot);
            free(lines);
            free(s);
            return -1;
        }
        for (size_t i = 0; i < k->cap; i++)
            if (k->slot[i]) {
                size_t j = key_hash(k->slot[i]) & (cap - 1);
                while (slot[j]) j = (j + 1) & (cap - 1);
                slot[j] = k->slot[i];
                lines[j] = k->line[i];
            }
        free(k->slot);
        free(k->line);
        k->slot = slot;
        k->line = lines;
        k->cap = cap;
    }
    size_t j = key_hash(s) & (k->cap - 1);
    while (k->slot[j]) j = (j + 1) & (k->cap - 1);
    k->slot[j] = s;
    k->line[j] = line;
    k->n++;
    return 0;
}

static void key_free(key_set *k) {
    for (size_t i = 0; i < k->cap; i++) free(k->slot[i]);
    free(k->slot);
    free(k->line);
}

struct batch_ids {
    key_set ids;
};

batch_ids *batch_ids_new(void) { return calloc(1, sizeof(batch_ids)); }

long batch_ids_add(batch_ids *b, json_t *request, long lineno) {
    json_t *id = json_is_object(request) ? json_object_get(request, "id") : NULL;
    if (!id) return 0;
    char *key = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    if (!key) return -1;
    long first = key_line(&b->ids, key);
    if (first) {
        free(key);
        return first;
    }
    return key_add(&b->ids, key, lineno) ? -1 : 0;
}

void batch_ids_free(batch_ids *b) {
    if (!b) return;
    key_free(&b->ids);
    free(b);
}

/* A request's key: its "id" as compact JSON, else "line N". NULL: out of memory. */
static char *request_key(json_t *o, long lineno) {
    json_t *id = json_is_object(o) ? json_object_get(o, "id") : NULL;
    if (id) return json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    char buf[32];
    snprintf(buf, sizeof buf, "line %ld", lineno);
    return strdup(buf);
}

/* One non-blank input line. */
typedef struct {
    char *text;
    size_t len;
    long lineno;
} in_line;

typedef struct {
    const batch_parallel *a;
    llmgen_batch *b;
    pthread_mutex_t in_mu, out_mu;
    in_line *lines;            /* every non-blank line of the input, read before anything runs */
    long n_lines, next, seq;   /* lines; the next to hand out; lines handed out (their order) */
    int stop_out;
    json_t **held;             /* --ordered: results waiting for an earlier one, by order */
    long n_held, next_out;
    int out_fd;                /* --resume: the results file, appended to; -1 otherwise */
    key_set done;              /* --resume: keys of the requests it holds */
    batch_summary *sum;
} runner;

typedef struct {
    runner *r;
    llmgen_session *s;
} worker;

/* The next line to run (skipping those --resume finds done), or NULL at the end. */
static in_line *next_line(runner *r, long *seq) {
    in_line *l = NULL;
    pthread_mutex_lock(&r->in_mu);
    while (!l && r->next < r->n_lines && !*r->a->stop) {
        in_line *c = &r->lines[r->next++];
        if (r->out_fd >= 0) { /* --resume: done already? */
            json_t *o = json_loadb(c->text, c->len, 0, NULL);
            char *key = request_key(o, c->lineno);
            int done = key && key_line(&r->done, key);
            free(key);
            json_decref(o);
            if (done) {
                r->sum->skipped++;
                continue;
            }
        }
        l = c;
        *seq = r->seq++;
    }
    pthread_mutex_unlock(&r->in_mu);
    return l;
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

/* Count the result in the summary: ok, or a failure (the earliest line's kept). */
static void count(runner *r, json_t *out, long lineno, int code) {
    batch_summary *m = r->sum;
    m->n++;
    if (!code) {
        m->ok++;
        return;
    }
    m->failed++;
    if (m->first_fail_line && m->first_fail_line < lineno) return;
    const char *why = json_string_value(json_object_get(out, "error"));
    m->first_fail_line = lineno;
    m->first_fail_code = code;
    snprintf(m->first_fail_why, sizeof m->first_fail_why, "%s", why ? why : "failed");
}

/* Write one result now, or hold it until the results before it are out (--ordered). */
static void put_result(runner *r, json_t *out, long seq, long lineno, int code) {
    pthread_mutex_lock(&r->out_mu);
    count(r, out, lineno, code);
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
    char err[ERR_LEN];
    long seq;
    in_line *l;
    while (!r->stop_out && (l = next_line(r, &seq))) {
        int code = 0;
        json_t *out = NULL;
        if (!r->b || !llmgen_batch_join(r->b, w->s, err, sizeof err)) {
            out = r->a->line(r->a->user, w->s, l->text, l->len, l->lineno, &code);
            if (r->b) llmgen_batch_leave(w->s);
        }
        if (out) put_result(r, out, seq, l->lineno, code);
    }
    return NULL;
}

/* Every non-blank line of a->in into r->lines, with a request id that repeats an
 * earlier line's refused (naming both lines). */
static llmgen_status read_lines(runner *r, char *err, size_t errlen) {
    const batch_parallel *a = r->a;
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, n_cap = 0;
    llmgen_status st = LLMGEN_OK;
    batch_ids *ids = batch_ids_new();
    if (!ids) return snprintf(err, errlen, "out of memory"), LLMGEN_E_NOMEM;
    for (;;) {
        errno = 0;
        ssize_t n = getline(&line, &cap, a->in);
        if (n < 0) {
            if (ferror(a->in) && !*a->stop)
                snprintf(err, errlen, "%s: read error: %s", a->name, strerror(errno)), st = LLMGEN_E_IO;
            break;
        }
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if ((size_t)n <= strspn(line, " \t")) continue; /* blank lines are allowed */
        json_t *o = json_loadb(line, (size_t)n, 0, NULL);
        long first = batch_ids_add(ids, o, lineno);
        if (first) {
            char *id = first > 0 ? json_dumps(json_object_get(o, "id"), JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            if (first > 0)
                snprintf(err, errlen, "%s:%ld: the id %.200s is also the id of line %ld: ids must be unique (nothing "
                         "was run)", a->name, lineno, id ? id : "?", first);
            else
                snprintf(err, errlen, "out of memory");
            free(id);
            json_decref(o);
            st = first > 0 ? LLMGEN_E_USAGE : LLMGEN_E_NOMEM;
            break;
        }
        json_decref(o);
        if (r->n_lines == n_cap) {
            n_cap = n_cap ? 2 * n_cap : 64;
            in_line *g = realloc(r->lines, (size_t)n_cap * sizeof *g);
            if (!g) {
                st = LLMGEN_E_NOMEM;
                snprintf(err, errlen, "out of memory");
                break;
            }
            r->lines = g;
        }
        char *copy = malloc((size_t)n + 1);
        if (!copy) {
            st = LLMGEN_E_NOMEM;
            snprintf(err, errlen, "out of memory");
            break;
        }
        memcpy(copy, line, (size_t)n);
        copy[n] = '\0';
        r->lines[r->n_lines++] = (in_line){copy, (size_t)n, lineno};
    }
    free(line);
    batch_ids_free(ids);
    return st;
}

/* --resume: open OUT for appending, lock it for the run (a second writer is refused),
 * cut a torn last line, collect the keys it holds. */
static llmgen_status open_resume(runner *r, const char *path, char *err, size_t errlen) {
    r->out_fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (r->out_fd < 0) return snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno)), LLMGEN_E_IO;
    if (flock(r->out_fd, LOCK_EX | LOCK_NB)) {
        int e = errno;
        if (e == EWOULDBLOCK)
            snprintf(err, errlen, "%s: another run is writing to it (locked): not started", path);
        else
            snprintf(err, errlen, "%s: cannot lock: %s", path, strerror(e));
        return LLMGEN_E_IO;
    }
    struct stat st;
    if (fstat(r->out_fd, &st)) return snprintf(err, errlen, "%s: %s", path, strerror(errno)), LLMGEN_E_IO;
    size_t n = (size_t)st.st_size, got = 0;
    char *buf = malloc(n + 1);
    if (!buf) return snprintf(err, errlen, "%s: out of memory", path), LLMGEN_E_NOMEM;
    while (got < n) {
        ssize_t k = pread(r->out_fd, buf + got, n - got, (off_t)got);
        if (k <= 0) {
            free(buf);
            return snprintf(err, errlen, "%s: read error", path), LLMGEN_E_IO;
        }
        got += (size_t)k;
    }
    size_t whole = n;
    while (whole > 0 && buf[whole - 1] != '\n') whole--;
    if (whole < n && ftruncate(r->out_fd, (off_t)whole)) {
        free(buf);
        return snprintf(err, errlen, "%s: cannot cut its torn last line: %s", path, strerror(errno)), LLMGEN_E_IO;
    }
    llmgen_status rc = LLMGEN_OK;
    for (size_t i = 0; i < whole && !rc;) {
        size_t e = i;
        while (buf[e] != '\n') e++;
        json_t *o = json_loadb(buf + i, e - i, 0, NULL);
        json_t *line = json_is_object(o) ? json_object_get(o, "line") : NULL;
        if (o && (json_object_get(o, "id") || json_is_integer(line))) {
            char *key = request_key(o, json_is_integer(line) ? (long)json_integer_value(line) : 0);
            if (!key || key_add(&r->done, key, 1)) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = LLMGEN_E_NOMEM;
            }
        }
        json_decref(o);
        i = e + 1;
    }
    free(buf);
    return rc;
}

llmgen_status batch_run_lines(const batch_parallel *a, batch_summary *sum, char *err, size_t errlen) {
    runner r = {.a = a, .out_fd = -1, .sum = sum};
    worker ws[LLMGEN_MAX_SEQUENCES];
    pthread_t th[LLMGEN_MAX_SEQUENCES];
    int n = 0, started = 0;
    memset(sum, 0, sizeof *sum);
    pthread_mutex_init(&r.in_mu, NULL);
    pthread_mutex_init(&r.out_mu, NULL);
    llmgen_status rc = read_lines(&r, err, errlen);
    if (!rc && a->n_total) *a->n_total = r.n_lines;
    if (!rc && a->resume) rc = open_resume(&r, a->resume, err, errlen);
    if (rc || *a->stop) goto out;
    if (a->parallel <= 1) { /* one slot, on a->s, in this thread */
        worker one = {&r, a->s};
        work(&one);
        goto out;
    }
    if ((rc = llmgen_batch_new(a->m, a->parallel, a->ctx_len, &r.b, err, errlen))) goto out;
    for (; n < a->parallel; n++) {
        ws[n].r = &r;
        if ((rc = llmgen_session_new(a->m, a->ctx_len, &ws[n].s, err, errlen))) goto out;
    }
    for (; started < n; started++)
        if (pthread_create(&th[started], NULL, work, &ws[started])) break;
    if (!started) {
        snprintf(err, errlen, "cannot start the --parallel threads");
        rc = LLMGEN_E_NOMEM;
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
out:
    for (long i = r.next_out; i < r.n_held; i++) json_decref(r.held[i]); /* unwritten after a write error */
    free(r.held);
    for (int i = 0; i < n; i++) llmgen_session_free(ws[i].s);
    llmgen_batch_free(r.b);
    pthread_mutex_destroy(&r.in_mu);
    pthread_mutex_destroy(&r.out_mu);
    if (r.out_fd >= 0 && close(r.out_fd) && !rc && !r.stop_out) r.stop_out = 1; /* the lock goes with it */
    key_free(&r.done);
    for (long i = 0; i < r.n_lines; i++) free(r.lines[i].text);
    free(r.lines);
    sum->write_failed = r.stop_out;
    if (r.stop_out && a->resume && !rc) {
        snprintf(err, errlen, "%s: write error", a->resume);
        rc = LLMGEN_E_IO;
    }
    return rc;
}
