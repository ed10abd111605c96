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
    batch_line_fn line;
    batch_emit_fn emit;
    void *user;
    volatile sig_atomic_t *stop;      /* set (by a signal): take no more lines */
    const char *resume;               /* --resume OUT.jsonl: skip the requests OUT holds results of,
                                         append the others' results to OUT (not through emit) */
} batch_parallel;

/* Run every line of a->in. 0, or -1 with err when the sessions cannot be set up
 * or the --resume file cannot be read or written (*io set to 1 then).
 * *first_fail: the first nonzero line code, in finishing order; *read_err: errno of
 * a read error (0: none). */
int batch_run_lines(const batch_parallel *a, int *first_fail, int *read_err, int *io, char *err, size_t errlen);

#endif
