/* progress.c - see progress.h. */
#include "progress.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void progress_init(progress *p, FILE *f, int ask) {
    memset(p, 0, sizeof *p);
    p->f = f;
    p->mode = ask == PROGRESS_OFF ? 0 : ask == PROGRESS_PLAIN ? 2 : isatty(fileno(f)) ? 1 : 0;
    p->t0 = now();
    p->last = -1e9;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
}

static void vdraw(progress *p, const char *fmt, va_list ap) {
    char line[256];
    vsnprintf(line, sizeof line, fmt, ap);
    if (p->mode == 1) {
        fprintf(p->f, "\r\033[Kllmgen: %s", line);
        p->drawn = 1;
    } else {
        fprintf(p->f, "llmgen: %s\n", line);
    }
    fflush(p->f);
}

void progress_update(progress *p, int force, const char *fmt, ...) {
    if (!p->mode) return;
    double t = now();
    if (!force && t - p->last < (p->mode == 1 ? 0.1 : 2.0)) return;
    p->last = t;
    va_list ap;
    va_start(ap, fmt);
    vdraw(p, fmt, ap);
    va_end(ap);
}

void progress_clear(progress *p) {
    if (p->mode == 1 && p->drawn) {
        fputs("\r\033[K", p->f);
        fflush(p->f);
        p->drawn = 0;
    }
}

double progress_elapsed(const progress *p) { return now() - p->t0; }

const char *progress_time(double s, char *buf, size_t n) {
    long v = s > 0 ? (long)(s + 0.5) : 0;
    if (v >= 3600) snprintf(buf, n, "%ldh%02ldm", v / 3600, v / 60 % 60);
    else if (v >= 60) snprintf(buf, n, "%ldm%02lds", v / 60, v % 60);
    else snprintf(buf, n, "%lds", v);
    return buf;
}

static void *load_thread(void *arg) {
    progress *p = arg;
    pthread_mutex_lock(&p->mu);
    for (int shown = 0; p->loading;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += shown ? 1 : 2;
        int rc = 0;
        while (p->loading && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&p->cv, &p->mu, &until);
        if (!p->loading) break;
        char t[32];
        progress_update(p, 1, "loading %s (%s)", p->what, progress_time(now() - p->t0, t, sizeof t));
        shown = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void progress_load_begin(progress *p, const char *path) {
    if (!p->mode) return;
    p->what = path;
    p->loading = 1;
    p->t0 = now();
    p->th_on = !pthread_create(&p->th, NULL, load_thread, p);
}

void progress_load_end(progress *p) {
    if (!p->th_on) return;
    pthread_mutex_lock(&p->mu);
    p->loading = 0;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    p->th_on = 0;
    progress_clear(p);
    p->t0 = now();
    p->last = -1e9;
}
