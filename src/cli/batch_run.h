/* batch_run.h - --batch with --parallel N (batch_run.c). Part of the CLI. */
#ifndef LLMGEN_BATCH_RUN_H
#define LLMGEN_BATCH_RUN_H

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>

#include "llmgen.h"

/* One non-blank input line (len bytes, NUL-terminated) run on session s: its
 * result object (with "line"), *code its exit code (0: ok). Called from several
 * threads at once, each with its own session. */
typedef json_t *(*batch_line_fn)(void *user, llmgen_session *s, const char *line, size_t len, long lineno,
                                 int *code);
/* Write one result line; nonzero: writing failed, stop. Called under a lock. */
typedef int (*batch_emit_fn)(void *user, json_t *out);

typedef struct {
    llmgen_model *m;
    llmgen_session *s;                /* parallel <= 1: the lines run one after the other on it */
    int ctx_len;                      /* parallel > 1: each session's context (0: the default) */
    int parallel;                     /* requests at once, 1..LLMGEN_MAX_SEQUENCES (0: 1) */
    int ordered;                      /* 1: results in input order; 0: as they finish */
    FILE *in;
    const char *name;                 /* names the input in messages ("stdin", a path) */
    batch_line_fn line;
    batch_emit_fn emit;
    void *user;
    volatile sig_atomic_t *stop;      /* set (by a signal): take no more lines */
    const char *resume;               /* --resume OUT.jsonl: skip the requests OUT holds results of,
                                         append the others' results to OUT (not through emit) */
    volatile long *n_total;           /* if not NULL: set to the number of lines once all are read */
} batch_parallel;

/* What a run did: requests run (ok + failed), skipped (--resume: OUT held them), and
 * the failure of the earliest line (its exit code and message). */
typedef struct {
    long n, ok, failed, skipped;
    long first_fail_line;   /* 0: none failed */
    int first_fail_code;
    char first_fail_why[256];
    int write_failed;       /* a result could not be written (emit said so) */
} batch_summary;

/* Read every line of a->in, then run them. LLMGEN_OK (each line's outcome is in its
 * result and in *sum), or, with nothing run, LLMGEN_E_USAGE (two lines give one "id"),
 * LLMGEN_E_IO (the input cannot be read, or the --resume file cannot be opened, locked,
 * read or written: a second run resuming into the same file is refused), LLMGEN_E_NOMEM
 * or a session's status; err names the line or file. */
llmgen_status batch_run_lines(const batch_parallel *a, batch_summary *sum, char *err, size_t errlen);

/* Request ids seen, to refuse one that repeats (batch_run_lines uses it; so does the
 * fuzz target). */
typedef struct batch_ids batch_ids;
batch_ids *batch_ids_new(void); /* NULL: out of memory; batch_ids_free */
/* The "id" of request (any JSON; none: nothing to check) on lineno: 0 when new (it is
 * kept), the earlier line that gave it, or -1 out of memory. */
long batch_ids_add(batch_ids *b, json_t *request, long lineno);
void batch_ids_free(batch_ids *b);

#endif
