/* test_generate.c - the generation loop (llmgen_generate) and multi-turn chat
 * (llmgen_chat_*) through the public API on the default model, so that `make
 * unit-san` runs them under ASan + UBSan: stop reasons, streaming equals the
 * result, cancellation, a full context, a conversation that prefills only its new
 * turn, and the statuses of misuse. Ids against the CLI and HF are the business
 * of tests/cli/check_cli.py and check_chat.py. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "llmgen.h"

#define REAL_MODEL ".cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"

static llmgen_model *m;
static llmgen_session *s;
static char err[512];

static void setup(void) {
    llmgen_model_options mo = {.n_threads = 1};
    cr_assert_eq(llmgen_model_open(REAL_MODEL, &mo, &m, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert_eq(llmgen_session_new(m, 64, &s, err, sizeof err), LLMGEN_OK, "%s", err);
}

static void teardown(void) {
    llmgen_session_free(s);
    llmgen_model_free(m);
}

typedef struct {
    char text[4096];
    size_t n;
    int calls, final_calls, cancel_after;
} sink;

static int on_piece(void *user, int32_t id, const char *text, size_t len) {
    sink *k = user;
    if (id < 0) k->final_calls++;
    else k->calls++;
    if (k->n + len < sizeof k->text) memcpy(k->text + k->n, text, len);
    k->n += len;
    return k->cancel_after && k->calls >= k->cancel_after;
}

static int32_t *prompt_of(const char *text, int *n) {
    int32_t *ids;
    size_t k;
    cr_assert_eq(llmgen_tokenize(m, text, strlen(text), 1, 1, &ids, &k, err, sizeof err), LLMGEN_OK, "%s", err);
    *n = (int)k;
    return ids;
}

Test(generate, streamed_text_is_the_result_text_and_stop_strings_cut, .init = setup, .fini = teardown) {
    int n;
    int32_t *ids = prompt_of("Count: 1, 2, 3,", &n);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = 12;
    p.ignore_eos = 1;
    sink k = {0};
    p.on_piece = on_piece;
    p.user = &k;
    llmgen_result r;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_LENGTH);
    cr_expect_eq(r.n_ids, 12);
    cr_expect_eq(k.calls, 12, "one call per generated id");
    cr_expect(k.n == r.text_len && !memcmp(k.text, r.text, k.n), "streamed %.*s != %s", (int)k.n, k.text, r.text);
    /* stop at the first " 5": the text ends before it, and nothing past it was streamed */
    char full[4096];
    snprintf(full, sizeof full, "%s", r.text);
    llmgen_result_free(&r);
    const char *stops[] = {" 5", "never"};
    p.stops = stops;
    p.n_stops = 2;
    memset(&k, 0, sizeof k);
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    const char *hit = strstr(full, " 5");
    cr_assert_not_null(hit, "setup: %s", full);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_STRING);
    cr_expect(r.text_len == (size_t)(hit - full) && !memcmp(r.text, full, r.text_len), "%s vs %s", r.text, full);
    cr_expect(k.n == r.text_len && !memcmp(k.text, r.text, k.n), "streamed past the stop string");
    llmgen_result_free(&r);
    llmgen_free(ids);
}

Test(generate, cancel_context_and_minus_one, .init = setup, .fini = teardown) {
    int n;
    int32_t *ids = prompt_of("Once upon a time", &n);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.ignore_eos = 1;
    sink k = {.cancel_after = 3};
    p.on_piece = on_piece;
    p.user = &k;
    llmgen_result r;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_CANCELLED);
    cr_expect_eq(r.n_ids, 3);
    llmgen_result_free(&r);
    /* -1: until the 64-token context is full; the session then holds 64 ids, the last sampled one is kept */
    p.max_tokens = -1;
    p.on_piece = NULL;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_CONTEXT);
    cr_expect_eq(llmgen_session_pos(s), 64);
    cr_expect_eq(r.n_ids, 64 - n + 1);
    llmgen_result_free(&r);
    /* continuing a full session: the prompt does not fit, an error and nothing generated */
    p.keep_cache = 1;
    cr_expect_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_E_CONTEXT);
    cr_expect_eq(r.n_ids, 0);
    llmgen_result_free(&r);
    p.max_tokens = 0;
    cr_expect_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_result_free(&r);
    llmgen_free(ids);
}

