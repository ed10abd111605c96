/* llmgen_bench.c - one benchmark sample of llmgen through its public C API.
 *
 *   build/bench/llmgen_bench MODEL [-t THREADS] [-p 128,512] [-n 128] [-w 16] [-x] [-r 1,2,4,8]
 *
 * -x runs the exact mode (f32 activations, llmgen_model_options.exact) instead of the default.
 * -r K,...: the cost of a speculative pass of K ids (llmgen_decode_rows after a 64-id prompt, then
 * taken back), milliseconds per pass, the median of 31 (what a draft of K - 1 ids costs against a
 * decode step, K = 1).
 *
 * In one process, the way llama-bench measures (so tests/bench/bench.py can put the two side by
 * side): load the model and open a session (timed: "load"), run a short warm-up prefill of -w ids
 * (not reported: it pages the mapped weights in and starts the threads, as llama-bench's first test
 * does), then for each -p size a prefill of that many fixed pseudo-random ids on an empty session,
 * then -n decode steps of fixed pseudo-random ids from an empty session. Each figure is one sample;
 * bench.py repeats the process, interleaved with llama.cpp, and takes medians.
 *
 * Prints one JSON object on stdout: load_s, pp {size: tokens/s}, tg {size: tokens/s}, maxrss_kb,
 * and the capabilities llmgen reports (kernels, weight types). Exit status 1 on any error, with a
 * one-line message on stderr. Timing is CLOCK_MONOTONIC around each API call sequence. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "llmgen.h"

enum { MAX_SIZES = 8, ERRLEN = 512 };

typedef struct {
    const char *model;
    int threads;
    int pp[MAX_SIZES]; /* prefill sizes, tokens */
    int n_pp;
    int tg; /* decode steps */
    int warmup; /* warm-up prefill size, 0 = none */
    int exact;  /* 1: exact mode (-x) */
    int rows[MAX_SIZES]; /* -r: pass widths */
    int n_rows;
} bench_args;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const char *msg, const char *detail) {
    fprintf(stderr, "llmgen_bench: %s%s%s\n", msg, detail ? ": " : "", detail ? detail : "");
    return 1;
}

/* splitmix64: the same ids in every run and on every machine. */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_ids(int32_t *ids, int n, int vocab, uint64_t seed) {
    for (int i = 0; i < n; i++) ids[i] = (int32_t)(next_u64(&seed) % (uint64_t)vocab);
}

static int parse_sizes(const char *s, int *sizes, int *n) {
    *n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 1 << 20 || *n == MAX_SIZES) return -1;
        sizes[(*n)++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return *n ? 0 : -1;
}

static int parse_int(const char *s, int lo, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1 << 20) return -1;
    *out = (int)v;
    return 0;
}

static int parse_args(int argc, char **argv, bench_args *a) {
    *a = (bench_args){.threads = 2, .pp = {128, 512}, .n_pp = 2, .tg = 128, .warmup = 16};
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(o, "-t") && v) bad = parse_int(v, 1, &a->threads), i++;
        else if (!strcmp(o, "-p") && v) bad = parse_sizes(v, a->pp, &a->n_pp), i++;
        else if (!strcmp(o, "-r") && v) bad = parse_sizes(v, a->rows, &a->n_rows), i++;
        else if (!strcmp(o, "-n") && v) bad = parse_int(v, 0, &a->tg), i++;
        else if (!strcmp(o, "-w") && v) bad = parse_int(v, 0, &a->warmup), i++;
        else if (!strcmp(o, "-x")) a->exact = 1;
        else if (o[0] != '-' && !a->model) a->model = o;
        else bad = 1;
        if (bad) return -1;
    }
    return a->model ? 0 : -1;
}

/* Prefill n ids on an empty session; returns seconds or -1. */
static double time_prefill(llmgen_session *s, const int32_t *ids, int n, char *err) {
    const float *logits;
    llmgen_session_reset(s);
    double t = now();
    if (llmgen_prefill(s, ids, n, &logits, err, ERRLEN) != LLMGEN_OK) return -1;
    return now() - t;
}

