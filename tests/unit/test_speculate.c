/* test_speculate.c - the contract speculative decoding and teacher-forced verify stand on,
 * and the generation loop that uses it.
 *
 * Contract (llmgen_decode_rows, llmgen.h): the logits of a position are the same bytes
 * from a one-token decode step, from a prefill chunk of any width and offset, and as a
 * row of a pass of drafts, after any number of rejected drafts were rewound; in fast
 * and exact mode, at 1 and 2 threads, for every family: a plain cache, sliding windows
 * and ring buffers that wrap (Gemma 3, Mistral), q/k norms (Qwen3), MLX 4-bit weights
 * (fast mode's repacked int8 route), a K-quant GGUF, LongRoPE whose factors switch at
 * the original context inside a pass. The one exception, checked as such: a LongRoPE
 * prefill that crosses the original context takes the long factors for the whole call,
 * as transformers does per forward call, so its rows are not those of single steps (and
 * llmgen_decode_rows cuts its passes there).
 *
 * Generation (llmgen_generate with drafts): ids, logits bytes (on_logits), log-probs
 * and text equal a run without drafts, with drafts rejected at the first, a middle and
 * the last position, accepted whole, from prompt lookup and from a draft model, and with
 * a context that fills up inside a draft. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/draft.h"
#include "llmgen.h"

#define REAL_MODEL ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"

static char err[512];

/* The real model in three of the four configurations; its tests are left out of the build
 * under the sanitizers (make unit-san), where the tiny fixtures below cover the same paths
 * and test_generate.c runs the real model's shapes. */
#ifndef LLMGEN_SANITIZED
static int real_model_runs(int exact, int threads) { return !exact || threads == 2; }
#endif

static llmgen_model *open_model(const char *path, int exact, int threads, int *V) {
    llmgen_model_options o = {.n_threads = threads, .exact = exact, .no_tokenizer = 1};
    llmgen_model *m;
    cr_assert_eq(llmgen_model_open(path, &o, &m, err, sizeof err), LLMGEN_OK, "%s: %s", path, err);
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    *V = caps.vocab_size;
    return m;
}

/* Ids that look like nothing in particular: no model repeats them by chance. */
static void fill_ids(int32_t *x, int n, int V, int seed) {
    uint32_t h = 2166136261u ^ (uint32_t)seed;
    for (int i = 0; i < n; i++) {
        h = h * 1103515245u + 12345u;
        x[i] = (int32_t)((h >> 8) % (uint32_t)V);
    }
}

static void expect_rows(const char *what, const float *got, const float *want, int n, int V, int pos) {
    for (int t = 0; t < n; t++) {
        if (!memcmp(got + (size_t)t * V, want + (size_t)t * V, (size_t)V * sizeof(float))) continue;
        float worst = 0;
        for (int v = 0; v < V; v++) worst = fmaxf(worst, fabsf(got[(size_t)t * V + v] - want[(size_t)t * V + v]));
        cr_assert_fail("%s: position %d differs from its decode step (max |diff| %g)", what, pos + t, worst);
    }
}

typedef struct {
    float *rows;
    int V, first;
} rows_copy;

static void copy_row(void *user, int i, const float *lg, int V) {
    rows_copy *k = user;
    memcpy(k->rows + (size_t)(k->first + i) * V, lg, (size_t)V * sizeof *lg);
}