Test(generate, conversation_prefills_only_the_new_turn, .init = setup, .fini = teardown) {
    llmgen_chat *c;
    cr_assert_eq(llmgen_chat_new(s, NULL, "Be brief.", &c, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = 4;
    llmgen_result r1, r2;
    cr_assert_eq(llmgen_chat_turn(c, "Hi", &p, &r1, err, sizeof err), LLMGEN_OK, "%s", err);
    int pos1 = llmgen_session_pos(s);
    cr_assert_eq(llmgen_chat_turn(c, "And you?", &p, &r2, err, sizeof err), LLMGEN_OK, "%s", err);
    /* the whole conversation, rendered and tokenized, is longer than what turn 2 prefilled */
    char *reply;
    size_t len;
    cr_assert_eq(llmgen_detokenize(m, r1.ids, (size_t)r1.n_ids, &reply, &len, err, sizeof err), LLMGEN_OK);
    llmgen_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", reply}, {"user", "And you?"}};
    char *text;
    cr_assert_eq(llmgen_chat_render_messages(m, msgs, 4, 1, NULL, &text, err, sizeof err), LLMGEN_OK, "%s", err);
    int n_all;
    int32_t *all = prompt_of(text, &n_all);
    cr_expect_lt(r2.n_prompt, n_all - pos1 + r1.n_ids, "turn 2 prefilled %d of %d", r2.n_prompt, n_all);
    cr_expect_gt(llmgen_session_pos(s), pos1);
    llmgen_free(all);
    llmgen_free(text);
    llmgen_free(reply);
    llmgen_result_free(&r1);
    llmgen_result_free(&r2);
    llmgen_chat_free(c);
}

Test(generate, misuse_statuses, .init = setup, .fini = teardown) {
    llmgen_message bad[] = {{"user", "Hi"}, {"robot", "beep"}};
    char *out;
    /* the model's own template is Jinja: it decides which roles it takes (as transformers);
     * a built-in template takes system, user and assistant, the system message first */
    cr_expect_eq(llmgen_chat_render_messages(m, bad, 2, 1, NULL, &out, err, sizeof err), LLMGEN_OK, "%s", err);
    llmgen_free(out);
    llmgen_chat_options chatml = {.template_name = "chatml"};
    cr_expect_eq(llmgen_chat_render_messages(m, bad, 2, 1, &chatml, &out, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_not_null(strstr(err, "robot"), "%s", err);
    llmgen_message late[] = {{"user", "Hi"}, {"system", "late"}};
    cr_expect_eq(llmgen_chat_render_messages(m, late, 2, 1, &chatml, &out, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_chat_options o = {.template_name = "nosuch"};
    llmgen_message one[] = {{"user", "Hi"}, {"assistant", "Hello"}};
    cr_expect_eq(llmgen_chat_render_messages(m, one, 2, 0, &o, &out, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_eq(llmgen_chat_render_as(m, "nosuch", NULL, NULL, "Hi", &out, err, sizeof err), LLMGEN_E_USAGE);
    o.template_name = "llama2"; /* one exchange only: a conversation is a tokenizer error, not a guess */
    cr_expect_eq(llmgen_chat_render_messages(m, one, 2, 1, &o, &out, err, sizeof err), LLMGEN_E_TOKENIZER);
    /* a tokenizer-only open: tokenizer calls work, sessions are refused */
    llmgen_model *t;
    llmgen_model_options mo = {.tokenizer_only = 1};
    llmgen_session *ts;
    cr_assert_eq(llmgen_model_open(REAL_MODEL, &mo, &t, err, sizeof err), LLMGEN_OK, "%s", err);
    int32_t *ids, *want;
    size_t k, kw;
    cr_expect_eq(llmgen_tokenize(t, "Hello world", 11, 1, 1, &ids, &k, err, sizeof err), LLMGEN_OK);
    cr_expect_eq(llmgen_tokenize(m, "Hello world", 11, 1, 1, &want, &kw, err, sizeof err), LLMGEN_OK);
    cr_expect(k == kw && !memcmp(ids, want, k * sizeof *ids), "tokenizer-only ids differ from the model's");
    llmgen_free(ids);
    llmgen_free(want);
    cr_expect_eq(llmgen_session_new(t, 0, &ts, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_model_free(t);
}

/* llmgen_prefill_rows: row i equals the last-position logits of a prefill of ids[0..i]
 * (across a chunk boundary: a 200-token session runs 128-token chunks), and the last
 * row is what llmgen_prefill returns. */
typedef struct {
    float *rows; /* (n, V) */
    int V, calls, first, bad_order;
} rows_sink;

static void on_row(void *user, int i, const float *lg, int V) {
    rows_sink *k = user;
    if (i != k->first + k->calls || V != k->V) k->bad_order = 1;
    memcpy(k->rows + (size_t)i * V, lg, (size_t)V * sizeof *lg);
    k->calls++;
}

Test(generate, prefill_rows_equal_prefills_of_each_prefix, .init = setup, .fini = teardown) {
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    int n = 0, V = caps.vocab_size;
    int32_t *text = prompt_of("The history of the printing press begins in the fifteenth century, when Johannes "
                              "Gutenberg combined movable metal type, oil-based ink and a screw press. Within "
                              "fifty years printing shops had spread across Europe, and the price of books fell "
                              "sharply, which changed how scholars, merchants and reformers worked.", &n), ids[150];
    for (int i = 0; i < 150; i++) ids[i] = text[i % n];
    llmgen_session *big;
    cr_assert_eq(llmgen_session_new(m, 200, &big, err, sizeof err), LLMGEN_OK, "%s", err);
    rows_sink k = {.rows = calloc((size_t)150 * V, sizeof(float)), .V = V, .first = 100};
    const float *last;
    cr_assert_eq(llmgen_prefill_rows(big, ids, 150, 100, on_row, &k, &last, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert(k.calls == 50 && !k.bad_order, "%d rows, order %d", k.calls, k.bad_order);
    cr_assert_eq(memcmp(last, k.rows + (size_t)149 * V, (size_t)V * sizeof(float)), 0);
    cr_assert_eq(llmgen_session_pos(big), 150);
#ifdef LLMGEN_SANITIZED
    int check[] = {127, 128}; /* the two sides of the chunk boundary */
#else
    int check[] = {100, 127, 128, 149};
#endif
    for (int c = 0; c < (int)(sizeof check / sizeof *check); c++) {
        int i = check[c];
        llmgen_session_reset(big);
        cr_assert_eq(llmgen_prefill(big, ids, i + 1, &last, err, sizeof err), LLMGEN_OK, "%s", err);
        float mx = 0, worst = 0;
        for (int v = 0; v < V; v++) {
            float d = last[v] - k.rows[(size_t)i * V + v];
            if (fabsf(last[v]) > mx) mx = fabsf(last[v]);
            if (fabsf(d) > worst) worst = fabsf(d);
        }
        /* same computation, the lm_head as one GEMM over the rows instead of one row */
        cr_assert(worst <= 1e-4f * mx + 1e-5f, "row %d: max |diff| %g (max |logit| %g)", i, worst, mx);
    }
    cr_assert_eq(llmgen_prefill_rows(big, ids, 4, 5, on_row, &k, NULL, err, sizeof err), LLMGEN_E_USAGE);
    free(k.rows);
    free(text);
    llmgen_session_free(big);
}

/* --logprobs: each row is the sampled id and its log-softmax, then the top ids in order. */
typedef struct {
    float *steps; /* (max, V) the logits each step sampled from */
    int V, n;
} logits_sink;

static int keep_logits(void *user, const float *lg, int V) {
    logits_sink *k = user;
    memcpy(k->steps + (size_t)k->n++ * V, lg, (size_t)V * sizeof *lg);
    return 0;
}

Test(generate, logprobs_are_log_softmax_of_the_raw_logits, .init = setup, .fini = teardown) {
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    int n, V = caps.vocab_size;
    int32_t *ids = prompt_of("The three primary colors are", &n);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = 5;
    p.logprobs = 1;
    p.top_logprobs = 3;
    p.sampler.temperature = 0.7f; /* sampled: the log-probabilities stay the raw model's */
    p.sampler.seed = 3;
    logits_sink k = {.steps = malloc((size_t)5 * V * sizeof(float)), .V = V};
    p.on_logits = keep_logits;
    p.user = &k;
    llmgen_result r;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert(r.logprobs && r.top_logprobs == 3 && r.n_ids >= 1);
    for (int i = 0; i < r.n_ids; i++) {
        const llmgen_logprob *row = r.logprobs + (size_t)i * 4;
        const float *lg = k.steps + (size_t)i * V;
        double mx = lg[0], sum = 0;
        for (int v = 1; v < V; v++) mx = lg[v] > mx ? lg[v] : mx;
        for (int v = 0; v < V; v++) sum += exp(lg[v] - mx);
        cr_assert_eq(row[0].id, r.ids[i]);
        cr_assert_float_eq(row[0].logprob, lg[r.ids[i]] - mx - log(sum), 1e-5);
        cr_assert_float_eq(row[1].logprob, -log(sum), 1e-5, "the most likely id first");
        for (int j = 1; j < 3; j++) cr_assert(row[j].logprob >= row[j + 1].logprob);
        for (int j = 1; j <= 3; j++) cr_assert_float_eq(row[j].logprob, lg[row[j].id] - mx - log(sum), 1e-5);
    }
    llmgen_result_free(&r);
    p.top_logprobs = V + 1;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_E_USAGE);
    llmgen_result_free(&r);
    free(k.steps);
    free(ids);
}

/* Structured output through the API: only what the grammar allows comes out, and the end-of-sequence
 * id ends it exactly when it is complete; prompt-lookup drafts give the same ids, sampling stays in the
 * language. Ids against transformers + xgrammar are tests/cli/check_grammar.py's. */
Test(generate, grammar_and_json_schema_constrain_the_output, .init = setup, .fini = teardown) {
    int n;
    int32_t *ids = prompt_of("<|im_start|>user\nIs the sky blue? Then list two colors.<|im_end|>\n"
                             "<|im_start|>assistant\n", &n);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = 16;
    p.grammar = "root ::= \"yes\" | \"no\"";
    llmgen_result r;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(!strcmp(r.text, "yes") || !strcmp(r.text, "no"), "%s", r.text);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_EOS);
    llmgen_result_free(&r);

    p.grammar = NULL;
    p.json_schema = "{\"type\": \"array\", \"items\": {\"enum\": [\"red\", \"green\", \"blue\"]}, \"minItems\": 2, "
                    "\"maxItems\": 2}";
    p.max_tokens = 24;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_EOS, "%s", r.text);
    cr_expect(r.text_len > 2 && r.text[0] == '[' && r.text[r.text_len - 1] == ']', "%s", r.text);
    int32_t greedy[24];
    int n_greedy = r.n_ids;
    memcpy(greedy, r.ids, (size_t)r.n_ids * sizeof *r.ids);
    llmgen_result_free(&r);
    p.draft_lookup = 2; /* a draft the grammar forbids is never the picked id */
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(r.n_ids == n_greedy && !memcmp(r.ids, greedy, (size_t)n_greedy * sizeof *greedy), "%s", r.text);
    llmgen_result_free(&r);
    p.draft_lookup = 0;
    p.sampler.temperature = 1.5f;
    p.sampler.seed = 7;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(r.text_len >= 1 && r.text[0] == '[', "%s", r.text);
    cr_expect(r.stop_reason != LLMGEN_STOP_EOS || r.text[r.text_len - 1] == ']', "%s", r.text);
    llmgen_result_free(&r);

    p.json_schema = NULL;
    p.grammar = "root ::= \"a\" b";
    cr_expect_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_E_USAGE);
    cr_expect_not_null(strstr(err, "grammar: line 1, column 14"), "%s", err);
    llmgen_result_free(&r);
    llmgen_free(ids);
}

/* 1 if text is a JSON object whose "at" is a string (the time schema below). */
static int time_object(const char *text) {
    json_t *j = json_loads(text, 0, NULL);
    int ok = json_is_object(j) && json_is_string(json_object_get(j, "at"));
    json_decref(j);
    return ok;
}

/* The closing rule: a schema whose output the model would run on (digits of a time's fraction) ends
 * complete within the ids left, whether max_tokens or the context is the tighter limit; --no-close
 * leaves it cut; speculation gives the same ids; sampling closes too, reproducibly for a seed; where no
 * id fits (a budget far below the schema's shortest output), the picks stay as they were. */
Test(generate, grammar_output_closes_within_the_budget, .init = setup, .fini = teardown) {
    int n;
    int32_t *ids = prompt_of("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
                             "Face<|im_end|>\n<|im_start|>user\nReply with a time of day as JSON.<|im_end|>\n"
                             "<|im_start|>assistant\n", &n);
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.json_schema = "{\"type\": \"object\", \"properties\": {\"at\": {\"type\": \"string\", \"format\": "
                    "\"time\"}}, \"required\": [\"at\"]}";
    p.max_tokens = -1; /* the session's 64 positions are the limit */
    llmgen_result r, open, spec;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(r.stop_reason, LLMGEN_STOP_CONTEXT, "%s", r.text);
    cr_expect_eq(r.n_ids, 64 - n + 1, "%s", r.text);
    cr_expect_gt(r.n_closed, 0);
    cr_expect(time_object(r.text), "incomplete: %s", r.text);
    p.no_close = 1;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &open, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect_eq(open.n_closed, 0);
    cr_expect_eq(open.n_ids, r.n_ids);
    cr_expect(!time_object(open.text), "the model did not run on: %s", open.text);
    p.no_close = 0;
    p.draft_lookup = 2;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &spec, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(spec.n_ids == r.n_ids && !memcmp(spec.ids, r.ids, (size_t)r.n_ids * sizeof *r.ids), "%s", spec.text);
    cr_expect_gt(spec.n_drafted, 0);
    llmgen_result_free(&r), llmgen_result_free(&open), llmgen_result_free(&spec);
#ifndef LLMGEN_SANITIZED /* the same code paths again, with other budgets: the plain build only */
    p.draft_lookup = 0;
    p.max_tokens = 18; /* max_tokens binds first, at the schema's shortest output: {"at":"00:00:00Z"} */
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(r.n_ids <= 18 && r.n_closed > 0 && time_object(r.text), "%d ids: %s", r.n_ids, r.text);
    llmgen_result_free(&r);

    p.max_tokens = 20;
    p.sampler.temperature = 0.8f;
    p.sampler.seed = 5;
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &spec, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(time_object(r.text), "%s", r.text);
    cr_expect(spec.n_ids == r.n_ids && !memcmp(spec.ids, r.ids, (size_t)r.n_ids * sizeof *r.ids), "%s", spec.text);
    llmgen_result_free(&r), llmgen_result_free(&spec);

    p.sampler.temperature = 0.0f;
    p.max_tokens = 3; /* far below the 18 bytes of the shortest output: nothing fits, the picks stay */
    cr_assert_eq(llmgen_generate(s, ids, n, &p, &r, err, sizeof err), LLMGEN_OK, "%s", err);
    cr_expect(r.n_ids == 3 && r.n_closed == 0 && r.stop_reason == LLMGEN_STOP_LENGTH, "%s", r.text);
    llmgen_result_free(&r);
#endif
    llmgen_free(ids);
}
