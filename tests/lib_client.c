/* lib_client.c - a separate program that links libllmgen and drives it by hand
 * through the public header only: open, capabilities, session, prefill, decode
 * step, sample, reset, free. tests/cli/check_cli.py compares its ids with the CLI's.
 *
 * usage: lib_client MODEL N IDS [THREADS [exact]]      IDS = comma-separated prompt ids
 *        lib_client MODEL N -t TEXT [THREADS [exact]]  TEXT is tokenized through the API
 *        lib_client MODEL N --chat TURN1 TURN2 [SYSTEM]
 * ("exact" opens the model in exact mode, as the CLI's --exact)
 *
 * Prints the N greedy ids (end-of-sequence ignored, as the CLI's --ignore-eos)
 * comma-separated on one line. It also checks, and exits 1 if any fails:
 *   - llmgen_generate gives the ids of the loop written by hand, and its text;
 *   - a reset session gives the same ids again;
 *   - the API refuses misuse with the documented status (id out of range,
 *     empty prefill, a context overflow, bad sampler params);
 *   - chat: llmgen_chat_render_messages with [system, user] gives llmgen_chat_render's
 *     text; a conversation ending with an assistant turn and no generation prompt is a
 *     prefix of the same conversation with one more user turn; a template given as text
 *     renders without a model; a template's raise_exception is LLMGEN_E_TEMPLATE.
 *
 * --chat drives a two-turn conversation by hand, as llmgen.h describes it: render
 * the messages, prefill only the text past what the session holds (after the
 * reply's last id if llmgen_generate left it unrun), generate with keep_cache.
 * Prints each reply's ids (at most N, greedy, end at end-of-sequence) on a line:
 * tests/cli/check_chat.py compares them with `llmgen -i` and tests/chat_client.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llmgen.h"

static int fails;

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "lib_client: FAILED: %s\n", what);
        fails++;
    }
}

static int parse_ids(const char *s, int32_t *ids, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        ids[n++] = (int32_t)strtol(s, &end, 10);
        if (end == s) return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Greedy-generate n ids after the prompt into out, by hand. */
static llmgen_status run(llmgen_session *s, llmgen_sampler *smp, const int32_t *prompt, int np, int n, int32_t *out,
                         char *err, size_t errlen) {
    const float *logits;
    llmgen_session_reset(s);
    llmgen_status st = llmgen_prefill(s, prompt, np, &logits, err, errlen);
    for (int i = 0; i < n && !st; i++) {
        out[i] = llmgen_sample(smp, logits, NULL, 0);
        if (i + 1 < n) st = llmgen_decode_step(s, out[i], &logits, err, errlen);
    }
    return st;
}

static void check_chat(const llmgen_model *m) {
    char err[512], *one = NULL, *two = NULL, *three = NULL, *t = NULL;
    llmgen_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Bye"}};
    llmgen_chat_options opt = {.date = "02 Jan 2025"};
    check(llmgen_chat_render(m, "Be brief.", "Hi", &one, err, sizeof err) == LLMGEN_OK, "chat_render");
    check(llmgen_chat_render_messages(m, msgs, 2, 1, &opt, &two, err, sizeof err) == LLMGEN_OK, "chat_render_messages");
    check(one && two && !strcmp(one, two), "chat_render_messages([system, user]) == chat_render(system, user)");
    llmgen_free(two);
    two = NULL;
    check(llmgen_chat_render_messages(m, msgs, 3, 0, &opt, &two, err, sizeof err) == LLMGEN_OK &&
              llmgen_chat_render_messages(m, msgs, 4, 1, &opt, &three, err, sizeof err) == LLMGEN_OK,
          "chat_render_messages, 3 and 4 messages");
    check(two && three && !strncmp(two, three, strlen(two)) && strlen(three) > strlen(two),
          "a conversation without the generation prompt is a prefix of its continuation");
    llmgen_chat_options tt = {.template_text = "{{ bos_token }}{{ messages | length }}", .bos_token = "<B>"};
    check(llmgen_chat_render_messages(NULL, msgs, 4, 1, &tt, &t, err, sizeof err) == LLMGEN_OK && t &&
              !strcmp(t, "<B>4"),
          "chat_render_messages with template text and no model");
    llmgen_free(t);
    t = NULL;
    tt.template_text = "{{ raise_exception('no ' ~ messages[0].role) }}";
    check(llmgen_chat_render_messages(NULL, msgs, 1, 1, &tt, &t, err, sizeof err) == LLMGEN_E_TEMPLATE && !t &&
              strstr(err, "raise_exception: no system"),
          "raise_exception is LLMGEN_E_TEMPLATE with the template's message");
    llmgen_free(one);
    llmgen_free(two);
    llmgen_free(three);
}