/* The contract for one model and configuration over n positions. */
static void check_contract(const char *path, int exact, int threads, int n, int longrope) {
    int V;
    llmgen_model *m = open_model(path, exact, threads, &V);
    llmgen_session *s;
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    int ctx = n + 64 < caps.context_length ? n + 64 : caps.context_length;
    cr_assert_eq(llmgen_session_new(m, ctx, &s, err, sizeof err), LLMGEN_OK, "%s", err);
    int32_t *x = malloc((size_t)n * sizeof *x), junk[128];
    float *ref = malloc((size_t)n * V * sizeof(float)), *got = malloc((size_t)n * V * sizeof(float));
    cr_assert(x && ref && got);
    fill_ids(x, n, V, n);
    fill_ids(junk, 128, V, 7);
    char what[300];
    snprintf(what, sizeof what, "%s (%s, %d threads)", path, exact ? "exact" : "fast", threads);

    /* one decode step per position */
    const float *lg;
    cr_assert_eq(llmgen_prefill(s, x, 1, &lg, err, sizeof err), LLMGEN_OK, "%s", err);
    memcpy(ref, lg, (size_t)V * sizeof(float));
    for (int i = 1; i < n; i++) {
        cr_assert_eq(llmgen_decode_step(s, x[i], &lg, err, sizeof err), LLMGEN_OK, "%s", err);
        memcpy(ref + (size_t)i * V, lg, (size_t)V * sizeof(float));
    }

    /* prefill chunks: 128-token chunks after offsets 1 and 37 */
    int offsets[] = {1, 37};
    for (int o = 0; o < 2 && !longrope; o++) {
        llmgen_session_reset(s);
        rows_copy k = {got, V, offsets[o]};
        cr_assert_eq(llmgen_prefill(s, x, offsets[o], &lg, err, sizeof err), LLMGEN_OK, "%s", err);
        cr_assert_eq(llmgen_prefill_rows(s, x + offsets[o], n - offsets[o], 0, copy_row, &k, NULL, err, sizeof err),
                     LLMGEN_OK, "%s", err);
        char w[400];
        snprintf(w, sizeof w, "%s, prefill chunks after %d", what, offsets[o]);
        expect_rows(w, got + (size_t)offsets[o] * V, ref + (size_t)offsets[o] * V, n - offsets[o], V, offsets[o]);
    }
    if (longrope) { /* the exception: one prefill crossing the original context is not its steps */
        llmgen_session_reset(s);
        rows_copy k = {got, V, 0};
        cr_assert_eq(llmgen_prefill_rows(s, x, n, 0, copy_row, &k, NULL, err, sizeof err), LLMGEN_OK, "%s", err);
        cr_expect_neq(memcmp(got, ref, (size_t)8 * V * sizeof(float)), 0, "%s: a LongRoPE prefill equals its steps",
                      what);
    }

    /* passes of drafts of many widths, each followed by rejected junk that is rewound */
    static const int widths[] = {1, 2, 5, 16, 17, 3, 64, 128, 7, 127, 33, 4};
    static const int junks[] = {0, 3, 1, 0, 10, 40, 2, 0, 1, 0, 5, 90};
    llmgen_session_reset(s);
    cr_assert_eq(llmgen_prefill(s, x, 1, &lg, err, sizeof err), LLMGEN_OK, "%s", err);
    int32_t pass[128];
    for (int pos = 1, k = 0; pos < n; k++) {
        int w = widths[k % 12], j = junks[k % 12];
        if (w > n - pos) w = n - pos;
        if (j > 128 - w) j = 128 - w;
        if (j > ctx - pos - w) j = ctx - pos - w;
        memcpy(pass, x + pos, (size_t)w * sizeof *pass);
        memcpy(pass + w, junk, (size_t)j * sizeof *pass);
        const float *rows;
        cr_assert_eq(llmgen_decode_rows(s, pass, w + j, &rows, err, sizeof err), LLMGEN_OK, "%s", err);
        char wh[400];
        snprintf(wh, sizeof wh, "%s, a pass of %d drafts (+%d rejected)", what, w, j);
        expect_rows(wh, rows, ref + (size_t)pos * V, w, V, pos);
        pos += w;
        llmgen_session_rewind(s, pos);
        cr_assert_eq(llmgen_session_pos(s), pos, "%s: rewind to %d gave %d", what, pos, llmgen_session_pos(s));
    }
    free(x);
    free(ref);
    free(got);
    llmgen_session_free(s);
    llmgen_model_free(m);
}

static void contract_all(const char *path, int n, int longrope, int fast_differs) {
    for (int exact = 0; exact < 2; exact++)
        for (int threads = 1; threads <= 2; threads++)
            if (fast_differs || exact) check_contract(path, exact, threads, n, longrope);
}

#ifndef LLMGEN_SANITIZED
Test(contract, real_model) {
    for (int exact = 0; exact < 2; exact++)
        for (int threads = 1; threads <= 2; threads++)
            if (real_model_runs(exact, threads)) check_contract(REAL_MODEL, exact, threads, 100, 0);
}
#endif

