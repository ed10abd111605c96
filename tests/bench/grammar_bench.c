/* grammar_bench.c - cost of structured output without the model's forward pass: the compile
 * time of a grammar / JSON Schema against a model's vocabulary, and the mask time per token
 * while a given text (a valid output) is fed through it token by token.
 *
 * usage: grammar_bench MODEL (--json-schema TEXT | --grammar TEXT) OUTPUT_TEXT [REPEAT [steps]]
 * prints one JSON line: vocab, compile_ms, tokens, mask_us_mean, mask_us_max, mask_us_first
 * (the first mask of each position fills its cache), fit_us_mean (the closing rule's check of
 * the picked token: what it costs every step), keep_us_mean (its filter of every allowed token:
 * what a step where the budget binds adds), repeated REPEAT times (fresh matcher); "steps" also
 * prints each step's mask time and token on stderr. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/constrain.h"
#include "llmgen.h"
#include "base/util.h"

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: grammar_bench MODEL (--json-schema TEXT | --grammar TEXT) OUTPUT_TEXT [REPEAT]\n");
        return 2;
    }
    char err[512];
    llmgen_model *m;
    llmgen_model_options mo = {.tokenizer_only = 1, .n_threads = 1};
    if (llmgen_model_open(argv[1], &mo, &m, err, sizeof err)) {
        fprintf(stderr, "grammar_bench: %s\n", err);
        return 1;
    }
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    if (!strcmp(argv[2], "--json-schema")) p.json_schema = argv[3];
    else p.grammar = argv[3];
    int32_t *ids;
    size_t n;
    if (llmgen_tokenize(m, argv[4], strlen(argv[4]), 0, 0, &ids, &n, err, sizeof err)) {
        fprintf(stderr, "grammar_bench: %s\n", err);
        return 1;
    }
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    int V = caps.vocab_size, repeat = argc > 5 ? atoi(argv[5]) : 1;
    float *logits = calloc((size_t)V, sizeof *logits);
    for (int r = 0; r < repeat; r++) {
        constrain *c;
        double t0 = now_seconds();
        llmgen_status st = constrain_new(m, &p, &c, err, sizeof err);
        double compile = now_seconds() - t0;
        if (st) {
            fprintf(stderr, "grammar_bench: %s\n", err);
            return 1;
        }
        double sum = 0, mx = 0, first = 0, fit = 0, keep = 0;
        for (size_t i = 0; i < n; i++) {
            double t = now_seconds();
            if (!constrain_mask(c, logits, V, &st, err, sizeof err)) {
                fprintf(stderr, "grammar_bench: step %zu: %s\n", i, err);
                return 1;
            }
            double dt = now_seconds() - t;
            if (argc > 6) {
                size_t bl;
                const char *b = llmgen_token_bytes(m, ids[i], &bl);
                fprintf(stderr, "%4zu %9.1f us  %.*s\n", i, dt * 1e6, (int)bl, b);
            }
            if (!constrain_allows(c, ids[i])) {
                fprintf(stderr, "grammar_bench: token %zu (id %d) of the output is not allowed\n", i, ids[i]);
                return 1;
            }
            t = now_seconds();
            int fits = constrain_fits(c, ids[i], INT32_MAX);
            fit += now_seconds() - t;
            t = now_seconds();
            int kept = constrain_keep_within(c, INT32_MAX); /* every id fits: the mask stays */
            keep += now_seconds() - t;
            if (!fits || !kept || constrain_accept(c, ids[i])) {
                fprintf(stderr, "grammar_bench: token %zu (id %d): the closing rule's check failed\n", i, ids[i]);
                return 1;
            }
            sum += dt;
            if (dt > mx) mx = dt;
            if (!i) first = dt;
        }
        printf("{\"vocab\": %d, \"compile_ms\": %.3f, \"tokens\": %zu, \"mask_us_mean\": %.1f, \"mask_us_max\": %.1f, "
               "\"mask_us_first\": %.1f, \"fit_us_mean\": %.1f, \"keep_us_mean\": %.1f}\n",
               V, compile * 1e3, n, sum / (double)n * 1e6, mx * 1e6, first * 1e6, fit / (double)n * 1e6,
               keep / (double)n * 1e6);
        constrain_free(c);
    }
    free(logits);
    llmgen_free(ids);
    llmgen_model_free(m);
    return 0;
}
