/* test_batch.c - several sequences per step (llmgen_batch): every request's logits
 * are the same bytes alone and inside batches of 2, 5 and 8 mixed requests (prompts
 * of different lengths, so prefill chunks and decode tokens share steps, and
 * different lengths of generation, so sequences leave while others go on), in fast
 * and exact mode, at 1 and 2 threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "llmgen.h"

/* Which configurations (fast or exact mode, threads) run the real model: fast mode at two
 * threads in the plain build (make unit; check_parallel.py runs it batched from the CLI in
 * both modes). The build under ASan + UBSan (make unit-san, with
 * LLMGEN_SANITIZED) runs it in none: there the tiny quantized model covers the batched,
 * threaded, repacked path in all four configurations, and test_generate.c runs the real
 * model's own shapes under the sanitizers. */
static int real_model_runs(int exact, int threads) {
#ifdef LLMGEN_SANITIZED
    (void)exact, (void)threads;
    return 0;
#else
    return !exact && threads == 2;
#endif
}

#define REAL_MODEL ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
#define QUANT_MODEL "tests/fixtures/tiny-gguf/tiny-gguf.Q6_K.gguf"
#define NREQ 8
#define MAX_STEPS 12

typedef struct {
    llmgen_model *m;
    llmgen_session *s;     /* joined to a batch (by the caller, before any member steps) or alone */
    int32_t prompt[160];
    int n_prompt, steps;
    float *logits;         /* (steps, vocab) the logits each greedy id was picked from */
    int vocab, ctx;
    int ok;
} req;

static void *run_req(void *arg) {
    req *r = arg;
    char err[256];
    llmgen_session *s = r->s;
    const float *lg;
    llmgen_status st = llmgen_prefill(s, r->prompt, r->n_prompt, &lg, err, sizeof err);
    for (int i = 0; !st && i < r->steps; i++) {
        memcpy(r->logits + (size_t)i * r->vocab, lg, (size_t)r->vocab * sizeof(float));
        int best = 0;
        for (int k = 1; k < r->vocab; k++)
            if (lg[k] > lg[best]) best = k;
        if (i + 1 < r->steps) st = llmgen_decode_step(s, best, &lg, err, sizeof err);
    }
    r->ok = st == LLMGEN_OK;
    llmgen_batch_leave(s); /* before the thread stops stepping: the others would wait for it */
    return NULL;
}

static void setup(req *rs, llmgen_model *m, int vocab, int ctx) {
    for (int i = 0; i < NREQ; i++) {
        req *r = &rs[i];
        memset(r, 0, sizeof *r);
        r->m = m;
        r->vocab = vocab;
        r->ctx = ctx;
        r->n_prompt = 3 + 19 * i; /* 3 .. 136: one needs two prefill chunks */
        for (int k = 0; k < r->n_prompt; k++) r->prompt[k] = (int32_t)((k * 7919 + i * 104729 + 11) % (vocab - 2) + 1);
        r->steps = 4 + i % 3 * 4; /* 4, 8, 12: some leave early */
        r->logits = calloc((size_t)MAX_STEPS * vocab, sizeof(float));
        cr_assert_not_null(r->logits);
    }
}

static void check_model(const char *path, int exact, int threads) {
    char err[256];
    llmgen_model_options o = {.n_threads = threads, .exact = exact};
    llmgen_model *m;
    cr_assert_eq(llmgen_model_open(path, &o, &m, err, sizeof err), LLMGEN_OK, "%s: %s", path, err);
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    cr_assert_geq(caps.max_sequences, 8);
    static req alone[NREQ], inb[NREQ];
    int ctx = caps.context_length < 512 ? caps.context_length : 512;
    setup(alone, m, caps.vocab_size, ctx);
    for (int i = 0; i < NREQ; i++) {
        cr_assert_eq(llmgen_session_new(m, ctx, &alone[i].s, err, sizeof err), LLMGEN_OK, "%s", err);
        run_req(&alone[i]);
        cr_assert(alone[i].ok, "%s alone: request %d failed", path, i);
        llmgen_session_free(alone[i].s);
    }
#ifdef LLMGEN_SANITIZED
    static const int sizes[] = {5}; /* a full wave and a partial one; the plain build runs all three */
#else
    static const int sizes[] = {2, 5, 8};
#endif
    for (int si = 0; si < (int)(sizeof sizes / sizeof *sizes); si++) {
        int size = sizes[si];
        llmgen_batch *b;
        cr_assert_eq(llmgen_batch_new(m, size, ctx, &b, err, sizeof err), LLMGEN_OK, "%s", err);
        setup(inb, m, caps.vocab_size, ctx);
        /* the requests in waves of `size` threads, each wave one batch */
        for (int w0 = 0; w0 < NREQ; w0 += size) {
            pthread_t th[NREQ];
            int w1 = w0 + size < NREQ ? w0 + size : NREQ;
            for (int i = w0; i < w1; i++) {
                cr_assert_eq(llmgen_session_new(m, ctx, &inb[i].s, err, sizeof err), LLMGEN_OK, "%s", err);
                cr_assert_eq(llmgen_batch_join(b, inb[i].s, err, sizeof err), LLMGEN_OK, "%s", err);
            }
            for (int i = w0; i < w1; i++) cr_assert_eq(pthread_create(&th[i], NULL, run_req, &inb[i]), 0);
            for (int i = w0; i < w1; i++) {
                pthread_join(th[i], NULL);
                llmgen_session_free(inb[i].s);
            }
        }
        long passes, seq_steps;
        llmgen_batch_stats(b, &passes, &seq_steps);
        cr_expect_gt(seq_steps, passes + passes / 4, "%s batch of %d: %ld sequence steps in %ld passes: hardly batched",
                     path, size, seq_steps, passes);
        for (int i = 0; i < NREQ; i++) {
            cr_assert(inb[i].ok, "%s batch of %d: request %d failed", path, size, i);
            for (int st = 0; st < inb[i].steps; st++)
                cr_expect(!memcmp(inb[i].logits + (size_t)st * caps.vocab_size,
                                  alone[i].logits + (size_t)st * caps.vocab_size, (size_t)caps.vocab_size * 4),
                          "%s exact=%d -t %d batch of %d: request %d step %d logits differ from the request alone",
                          path, exact, threads, size, i, st);
            free(inb[i].logits);
        }
        llmgen_batch_free(b);
    }
    for (int i = 0; i < NREQ; i++) free(alone[i].logits);
    llmgen_model_free(m);
}