/* f32 checkpoints have no fast route (fast mode is exact mode for them): one mode each */
Test(contract, ring_gemma3) { contract_all("tests/fixtures/tiny-gemma3-ring-f32", 460, 0, 0); }
Test(contract, ring_mistral) { contract_all("tests/fixtures/tiny-mistral-ring-f32", 460, 0, 0); }
Test(contract, qwen3) { contract_all("tests/fixtures/tiny-qwen3-gqa-tied-f32", 180, 0, 0); }
Test(contract, mlx_qwen3_q4) { contract_all("tests/fixtures/tiny-mlx-qwen3-tied-q4g32", 180, 0, 1); }
Test(contract, mlx_gemma3_q4_window) { contract_all("tests/fixtures/tiny-mlx-gemma3-q4g64", 180, 0, 1); }
Test(contract, mlx_mha_q8) { contract_all("tests/fixtures/tiny-mlx-mha-q8g32", 180, 0, 1); }
Test(contract, gguf_q6_k) { contract_all("tests/fixtures/tiny-gguf/tiny-gguf.Q6_K.gguf", 180, 0, 1); }
Test(contract, experts_qwen3moe_q8) { contract_all("tests/fixtures/tiny-qwen3moe-f32/model.q8_0.gguf", 180, 0, 1); }
Test(contract, experts_qwen3moe_q4_0) { contract_all("tests/fixtures/tiny-qwen3moe-f32/quantized.Q4_0.gguf", 120, 0, 1); }
Test(contract, experts_olmoe) { contract_all("tests/fixtures/tiny-olmoe-f32", 120, 0, 0); }
/* gpt-oss: sinks in every softmax, even layers in a ring of the window (8) that 400 positions wrap, biases,
 * MXFP4 experts (int8 activations in fast mode) */
Test(contract, experts_gptoss_mxfp4) { contract_all("tests/fixtures/tiny-gptoss-mxfp4/model.mxfp4.gguf", 400, 0, 1); }
Test(contract, experts_gptoss_f32) { contract_all("tests/fixtures/tiny-gptoss-f32", 400, 0, 0); }
Test(contract, longrope_cut) { contract_all("tests/fixtures/tiny-phi3-longrope-f32", 60, 1, 0); }
Test(contract, hybrid_qwen35) { contract_all("tests/fixtures/tiny-qwen35-gdn-f32", 300, 0, 1); }
Test(contract, short_conv_lfm2_q8) { contract_all("tests/fixtures/tiny-lfm2-f32/model.q8_0.gguf", 300, 0, 1); }
Test(contract, experts_lfm2moe_q8) { contract_all("tests/fixtures/tiny-lfm2moe-f32/model.q8_0.gguf", 180, 0, 1); }

/* ---- generation with drafts ------------------------------------------------------------ */

typedef struct {
    float *steps; /* (cap, V) the logits of each step */
    int V, n, cap;
} logits_log;

static int keep_logits(void *user, const float *lg, int V) {
    logits_log *k = user;
    cr_assert(k->n < k->cap);
    memcpy(k->steps + (size_t)k->n++ * V, lg, (size_t)V * sizeof *lg);
    return 0;
}

/* Drafts of the true continuation (a run without drafts), with one id wrong at `wrong`
 * (0: the first, -1: none, -2: the middle, -3: the last of each draft). */
typedef struct {
    const int32_t *truth;
    int n_truth, n_prompt, V, wrong, passes;
} oracle;

static int oracle_draft(void *user, const int32_t *ids, int n, int32_t *draft, int max) {
    oracle *o = user;
    int done = n - o->n_prompt, k = 0;
    cr_assert(done >= 1 && ids[n - 1] == o->truth[done - 1], "the draft source sees the text so far");
    while (k < max && done + k < o->n_truth) draft[k] = o->truth[done + k], k++;
    if (!k) return 0;
    int w = o->wrong == -2 ? k / 2 : o->wrong == -3 ? k - 1 : o->wrong;
    if (w >= 0 && w < k) draft[w] = (draft[w] + 1) % o->V;
    o->passes++;
    return k;
}

typedef struct {
    llmgen_result r;
    logits_log lg;
    int pos;
} run_out;

static void run(llmgen_session *s, const int32_t *prompt, int n, llmgen_generate_params *p, int V, run_out *o) {
    o->lg = (logits_log){.V = V, .cap = 512, .steps = malloc((size_t)512 * V * sizeof(float))};
    p->on_logits = keep_logits;
    p->user = &o->lg;
    cr_assert_eq(llmgen_generate(s, prompt, n, p, &o->r, err, sizeof err), LLMGEN_OK, "%s", err);
    o->pos = llmgen_session_pos(s);
}

