/* peer_run.c - llama.cpp's counterpart of `llmgen -m F --prompt-ids ... -n N --ids`, for make bench.
 *
 *   build/bench/peer_run -m MODEL --prompt-ids 1,2,3 [-n N] [-t THREADS]
 *
 * Linked against the benchmark peer's static libraries (.cache/peer, built by `make peer`), never
 * into llmgen. llama.cpp's own command-line programs take text and tokenize it, which the
 * tokenizer-less benchmark GGUFs (tokenizer.ggml.model = "none") cannot do, so this program feeds
 * token ids through llama.h, the way llmgen's CLI does with --prompt-ids: load the model, create a
 * context (n_ctx = prompt + N), prefill the prompt in one batch, then N - 1 greedy decode steps.
 * bench.py times the whole process from the outside (time to first token of a cold process with
 * -n 1) and reads the inner timings and the greedy ids (to compare them with llmgen's).
 *
 * Prints one JSON object on stdout: load_s (model load + context creation), prefill_s, decode_s,
 * ids (the N generated ids). llama.cpp's log goes to stderr only when PEER_VERBOSE is set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

enum { MAX_IDS = 8192 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)text, (void)user;
}

static int parse_ids(const char *s, llama_token *ids, int *n) {
    *n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || *n == MAX_IDS || (*end && *end != ',')) return -1;
        ids[(*n)++] = (llama_token)v;
        s = *end ? end + 1 : end;
    }
    return *n ? 0 : -1;
}

static llama_token argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int main(int argc, char **argv) {
    static llama_token prompt[MAX_IDS];
    const char *path = NULL;
    int n_prompt = 0, n_gen = 1, threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) path = argv[i + 1];
        else if (!strcmp(argv[i], "-n")) n_gen = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-t")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--prompt-ids")) {
            if (parse_ids(argv[i + 1], prompt, &n_prompt)) {
                fprintf(stderr, "peer_run: --prompt-ids %s: expected comma-separated token ids\n", argv[i + 1]);
                return 2;
            }
        } else {
            fprintf(stderr, "peer_run: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!path || !n_prompt || n_gen < 1 || threads < 1) {
        fprintf(stderr, "usage: peer_run -m MODEL --prompt-ids 1,2,3 [-n N] [-t THREADS]\n");
        return 2;
    }
    if (!getenv("PEER_VERBOSE")) llama_log_set(quiet_log, NULL);

    double t0 = now();
    ggml_backend_load_all();
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "peer_run: llama.cpp could not load %s\n", path);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_prompt + n_gen);
    cp.n_batch = (uint32_t)n_prompt;
    cp.n_threads = cp.n_threads_batch = threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "peer_run: llama.cpp could not create a context for %s\n", path);
        return 1;
    }
    double load_s = now() - t0;
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] >= n_vocab) {
            fprintf(stderr, "peer_run: prompt id %d outside the vocabulary of %d\n", prompt[i], n_vocab);
            return 2;
        }

    llama_token *out = malloc(sizeof *out * (size_t)n_gen);
    if (!out) return 1;
    double t1 = now();
    if (llama_decode(ctx, llama_batch_get_one(prompt, n_prompt))) {
        fprintf(stderr, "peer_run: prefill failed\n");
        return 1;
    }
    out[0] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    double prefill_s = now() - t1, t2 = now();
    for (int i = 1; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&out[i - 1], 1))) {
            fprintf(stderr, "peer_run: decode step %d failed\n", i);
            return 1;
        }
        out[i] = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
    }
    double decode_s = now() - t2;

    printf("{\"engine\": \"llama.cpp\", \"load_s\": %.6f, \"prefill_s\": %.6f, \"decode_s\": %.6f, \"ids\": [",
           load_s, prefill_s, decode_s);
    for (int i = 0; i < n_gen; i++) printf("%s%d", i ? ", " : "", out[i]);
    printf("]}\n");
    free(out);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
