/* fuzz_openai.c - libFuzzer target: the server's request bodies (src/serve/openai.c),
 * the untrusted text `llmgen serve` reads, through the mapping onto the --batch
 * request parser (request.c) for both routes, then the response, chunk and error
 * objects built from what was parsed. No model: token texts come out empty. The
 * first byte picks the route (even: /v1/completions, odd: /v1/chat/completions). */
#include "fuzz_util.h"

#include "cli/request.h"
#include "grammar/grammar.h"
#include "llmgen.h"
#include "serve/openai.h"
#include "serve/tools.h"

/* A stream's held-back content fed in pieces of k bytes gives the content and calls of the
 * whole text parsed at once. */
static void check_toolhold(tools_format f, const char *text, size_t n, size_t k) {
    openai_toolhold h = {0};
    size_t before = n, got = 0;
    json_t *calls = tools_parse(f, text, n, &before);
    char *c = malloc(n + 1);
    if (!c) abort();
    for (size_t i = 0; i <= n; i += k) {
        const char *out;
        size_t len = i + k <= n ? k : n - i, n_out;
        if (openai_toolhold_feed(&h, f, text + i, len, i + k > n, &out, &n_out)) abort();
        memcpy(c + got, out, n_out);
        got += n_out;
    }
    if (!!calls != !!h.calls || got != (calls ? before : n) || memcmp(c, text, got)) abort();
    if (calls && !json_equal(calls, h.calls)) abort();
    json_decref(calls);
    free(c);
    openai_toolhold_free(&h);
}

/* The reasoning split (<think>, harmony channels) of text fed whole equals the one fed in pieces of k bytes. */
static void check_think(const char *text, size_t n, size_t k) {
    openai_think whole = {0}, parts = {0};
    char *r = NULL, *c = NULL;
    size_t nr = 0, nc = 0;
    if (openai_think_feed(&whole, text, n, 1)) abort();
    for (size_t i = 0; i <= n; i += k) {
        size_t len = i + k <= n ? k : n - i;
        if (openai_think_feed(&parts, text + i, len, i + k > n)) abort();
        r = realloc(r, nr + parts.n_r + 1);
        c = realloc(c, nc + parts.n_c + 1);
        if (!r || !c) abort();
        memcpy(r + nr, parts.r, parts.n_r);
        memcpy(c + nc, parts.c, parts.n_c);
        nr += parts.n_r;
        nc += parts.n_c;
    }
    if (nr != whole.n_r || nc != whole.n_c || memcmp(r, whole.r, nr) || memcmp(c, whole.c, nc)) abort();
    /* no thinking block: the text byte for byte (harmony drops a final channel's header) */
    if (!whole.thought && !(n >= 11 && !memcmp(text, "<|channel|>", 11)) && (nc != n || memcmp(c, text, n))) abort();
    free(r);
    free(c);
    openai_think_free(&whole);
    openai_think_free(&parts);
}

static void check_json(json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT);
    if (!s) abort();
    json_t *back = json_loads(s, 0, NULL); /* what the server sends must be JSON */
    if (!back) abort();
    json_decref(back);
    free(s);
    json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    openai_kind kind = data[0] & 1 ? OPENAI_CHAT : OPENAI_COMPLETIONS;
    json_t *body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!body) return 0;
    request base;
    memset(&base, 0, sizeof base);
    llmgen_sampler_defaults(&base.sp);
    base.max_tokens = -1;
    openai_req r;
    openai_error e;
    memset(&e, 0, sizeof e);
    if (openai_parse(body, kind, &base, &r, &e)) {
        if (e.status != 400 || !e.message[0] || !memchr(e.message, '\0', sizeof e.message)) abort();
        check_json(openai_error_json(&e));
    } else {
        if (r.n < 1 || r.n > OPENAI_MAX_N || r.n_prompts < 1 || r.n_prompts > OPENAI_MAX_PROMPTS) abort();
        if (kind == OPENAI_CHAT && !r.q.messages) abort();
        if (kind == OPENAI_COMPLETIONS && !r.q.text && !r.q.ids) abort();
        if (r.stream && r.logprobs) abort(); /* refused */
        if (!(r.q.max_tokens >= 1 || r.q.max_tokens == -1) || r.q.n_stops > REQUEST_MAX_STOPS) abort();
        llmgen_generate_params p;
        request_params(&r.q, &p);
        /* a result of a few ids, with log-probabilities, into each response shape */
        int32_t ids[3] = {1, 2, 3};
        llmgen_logprob lp[3 * 4];
        for (int i = 0; i < 12; i++) lp[i] = (llmgen_logprob){i % 5, -0.5f * (float)i};
        llmgen_result res = {.ids = ids, .n_ids = 3, .text = (char *)(r.q.text ? r.q.text : "abc"),
                             .text_len = r.q.text ? r.q.text_len : 3, .stop_reason = LLMGEN_STOP_LENGTH,
                             .logprobs = lp, .top_logprobs = 3};
        check_json(openai_choice(&r, NULL, 0, &res, "fuzz"));
        for (size_t k = 1; k <= 9; k += 4) check_think(res.text, res.text_len, k);
        for (tools_format f = TOOLS_UNKNOWN; f <= TOOLS_MISTRAL; f++) {
            check_toolhold(f, res.text, res.text_len, 1 + (size_t)f * 3);
            char *gbnf = NULL, err[256];
            if (r.tools && !tools_grammar(f, r.tools, r.tool_name, r.parallel_calls, &gbnf, err, sizeof err)) {
                grammar *g = NULL;
                if (!grammar_parse(gbnf, strlen(gbnf), &g, err, sizeof err)) grammar_free(g);
            }
            free(gbnf);
        }
        check_json(openai_chunk_choice(kind, 1, res.text, res.text_len, 1, "stop"));
        json_t *env = openai_envelope(kind, r.stream, "id-1", 0, r.model ? r.model : "m");
        json_object_set_new(env, "usage", openai_usage(3, 3, 0));
        check_json(env);
    }
    openai_req_free(&r);
    json_decref(body);
    return 0;
}