static void run_free(run_out *o) {
    llmgen_result_free(&o->r);
    free(o->lg.steps);
}

static void expect_same(const char *what, const run_out *a, const run_out *b) {
    cr_assert_eq(a->r.n_ids, b->r.n_ids, "%s: %d ids, without drafts %d", what, b->r.n_ids, a->r.n_ids);
    cr_assert_eq(memcmp(a->r.ids, b->r.ids, (size_t)a->r.n_ids * sizeof(int32_t)), 0, "%s: other ids", what);
    cr_assert_eq(a->r.stop_reason, b->r.stop_reason, "%s: stop reason", what);
    cr_assert_eq(a->lg.n, b->lg.n, "%s: logits rows", what);
    cr_assert_eq(memcmp(a->lg.steps, b->lg.steps, (size_t)a->lg.n * a->lg.V * sizeof(float)), 0,
                 "%s: logits bytes differ", what);
    size_t w = (size_t)(1 + a->r.top_logprobs) * sizeof(llmgen_logprob);
    cr_assert_eq(memcmp(a->r.logprobs, b->r.logprobs, (size_t)a->r.n_ids * w), 0, "%s: log-probabilities", what);
    cr_assert_eq(a->pos, b->pos, "%s: the session ends at %d, without drafts %d", what, b->pos, a->pos);
}