/* n decode steps from an empty session; returns seconds or -1. */
static double time_decode(llmgen_session *s, const int32_t *ids, int n, char *err) {
    const float *logits;
    llmgen_session_reset(s);
    double t = now();
    for (int i = 0; i < n; i++)
        if (llmgen_decode_step(s, ids[i], &logits, err, ERRLEN) != LLMGEN_OK) return -1;
    return now() - t;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A pass of k ids after a 64-id prompt, taken back: the median of 31, in seconds; -1 on error. */
static double time_rows(llmgen_session *s, const int32_t *ids, int k, char *err) {
    enum { PROMPT = 64, REPS = 31 };
    const float *rows;
    double t[REPS];
    llmgen_session_reset(s);
    if (llmgen_prefill(s, ids, PROMPT, &rows, err, ERRLEN) != LLMGEN_OK) return -1;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        if (llmgen_decode_rows(s, ids + PROMPT, k, &rows, err, ERRLEN) != LLMGEN_OK) return -1;
        t[r] = now() - t0;
        llmgen_session_rewind(s, PROMPT);
    }
    qsort(t, REPS, sizeof *t, cmp_double);
    return t[REPS / 2];
}

static void print_json(const bench_args *a, const llmgen_capabilities *cap, double load_s, const double *pp_s,
                       double tg_s, const double *rows_s) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"engine\": \"llmgen\", \"threads\": %d, \"kernels\": \"%s\", \"weight_types\": \"%s\", "
           "\"format\": \"%s\", \"exact\": %d, \"vocab_size\": %d, \"load_s\": %.6f, \"pp\": {",
           a->threads, cap->kernels, cap->weight_types, cap->format, a->exact, cap->vocab_size, load_s);
    for (int i = 0; i < a->n_pp; i++)
        printf("%s\"%d\": %.4f", i ? ", " : "", a->pp[i], a->pp[i] / pp_s[i]);
    printf("}, \"tg\": {");
    if (a->tg) printf("\"%d\": %.4f", a->tg, a->tg / tg_s);
    printf("}, \"rows_ms\": {");
    for (int i = 0; i < a->n_rows; i++) printf("%s\"%d\": %.4f", i ? ", " : "", a->rows[i], 1e3 * rows_s[i]);
    printf("}, \"maxrss_kb\": %ld}\n", ru.ru_maxrss);
}

int main(int argc, char **argv) {
    bench_args a;
    char err[ERRLEN] = "";
    if (parse_args(argc, argv, &a))
        return die("usage: llmgen_bench MODEL [-t THREADS] [-p 128,512] [-n 128] [-w 16] [-x] [-r 1,2,4,8]", NULL);

    int ctx = a.tg > a.warmup ? a.tg : a.warmup;
    for (int i = 0; i < a.n_rows; i++) ctx = 64 + a.rows[i] > ctx ? 64 + a.rows[i] : ctx;
    for (int i = 0; i < a.n_pp; i++) ctx = a.pp[i] > ctx ? a.pp[i] : ctx;

    llmgen_model_options opt = {.n_threads = a.threads, .kernels = NULL, .no_tokenizer = 1, .exact = a.exact};
    llmgen_model *m;
    llmgen_session *s;
    double t0 = now();
    if (llmgen_model_open(a.model, &opt, &m, err, sizeof err) != LLMGEN_OK) return die(err, NULL);
    if (llmgen_session_new(m, ctx, &s, err, sizeof err) != LLMGEN_OK) return die(err, NULL);
    double load_s = now() - t0;

    llmgen_capabilities cap;
    llmgen_model_capabilities(m, &cap);
    int32_t *ids = malloc(sizeof *ids * (size_t)ctx);
    if (!ids) return die("out of memory", NULL);

    double pp_s[MAX_SIZES], tg_s = 0, rows_s[MAX_SIZES];
    fill_ids(ids, ctx, cap.vocab_size, 1);
    if (a.warmup && time_prefill(s, ids, a.warmup, err) < 0) return die(err, NULL);
    for (int i = 0; i < a.n_pp; i++) {
        fill_ids(ids, a.pp[i], cap.vocab_size, 1000 + (uint64_t)i);
        if ((pp_s[i] = time_prefill(s, ids, a.pp[i], err)) < 0) return die(err, NULL);
    }
    if (a.tg) {
        fill_ids(ids, a.tg, cap.vocab_size, 2000);
        if ((tg_s = time_decode(s, ids, a.tg, err)) < 0) return die(err, NULL);
    }
    for (int i = 0; i < a.n_rows; i++) {
        fill_ids(ids, 64 + a.rows[i], cap.vocab_size, 3000 + (uint64_t)i);
        if ((rows_s[i] = time_rows(s, ids, a.rows[i], err)) < 0) return die(err, NULL);
    }
    print_json(&a, &cap, load_s, pp_s, tg_s, rows_s);
    free(ids);
    llmgen_session_free(s);
    llmgen_model_free(m);
    return 0;
}