/* ids[0..n) comma-separated on one line of stdout. */
static void print_ids(const int32_t *ids, int n) {
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", ids[i]);
    printf("\n");
}

static int chat_by_hand(llmgen_model *m, int n, const char *u1, const char *u2, const char *sys) {
    char err[512], *text = NULL, *reply = NULL, *text2 = NULL;
    size_t len, k;
    int32_t *ids = NULL;
    llmgen_session *s;
    llmgen_result r1, r2;
    llmgen_message msgs[4];
    int nm = 0;
    if (sys) msgs[nm++] = (llmgen_message){"system", sys};
    msgs[nm++] = (llmgen_message){"user", u1};
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = n;
    if (llmgen_session_new(m, 0, &s, err, sizeof err) ||
        llmgen_chat_render_messages(m, msgs, (size_t)nm, 1, NULL, &text, err, sizeof err) ||
        llmgen_tokenize(m, text, strlen(text), 1, 1, &ids, &k, err, sizeof err) ||
        llmgen_generate(s, ids, (int)k, &p, &r1, err, sizeof err)) {
        fprintf(stderr, "lib_client: chat turn 1: %s\n", err);
        return 1;
    }
    print_ids(r1.ids, r1.n_ids);
    /* what the cache holds: the prompt and the reply's ids, all but the last if it was not run */
    int unrun = (int)k + r1.n_ids - llmgen_session_pos(s);
    check(unrun == (r1.stop_reason == LLMGEN_STOP_EOS ? 0 : 1), "generate leaves only the last id unrun");
    check(!llmgen_detokenize(m, r1.ids, (size_t)r1.n_ids, &reply, &len, err, sizeof err), "detokenize reply");
    msgs[nm++] = (llmgen_message){"assistant", reply};
    msgs[nm++] = (llmgen_message){"user", u2};
    check(!llmgen_chat_render_messages(m, msgs, (size_t)nm, 1, NULL, &text2, err, sizeof err), "render turn 2");
    size_t held = strlen(text);
    check(!strncmp(text2, text, held) && !strncmp(text2 + held, reply, len), "turn 2 render extends turn 1");
    llmgen_free(ids);
    check(!llmgen_tokenize(m, text2 + held + len, strlen(text2 + held + len), 0, 1, &ids, &k, err, sizeof err),
          "tokenize turn 2");
    int32_t *prompt = malloc((k + 1) * sizeof *prompt);
    if (unrun) prompt[0] = r1.ids[r1.n_ids - 1];
    memcpy(prompt + unrun, ids, k * sizeof *ids);
    p.keep_cache = 1;
    int pos = llmgen_session_pos(s);
    if (llmgen_generate(s, prompt, (int)k + unrun, &p, &r2, err, sizeof err)) {
        fprintf(stderr, "lib_client: chat turn 2: %s\n", err);
        return 1;
    }
    check(llmgen_session_pos(s) > pos, "turn 2 continues the cache");
    print_ids(r2.ids, r2.n_ids);
    free(prompt);
    llmgen_free(ids);
    llmgen_free(text);
    llmgen_free(text2);
    llmgen_free(reply);
    llmgen_result_free(&r1);
    llmgen_result_free(&r2);
    llmgen_session_free(s);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: lib_client MODEL N IDS|-t TEXT [THREADS]\n");
        return 2;
    }
    if (!strcmp(argv[3], "--chat")) {
        llmgen_model *cm;
        char e[512];
        if (argc < 6 || llmgen_model_open(argv[1], NULL, &cm, e, sizeof e)) return 2;
        int rc = chat_by_hand(cm, atoi(argv[2]), argv[4], argv[5], argc > 6 ? argv[6] : NULL);
        llmgen_model_free(cm);
        return rc || fails ? 1 : 0;
    }
    int text_mode = !strcmp(argv[3], "-t");
    if (text_mode && argc < 5) return 2;
    int n = atoi(argv[2]);
    int threads = argc > 4 + text_mode ? atoi(argv[4 + text_mode]) : 2;
    char err[512];
    int exact = argc > 5 + text_mode && !strcmp(argv[5 + text_mode], "exact");
    llmgen_model_options mo = {.n_threads = threads, .exact = exact};
    llmgen_model *m;
    llmgen_status st = llmgen_model_open(argv[1], &mo, &m, err, sizeof err);
    if (st) {
        fprintf(stderr, "lib_client: open: %s: %s\n", llmgen_status_name(st), err);
        return 1;
    }
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    fprintf(stderr, "lib_client: %s %s %s kernels=%s ctx=%d vocab=%d threads=%d tokenizer=%d\n", caps.architecture,
            caps.format, caps.weight_types, caps.kernels, caps.context_length, caps.vocab_size, caps.n_threads,
            caps.has_tokenizer);

    int32_t prompt[4096], *tok = NULL;
    int np;
    if (text_mode) {
        size_t k;
        st = llmgen_tokenize(m, argv[4], strlen(argv[4]), 1, 1, &tok, &k, err, sizeof err);
        if (st) {
            fprintf(stderr, "lib_client: tokenize: %s\n", err);
            return 1;
        }
        np = (int)(k < 4096 ? k : 4096);
        memcpy(prompt, tok, (size_t)np * sizeof *prompt);
        llmgen_free(tok);
    } else {
        np = parse_ids(argv[3], prompt, 4096);
    }
    if (np <= 0 || n <= 0) return 2;

    llmgen_sampler_params sp;
    llmgen_sampler_defaults(&sp);
    llmgen_sampler *smp = llmgen_sampler_new(&sp, caps.vocab_size);
    llmgen_session *a, *b;
    if (llmgen_session_new(m, 0, &a, err, sizeof err) || llmgen_session_new(m, 0, &b, err, sizeof err)) {
        fprintf(stderr, "lib_client: session: %s\n", err);
        return 1;
    }
    int32_t *ids = calloc((size_t)n, sizeof *ids), *again = calloc((size_t)n, sizeof *again);
    int32_t *ia = calloc((size_t)n, sizeof *ia), *ib = calloc((size_t)n, sizeof *ib);
    if ((st = run(a, smp, prompt, np, n, ids, err, sizeof err))) {
        fprintf(stderr, "lib_client: generate: %s\n", err);
        return 1;
    }
    print_ids(ids, n);
    /* the library's loop gives the same ids, and (with a tokenizer) their text */
    llmgen_generate_params gp;
    llmgen_generate_defaults(&gp);
    gp.max_tokens = n;
    gp.ignore_eos = 1;
    llmgen_result gr;
    check(!llmgen_generate(a, prompt, np, &gp, &gr, err, sizeof err) && gr.n_ids == n &&
              !memcmp(gr.ids, ids, (size_t)n * sizeof *ids) && gr.stop_reason == LLMGEN_STOP_LENGTH,
          "llmgen_generate == the loop by hand");
    if (caps.has_tokenizer) {
        char *t;
        size_t tl;
        check(!llmgen_detokenize(m, ids, (size_t)n, &t, &tl, err, sizeof err) && tl == gr.text_len &&
                  !memcmp(t, gr.text, tl), "llmgen_generate text == detokenized ids");
        llmgen_free(t);
    }
    llmgen_result_free(&gr);
    if (caps.has_tokenizer) {
        /* the streaming detokenizer must give the same bytes as one-shot decoding */
        llmgen_detok *d;
        char *text, *acc = calloc(1, 1);
        size_t len, accn = 0;
        check(!llmgen_detok_new(m, &d, err, sizeof err), "detok_new");
        for (int i = 0; i < n; i++) {
            const char *p;
            size_t k;
            check(!llmgen_detok_put(d, ids[i], &p, &k, err, sizeof err), "detok_put");
            acc = realloc(acc, accn + k + 1);
            memcpy(acc + accn, p, k);
            accn += k;
        }
        const char *p;
        size_t k;
        llmgen_detok_flush(d, &p, &k);
        acc = realloc(acc, accn + k + 1);
        memcpy(acc + accn, p, k);
        accn += k;
        check(!llmgen_detokenize(m, ids, (size_t)n, &text, &len, err, sizeof err), "detokenize");
        check(len == accn && !memcmp(text, acc, len), "streamed text == detokenized text");
        llmgen_free(text);
        free(acc);
        llmgen_detok_free(d);
    }

    /* two sessions in turn: the KV caches must not interfere */
    const float *la, *lb;
    llmgen_session_reset(a);
    check(!llmgen_prefill(a, prompt, np, &la, err, sizeof err), "prefill a");
    ia[0] = llmgen_sample(smp, la, NULL, 0);
    check(!llmgen_prefill(b, prompt, np > 1 ? np - 1 : np, &lb, err, sizeof err), "prefill b");
    llmgen_session_reset(b);
    check(!llmgen_prefill(b, prompt, np, &lb, err, sizeof err), "prefill b again");
    ib[0] = llmgen_sample(smp, lb, NULL, 0);
    for (int i = 1; i < n; i++) {
        check(!llmgen_decode_step(a, ia[i - 1], &la, err, sizeof err), "decode a");
        ia[i] = llmgen_sample(smp, la, NULL, 0);
        check(!llmgen_decode_step(b, ib[i - 1], &lb, err, sizeof err), "decode b");
        ib[i] = llmgen_sample(smp, lb, NULL, 0);
    }
    check(!memcmp(ia, ids, (size_t)n * sizeof *ids), "session a (interleaved) == first run");
    check(!memcmp(ib, ids, (size_t)n * sizeof *ids), "session b (interleaved) == first run");
    check(!run(a, smp, prompt, np, n, again, err, sizeof err) && !memcmp(again, ids, (size_t)n * sizeof *ids),
          "reset session repeats its ids");

    /* misuse gets the documented status and leaves the session usable */
    int32_t bad = caps.vocab_size;
    check(llmgen_decode_step(a, bad, &la, err, sizeof err) == LLMGEN_E_USAGE, "id out of range -> E_USAGE");
    check(llmgen_prefill(a, prompt, 0, &la, err, sizeof err) == LLMGEN_E_USAGE, "empty prefill -> E_USAGE");
    llmgen_session *tiny;
    check(!llmgen_session_new(m, np, &tiny, err, sizeof err), "session of exactly the prompt");
    check(!llmgen_prefill(tiny, prompt, np, &la, err, sizeof err), "prompt fills the context");
    check(llmgen_decode_step(tiny, ids[0], &la, err, sizeof err) == LLMGEN_E_CONTEXT, "overflow -> E_CONTEXT");
    /* a full context ends generation with what was generated, not an error */
    llmgen_generate_params gq;
    llmgen_generate_defaults(&gq);
    gq.max_tokens = 5;
    gq.ignore_eos = 1;
    check(!llmgen_generate(tiny, prompt, np, &gq, &gr, err, sizeof err) && gr.stop_reason == LLMGEN_STOP_CONTEXT &&
              gr.n_ids == 1 && gr.ids[0] == ids[0], "full context -> LLMGEN_STOP_CONTEXT with the sampled id");
    llmgen_result_free(&gr);
    gq.max_tokens = 0;
    check(llmgen_generate(tiny, prompt, np, &gq, &gr, err, sizeof err) == LLMGEN_E_USAGE, "max_tokens 0 -> E_USAGE");
    llmgen_result_free(&gr);
    llmgen_session_free(tiny);
    check(llmgen_session_new(m, caps.context_length + 1, &tiny, err, sizeof err) == LLMGEN_E_USAGE,
          "context above the model's -> E_USAGE");
    sp.top_p = 2.0f;
    check(llmgen_sampler_check(&sp, err, sizeof err) == LLMGEN_E_USAGE && llmgen_sampler_new(&sp, 10) == NULL,
          "top_p 2 refused");
    llmgen_model *none;
    check(llmgen_model_open("/nonexistent/model.gguf", NULL, &none, err, sizeof err) == LLMGEN_E_IO && !none,
          "missing file -> E_IO");

    free(ids);
    free(again);
    free(ia);
    free(ib);
    llmgen_sampler_free(smp);
    llmgen_session_free(a);
    llmgen_session_free(b);
    if (caps.has_tokenizer) check_chat(m);
    llmgen_model_free(m);
    return fails ? 1 : 0;
}