/* One model and configuration: a prompt with repetition (lookup finds drafts), gen ids. */
static void check_generate(const char *path, const char *draft_path, int exact, int threads, int n_prompt, int gen) {
    int V, DV;
    llmgen_model *m = open_model(path, exact, threads, &V);
    llmgen_model *dm = open_model(draft_path, 0, threads, &DV);
    llmgen_session *s, *ds, *small;
    int ctx = n_prompt + gen + 8;
    cr_assert_eq(llmgen_session_new(m, ctx, &s, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_capabilities dc;
    llmgen_model_capabilities(dm, &dc);
    cr_assert_eq(llmgen_session_new(dm, ctx < dc.context_length ? ctx : dc.context_length, &ds, err, sizeof err),
                 LLMGEN_OK, "%s", err);
    int32_t *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    fill_ids(prompt, n_prompt / 3 + 1, V, 11);
    for (int i = n_prompt / 3 + 1; i < n_prompt; i++) prompt[i] = prompt[i % (n_prompt / 3 + 1)];
    char what[300];
    snprintf(what, sizeof what, "%s (%s, %d threads)", path, exact ? "exact" : "fast", threads);

    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = gen;
    p.ignore_eos = 1;
    p.logprobs = 1;
    p.top_logprobs = 2;
    run_out plain, o;
    run(s, prompt, n_prompt, &p, V, &plain);
    cr_assert_eq(plain.r.n_drafted, 0);

    oracle orc = {plain.r.ids, plain.r.n_ids, n_prompt, V, 0, 0};
    const int wrong[] = {0, -2, -3, -1};
    const char *wname[] = {"rejected at the first draft", "rejected in the middle", "rejected at the last draft",
                           "accepted whole"};
    for (int w = 0; w < 4; w++) {
        llmgen_generate_params q = p;
        orc.wrong = wrong[w];
        orc.passes = 0;
        q.draft_fn = oracle_draft;
        q.draft_user = &orc;
        q.draft_max = 6;
        run(s, prompt, n_prompt, &q, V, &o);
        char wh[400];
        snprintf(wh, sizeof wh, "%s, drafts %s", what, wname[w]);
        expect_same(wh, &plain, &o);
        cr_assert(o.r.n_passes == orc.passes && o.r.n_passes > 0, "%s: %d passes", wh, o.r.n_passes);
        if (wrong[w] == 0) cr_assert_eq(o.r.n_accepted, 0, "%s", wh);
        if (wrong[w] == -1) cr_assert_eq(o.r.n_accepted, o.r.n_drafted, "%s", wh);
        if (wrong[w] == -2 || wrong[w] == -3) cr_assert(o.r.n_accepted > 0 && o.r.n_accepted < o.r.n_drafted, "%s", wh);
        run_free(&o);
    }

    llmgen_generate_params q = p;
    q.draft_lookup = 3;
    run(s, prompt, n_prompt, &q, V, &o);
    snprintf(what + strlen(what), sizeof what - strlen(what), "%s", ", prompt lookup");
    expect_same(what, &plain, &o);
    cr_assert(o.r.n_passes > 0, "%s: no drafts", what);
    run_free(&o);

    q = p;
    q.draft_session = ds;
    q.draft_max = 5;
    run(s, prompt, n_prompt, &q, V, &o);
    expect_same(draft_path, &plain, &o);
    cr_assert(o.r.n_passes > 0, "%s: no drafts", draft_path);
    if (!strcmp(path, draft_path) && !exact) cr_assert_eq(o.r.n_accepted, o.r.n_drafted, "itself as the draft model");
    run_free(&o);

    /* a context that fills up inside a draft: the runs stop at the same id */
    int sctx = n_prompt + gen / 2 + 3;
    cr_assert_eq(llmgen_session_new(m, sctx, &small, err, sizeof err), LLMGEN_OK, "%s", err);
    p.max_tokens = -1;
    run_out full;
    run(small, prompt, n_prompt, &p, V, &full);
    cr_assert_eq(full.r.stop_reason, LLMGEN_STOP_CONTEXT);
    orc = (oracle){full.r.ids, full.r.n_ids, n_prompt, V, -1, 0};
    q = p;
    q.draft_fn = oracle_draft;
    q.draft_user = &orc;
    q.draft_max = 7;
    run(small, prompt, n_prompt, &q, V, &o);
    expect_same("a context that fills up inside a draft", &full, &o);
    run_free(&o);
    q = p;
    q.draft_lookup = 2;
    run(small, prompt, n_prompt, &q, V, &o);
    expect_same("a context that fills up, prompt lookup", &full, &o);
    run_free(&o);
    run_free(&full);

    run_free(&plain);
    free(prompt);
    llmgen_session_free(small);
    llmgen_session_free(s);
    llmgen_session_free(ds);
    llmgen_model_free(dm);
    llmgen_model_free(m);
}

/* the real model in two configurations here (check_speculate.py runs all four from the CLI) */
#ifndef LLMGEN_SANITIZED
Test(speculate, real_model) {
    check_generate(REAL_MODEL, REAL_MODEL, 0, 2, 60, 32);
    check_generate(REAL_MODEL, REAL_MODEL, 1, 1, 60, 32);
}
#endif

/* Fast and exact mode at one and two threads; under the sanitizers fast at two and exact at one. */
static void generate_all(const char *path, const char *draft, int n_prompt, int gen) {
    for (int exact = 0; exact < 2; exact++)
        for (int threads = 1; threads <= 2; threads++) {
#ifdef LLMGEN_SANITIZED
            if (threads == 1 + exact) continue;
#endif
            check_generate(path, draft, exact, threads, n_prompt, gen);
        }
}

#define FIX(name) "tests/fixtures/" name
Test(speculate, ring_gemma3) { generate_all(FIX("tiny-gemma3-ring-f32"), FIX("tiny-gemma3-ring-f32"), 300, 80); }
Test(speculate, ring_mistral) { generate_all(FIX("tiny-mistral-ring-f32"), FIX("tiny-mistral-ring-f32"), 300, 80); }
Test(speculate, mlx_qwen3) { generate_all(FIX("tiny-mlx-qwen3-tied-q4g32"), FIX("tiny-qwen3-gqa-tied-f32"), 40, 60); }
Test(speculate, longrope) { generate_all(FIX("tiny-phi3-longrope-f32"), FIX("tiny-phi3-longrope-f32"), 4, 40); }

Test(speculate, misuse) {
    int V;
    llmgen_model *m = open_model("tests/fixtures/tiny-mha-f32", 1, 1, &V);
    llmgen_session *s;
    cr_assert_eq(llmgen_session_new(m, 32, &s, err, sizeof err), LLMGEN_OK, "%s", err);
    int32_t ids[130] = {0};
    const float *rows;
    cr_expect_eq(llmgen_decode_rows(s, ids, 0, &rows, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_eq(llmgen_decode_rows(s, ids, 33, &rows, err, sizeof err), LLMGEN_E_USAGE); /* more than its chunk */
    cr_expect_eq(llmgen_decode_rows(s, ids, 30, &rows, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(llmgen_decode_rows(s, ids, 3, &rows, err, sizeof err), LLMGEN_E_CONTEXT);
    ids[1] = V;
    llmgen_session_reset(s);
    cr_expect_eq(llmgen_decode_rows(s, ids, 2, &rows, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_eq(llmgen_session_pos(s), 0, "nothing runs on a bad id");
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    llmgen_result r;
    p.draft_max = 128;
    cr_expect_eq(llmgen_generate(s, ids, 2, &p, &r, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_result_free(&r);
    llmgen_session_free(s);
    llmgen_model_free(m);
}

/* A ring cache saved after a pass was taken back (its slots may hold positions past
 * the saved one) and loaded elsewhere allows no rewind that the saved session itself
 * refuses: a rewind into overwritten slots would change the logits after it. */
Test(speculate, loaded_ring_cache_rewinds_no_further) {
    int V;
    llmgen_model *m = open_model("tests/fixtures/tiny-mistral-ring-f32", 0, 1, &V);
    llmgen_session *a, *b;
    cr_assert_eq(llmgen_session_new(m, 512, &a, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert_eq(llmgen_session_new(m, 512, &b, err, sizeof err), LLMGEN_OK, "%s", err);
    int32_t ids[400];
    fill_ids(ids, 400, V, 7);
    const float *lg;
    int n = 300, k = 60;
    cr_assert_eq(llmgen_prefill(a, ids, n, &lg, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert_eq(llmgen_decode_rows(a, ids + n, k, &lg, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_session_rewind(a, n); /* the pass is taken back: its slots keep positions past n */
    cr_assert_eq(llmgen_session_pos(a), n);
    char path[] = "/tmp/llmgen-ring-cacheXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    unlink(path);
    cr_assert_eq(llmgen_session_save(a, path, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert_eq(llmgen_session_load(b, path, err, sizeof err), LLMGEN_OK, "%s", err);
    unlink(path);
    for (int r = 1; r <= n; r++) {
        int ka = llmgen_session_common_prefix(a, ids, r), kb = llmgen_session_common_prefix(b, ids, r);
        cr_expect(kb <= ka, "rewind to %d: the loaded cache allows it (%d), the saved session does not (%d)", r, kb, ka);
        if (kb > ka) break;
    }
    llmgen_session_free(a);
    llmgen_session_free(b);
    llmgen_model_free(m);
}

/* ---- the draft length's cost rule (draft.c) ----------------------------------------------- */

/* With passes that cost half a step per extra id and half the draft ids accepted, no
 * length beats plain steps: drafting pauses. Where extra ids are nearly free the same
 * acceptance keeps drafting at the acceptance rule's length. */
Test(draft, cost_caps_the_length) {
    draft_ctl c;
    draft_ctl_init(&c, 8);
    cr_expect_eq(draft_ctl_len(&c), 4, "the first draft before any time is known");
    draft_ctl_update(&c, 4, 4);
    cr_expect_eq(draft_ctl_len(&c), 0, "one plain step to time after the first pass");
    draft_ctl_time_step(&c, 0.010);
    for (int i = 0; i < 30; i++) {
        draft_ctl_time_pass(&c, 3, 0.020); /* 0.5 steps a row */
        draft_ctl_update(&c, 2, 1);
    }
    cr_expect_eq(draft_ctl_len(&c), 0, "costly rows, half accepted: paused");
    cr_expect_gt(c.backoff, 8, "the pauses grow while no length pays");

    draft_ctl_init(&c, 8);
    draft_ctl_update(&c, 4, 4);
    draft_ctl_time_step(&c, 0.010);
    for (int i = 0; i < 6; i++) {
        draft_ctl_time_pass(&c, 3, 0.0105); /* 0.025 steps a row */
        draft_ctl_update(&c, 2, 1);
    }
    cr_expect_eq(draft_ctl_len(&c), 2, "cheap rows: the acceptance rule's length (1 accepted + 1)");

    draft_ctl_init(&c, 8); /* a clock that saw no time pass: the step still counts as timed */
    draft_ctl_update(&c, 4, 4);
    draft_ctl_time_step(&c, 0.0);
    cr_expect_gt(draft_ctl_len(&c), 0, "drafting resumes after a step timed at 0 s");
}
