/* pass_cost.c - what a pass of n ids costs against a decode step (llmgen_decode_rows against
 * llmgen_decode_step), the figure speculation's draft length follows (src/run/draft.c).
 *
 * Usage: build/bench/pass_cost MODEL [THREADS]   (make build/bench/pass_cost)
 *
 * After a 100-id prefill, each size n runs 15 times (a pass, then a rewind to 100) and the
 * best time is printed, with its ratio to the one-id step and the cost of each id past the
 * first in steps. Three rounds; the last is printed. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "llmgen.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: pass_cost MODEL [THREADS]\n");
        return 1;
    }
    char err[256];
    llmgen_model_options o = {.n_threads = argc > 2 ? atoi(argv[2]) : 0};
    llmgen_model *m;
    llmgen_session *s;
    if (llmgen_model_open(argv[1], &o, &m, err, sizeof err) || llmgen_session_new(m, 1024, &s, err, sizeof err)) {
        fprintf(stderr, "pass_cost: %s\n", err);
        return 1;
    }
    int32_t ids[110];
    for (int i = 0; i < 110; i++) ids[i] = 100 + (i * 7919) % 30000;
    const float *lg;
    if (llmgen_prefill(s, ids, 100, &lg, err, sizeof err)) {
        fprintf(stderr, "pass_cost: %s\n", err);
        return 1;
    }
    static const int sizes[] = {1, 2, 3, 4, 5, 6, 8, 9};
    double best[8];
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < 8; k++) {
            best[k] = 1e9;
            for (int it = 0; it < 15; it++) {
                double t = now();
                llmgen_status st = sizes[k] == 1 ? llmgen_decode_step(s, ids[100], &lg, err, sizeof err)
                                                 : llmgen_decode_rows(s, ids + 100, sizes[k], &lg, err, sizeof err);
                t = now() - t;
                if (st) {
                    fprintf(stderr, "pass_cost: %s\n", err);
                    return 1;
                }
                if (t < best[k]) best[k] = t;
                llmgen_session_rewind(s, 100);
            }
        }
    printf("ids  ms      steps  per extra id (steps)\n");
    for (int k = 0; k < 8; k++)
        printf("%-4d %-7.2f %-6.2f %.2f\n", sizes[k], best[k] * 1e3, best[k] / best[0],
               sizes[k] > 1 ? (best[k] / best[0] - 1) / (sizes[k] - 1) : 0.0);
    llmgen_session_free(s);
    llmgen_model_free(m);
    return 0;
}
