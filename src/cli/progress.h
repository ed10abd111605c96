/* progress.h - one updating progress line on stderr for long work (--batch, verify,
 * perplexity, a slow model load), as llama.cpp's tools and pip draw one.
 *
 * Mode: on a terminal, the line is redrawn in place ("\r", erase to the end) at most
 * every 0.1 s and erased when the work ends; when stderr is not a terminal nothing is
 * drawn, unless --progress asks for plain lines (one every 2 s, for logs);
 * --no-progress draws nothing anywhere. */
#ifndef LLMGEN_CLI_PROGRESS_H
#define LLMGEN_CLI_PROGRESS_H

#include <pthread.h>
#include <stdio.h>

enum { PROGRESS_AUTO = 0, PROGRESS_OFF, PROGRESS_PLAIN }; /* what the options asked */

typedef struct {
    FILE *f;
    int mode;        /* 0 none, 1 terminal (redrawn), 2 plain lines */
    double t0, last; /* start, last drawn (seconds) */
    int drawn;       /* a terminal line is on screen */
    /* a model load: a thread draws "loading PATH (N s)" after 2 s, until progress_load_end */
    pthread_t th;
    int th_on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int loading;
    const char *what;
} progress;

/* ask: PROGRESS_AUTO, _OFF or _PLAIN; f: stderr. */
void progress_init(progress *p, FILE *f, int ask);
/* Draw the line (printf-style text) if it is time to; force: draw now (the last update). */
void progress_update(progress *p, int force, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Erase a terminal line (call before printing anything else on stderr, and at the end). */
void progress_clear(progress *p);
/* Seconds since progress_init (or since the end of a model load). */
double progress_elapsed(const progress *p);
/* "1m05s" / "12s" for s seconds, into buf. */
const char *progress_time(double s, char *buf, size_t n);
/* A model load: a line appears only if it takes over 2 s; progress_load_end erases it. */
void progress_load_begin(progress *p, const char *path);
void progress_load_end(progress *p);

#endif