Test(batch, same_logits_bytes_alone_and_batched) {
    for (int threads = 1; threads <= 2; threads++)
        for (int exact = 0; exact <= 1; exact++) {
            if (real_model_runs(exact, threads)) check_model(REAL_MODEL, exact, threads);
            check_model(QUANT_MODEL, exact, threads);
        }
}

/* Expert layers: the tokens of a batched pass are grouped by expert, and a request's rows
 * keep their bits whichever experts the others chose (Qwen2-MoE's Q8_0 conversion: routed
 * and shared experts, int8 attention in fast mode). */
Test(batch, experts_same_logits_bytes_alone_and_batched) {
    for (int threads = 1; threads <= 2; threads++)
        for (int exact = 0; exact <= 1; exact++) check_model("tests/fixtures/tiny-qwen2moe-f32/model.q8_0.gguf", exact, threads);
}

/* gpt-oss: sinks, windows and biases, MXFP4 experts read from OpenAI's layout (HF directory) */
Test(batch, gptoss_same_logits_bytes_alone_and_batched) {
    for (int threads = 1; threads <= 2; threads++)
        for (int exact = 0; exact <= 1; exact++) check_model("tests/fixtures/tiny-gptoss-mxfp4", exact, threads);
}

Test(batch, bad_uses) {
    char err[256];
    llmgen_model_options o = {.n_threads = 1};
    llmgen_model *m;
    cr_assert_eq(llmgen_model_open(QUANT_MODEL, &o, &m, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_batch *b;
    cr_expect_eq(llmgen_batch_new(m, 0, 64, &b, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_eq(llmgen_batch_new(m, LLMGEN_MAX_SEQUENCES + 1, 64, &b, err, sizeof err), LLMGEN_E_USAGE);
    cr_assert_eq(llmgen_batch_new(m, 1, 64, &b, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_session *s1, *s2, *big;
    cr_assert_eq(llmgen_session_new(m, 64, &s1, err, sizeof err), LLMGEN_OK);
    cr_assert_eq(llmgen_session_new(m, 64, &s2, err, sizeof err), LLMGEN_OK);
    cr_assert_eq(llmgen_session_new(m, 128, &big, err, sizeof err), LLMGEN_OK);
    cr_expect_eq(llmgen_batch_join(b, big, err, sizeof err), LLMGEN_E_USAGE, "a larger context joined");
    cr_expect_eq(llmgen_batch_join(b, s1, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(llmgen_batch_join(b, s1, err, sizeof err), LLMGEN_E_USAGE, "joined twice");
    cr_expect_eq(llmgen_batch_join(b, s2, err, sizeof err), LLMGEN_E_USAGE, "a full batch took more");
    /* alone in its batch, a member steps at once */
    const float *lg;
    int32_t ids[] = {1, 2, 3};
    cr_expect_eq(llmgen_prefill(s1, ids, 3, &lg, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(llmgen_session_pos(s1), 3);
    llmgen_session_free(s1); /* leaves */
    cr_expect_eq(llmgen_batch_join(b, s2, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_batch_leave(s2);
    llmgen_session_free(s2);
    llmgen_session_free(big);
    llmgen_batch_free(b);
    llmgen_model_free(m);
}

/* A hybrid model: each sequence's Gated DeltaNet states are its own in a batch. */
Test(batch, hybrid_same_logits_bytes_alone_and_batched) {
    for (int threads = 1; threads <= 2; threads++)
        for (int exact = 0; exact <= 1; exact++) check_model("tests/fixtures/tiny-qwen35-gdn-f32", exact, threads);
}

/* LFM2: each sequence's short conv states are its own in a batch. */
Test(batch, short_conv_same_logits_bytes_alone_and_batched) {
    for (int threads = 1; threads <= 2; threads++)
        for (int exact = 0; exact <= 1; exact++)
            check_model("tests/fixtures/tiny-lfm2-f32/model.q8_0.gguf", exact, threads);
}
