/* llmgen_bench.c - one benchmark sample of llmgen through its public C API.
 *
 *   build/bench/llmgen_bench MODEL [-t THREADS] [-p 128,512] [-n 128] [-w 16] [-x]
 *
 * -x runs the exact mode (f32 activations, llmgen_model_options.exact) instead of the default.
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

static int parse_sizes(const char *s, bench_args *a) {
    a->n_pp = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v <= 0 || v > 1 << 20 || a->n_pp == MAX_SIZES) return -1;
        a->pp[a->n_pp++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return a->n_pp ? 0 : -1;
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
        else if (!strcmp(o, "-p") && v) bad = parse_sizes(v, a), i++;
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

static void print_json(const bench_args *a, const llmgen_capabilities *cap, double load_s, const double *pp_s,
                       double tg_s) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"engine\": \"llmgen\", \"threads\": %d, \"kernels\": \"%s\", \"weight_types\": \"%s\", "
           "\"format\": \"%s\", \"exact\": %d, \"vocab_size\": %d, \"load_s\": %.6f, \"pp\": {",
           a->threads, cap->kernels, cap->weight_types, cap->format, a->exact, cap->vocab_size, load_s);
    for (int i = 0; i < a->n_pp; i++)
        printf("%s\"%d\": %.4f", i ? ", " : "", a->pp[i], a->pp[i] / pp_s[i]);
    printf("}, \"tg\": {");
    if (a->tg) printf("\"%d\": %.4f", a->tg, a->tg / tg_s);
    printf("}, \"maxrss_kb\": %ld}\n", ru.ru_maxrss);
}

int main(int argc, char **argv) {
    bench_args a;
    char err[ERRLEN] = "";
    if (parse_args(argc, argv, &a))
        return die("usage: llmgen_bench MODEL [-t THREADS] [-p 128,512] [-n 128] [-w 16] [-x]", NULL);

    int ctx = a.tg > a.warmup ? a.tg : a.warmup;
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

    double pp_s[MAX_SIZES], tg_s = 0;
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
    print_json(&a, &cap, load_s, pp_s, tg_s);
    free(ids);
    llmgen_session_free(s);
    llmgen_model_free(m);
    return 0;
}
