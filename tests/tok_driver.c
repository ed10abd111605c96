/* tok_driver.c - standalone driver for the tokenizer library, used by
 * tests/cli/check_tokenizer.py and `make bench` (no model weights needed).
 *
 *   tok_driver (--gguf FILE | --json FILE [--config FILE]) [--no-special] MODE [ARG]
 *
 * MODE
 *   cases FILE   FILE holds test strings, each as u32 length (LE) + bytes.
 *                For each one writes to stdout: u32 n_ids, n_ids x i32 ids
 *                (encode without BOS/EOS), u32 len + decode(ids), u32 len +
 *                the streaming decoder's concatenated output; or u32 0xFFFFFFFF,
 *                u32 len + the error message.
 *   bench FILE   encode FILE in one call, print "bytes tokens seconds MB/s"
 *   load         print the load time in milliseconds and the vocabulary size
 *                (tokenizer.json: the whole tok_load_json; GGUF: tok_load_spec alone)
 *   chat SYSTEM USER   print the rendered chat prompt (SYSTEM "-" = none); --template NAME
 *                forces a template family, --date D the Llama 3.1+ "Today Date"
 *   conv ADD_GEN ROLE CONTENT...  print a rendered conversation (tok_chat_render_messages,
 *                behind llmgen_chat_render_messages); ADD_GEN 0/1 adds the generation prompt;
 *                exit 1 on a template or text error, 3 on a bad argument
 *
 *   tok_driver jinja TEMPLATE_FILE VARS_FILE   (no tokenizer) render the template with the
 *                variables of the JSON object in VARS_FILE (strftime_now: 02 Jan 2025 00:00 UTC);
 *                the text to stdout, or exit 1 and the error on stderr
 *   tok_driver chat-bench TEMPLATE_FILE N   (no tokenizer) render a system message and a
 *                three-turn conversation ending with a user turn N times, parse included, as
 *                --chat does; print the best of 5 rounds in microseconds of CPU time per render
 *                (CPU time: on these shared 2-core machines wall time also counts other jobs) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/gguf.h"
#include "jinja.h"
#include "tokenizer.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[n] = 0;
        *len = (size_t)n;
    }
    return p;
}

static tok_str gstr(const gguf_file *g, const char *key)
{
    gguf_str s;
    if (gguf_get_str(g, key, &s))
        return (tok_str){"", 0};
    return (tok_str){s.ptr, (size_t)s.len};
}

static int32_t gint(const gguf_file *g, const char *key, int32_t dflt)
{
    int64_t v;
    return gguf_get_int(g, key, &v) ? dflt : (int32_t)v;
}

/* GGUF tokenizer metadata -> tok_spec, as llmgen's loader does. */
static double now_s(void);

/* *spec_ms: time spent in tok_load_spec alone (reading the GGUF is llmgen's job). */
static int load_gguf(const char *path, tokenizer **tok, double *spec_ms, char *err)
{
    gguf_file *g;
    if (gguf_open(path, &g, err))
        return -1;
    tok_spec sp = {0};
    sp.model = gstr(g, "tokenizer.ggml.model");
    sp.pre = gstr(g, "tokenizer.ggml.pre");
    sp.chat_template = gstr(g, "tokenizer.chat_template");
    sp.arch = gstr(g, "general.architecture");
    gguf_type ty;
    uint64_t n = 0, nm = 0;
    const void *data;
    tok_str *tokens = NULL, *merges = NULL;
    int32_t *types = NULL;
    float *scores = NULL;
    if (!gguf_get_arr(g, "tokenizer.ggml.tokens", &ty, &n, &data)) {
        tokens = calloc(n, sizeof *tokens);
        for (uint64_t i = 0; i < n; i++) {
            gguf_str s;
            gguf_get_arr_str(g, "tokenizer.ggml.tokens", i, &s);
            tokens[i] = (tok_str){s.ptr, (size_t)s.len};
        }
    }
    if (!gguf_get_arr(g, "tokenizer.ggml.merges", &ty, &nm, &data)) {
        merges = calloc(nm ? nm : 1, sizeof *merges);
        for (uint64_t i = 0; i < nm; i++) {
            gguf_str s;
            gguf_get_arr_str(g, "tokenizer.ggml.merges", i, &s);
            merges[i] = (tok_str){s.ptr, (size_t)s.len};
        }
    }
    uint64_t nt;
    if (!gguf_get_arr(g, "tokenizer.ggml.token_type", &ty, &nt, &data) && nt == n) {
        types = malloc(n * sizeof *types);
        memcpy(types, data, n * sizeof *types);
    }
    if (!gguf_get_arr(g, "tokenizer.ggml.scores", &ty, &nt, &data) && nt == n) {
        scores = malloc(n * sizeof *scores);
        memcpy(scores, data, n * sizeof *scores);
    }
    sp.n_tokens = n;
    sp.tokens = tokens;
    sp.token_types = types;
    sp.scores = scores;
    sp.n_merges = nm;
    sp.merges = merges;
    sp.bos_id = gint(g, "tokenizer.ggml.bos_token_id", -1);
    sp.eos_id = gint(g, "tokenizer.ggml.eos_token_id", -1);
    sp.unk_id = gint(g, "tokenizer.ggml.unknown_token_id", -1);
    sp.pad_id = gint(g, "tokenizer.ggml.padding_token_id", -1);
    sp.add_bos = gint(g, "tokenizer.ggml.add_bos_token", -1);
    sp.add_eos = gint(g, "tokenizer.ggml.add_eos_token", -1);
    sp.add_space_prefix = gint(g, "tokenizer.ggml.add_space_prefix", -1);
    double t0 = now_s();
    int rc = tok_load_spec(&sp, path, tok, err);
    *spec_ms = (now_s() - t0) * 1e3;
    free(tokens);
    free(merges);
    free(types);
    free(scores);
    gguf_close(g);
    return rc;
}

static void put_u32(uint32_t v) { fwrite(&v, 4, 1, stdout); }

static void put_blob(const char *p, size_t n)
{
    put_u32((uint32_t)n);
    fwrite(p, 1, n, stdout);
}

static int run_cases(const tokenizer *t, const char *path, int parse_special)
{
    size_t n;
    char *buf = read_file(path, &n), err[TOK_ERR_LEN];
    if (!buf) {
        fprintf(stderr, "tok_driver: cannot read %s\n", path);
        return 1;
    }
    for (size_t off = 0; off + 4 <= n;) {
        uint32_t len;
        memcpy(&len, buf + off, 4);
        off += 4;
        int32_t *ids;
        size_t nid;
        err[0] = 0;
        if (tok_encode(t, buf + off, len, 0, parse_special, &ids, &nid, err)) {
            put_u32(0xFFFFFFFFu);
            put_blob(err, strlen(err));
            off += len;
            continue;
        }
        off += len;
        put_u32((uint32_t)nid);
        fwrite(ids, 4, nid, stdout);
        char *text;
        size_t tl;
        if (tok_decode(t, ids, nid, &text, &tl, err)) {
            fprintf(stderr, "tok_driver: %s\n", err);
            return 1;
        }
        put_blob(text, tl);
        free(text);
        tok_stream *s = tok_stream_new(t);
        char *acc = NULL;
        size_t al = 0;
        for (size_t i = 0; i <= nid; i++) {
            const char *o;
            size_t ol;
            if (i < nid ? tok_stream_put(s, ids[i], &o, &ol, err) : tok_stream_flush(s, &o, &ol)) {
                fprintf(stderr, "tok_driver: stream: %s\n", err);
                return 1;
            }
            acc = realloc(acc, al + ol + 1);
            memcpy(acc + al, o, ol);
            al += ol;
        }
        put_blob(acc ? acc : "", al);
        free(acc);
        tok_stream_free(s);
        free(ids);
    }
    free(buf);
    return 0;
}

static int run_bench(const tokenizer *t, const char *path)
{
    size_t n;
    char *buf = read_file(path, &n), err[TOK_ERR_LEN];
    if (!buf) {
        fprintf(stderr, "tok_driver: cannot read %s\n", path);
        return 1;
    }
    double best = 1e30;
    size_t nid = 0;
    for (int rep = 0; rep < 3; rep++) {
        int32_t *ids;
        double t0 = now_s();
        if (tok_encode(t, buf, n, 0, 1, &ids, &nid, err)) {
            fprintf(stderr, "tok_driver: %s\n", err);
            return 1;
        }
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
        free(ids);
    }
    printf("%zu %zu %.6f %.2f\n", n, nid, best, n / best / 1e6);
    free(buf);
    return 0;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* best of 5 rounds of n renders, microseconds of CPU time per render (parse + render) */
static int chat_bench(const char *path, int n)
{
    size_t len;
    char *tmpl = read_file(path, &len), err[TOK_ERR_LEN];
    if (!tmpl || n < 1) {
        fprintf(stderr, "tok_driver: chat-bench: cannot read %s\n", path);
        free(tmpl);
        return 1;
    }
    const tok_chat_msg msgs[] = {{"system", "You are a pirate."}, {"user", "Hi there"},
                                {"assistant", "Arr, ahoy!"}, {"user", "Where is the treasure?"}};
    tok_chat_input in = {.messages = msgs, .n_messages = 4, .add_generation_prompt = 1, .date = "02 Jan 2025",
                         .bos_token = "<s>", .eos_token = "</s>"};
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = cpu_s();
        for (int k = 0; k < n; k++) {
            char *out;
            if (tok_chat_render_jinja(NULL, tmpl, &in, &out, err)) {
                fprintf(stderr, "tok_driver: chat-bench: %s\n", err);
                free(tmpl);
                return 1;
            }
            free(out);
        }
        double us = (cpu_s() - t0) * 1e6 / n;
        if (us < best)
            best = us;
    }
    printf("%.1f\n", best);
    free(tmpl);
    return 0;
}

static int jinja_file(const char *tpath, const char *vpath)
{
    size_t tn, vn;
    char *tmpl = read_file(tpath, &tn), *vars = read_file(vpath, &vn), err[TOK_ERR_LEN], *out = NULL;
    jinja_template *jt = NULL;
    int rc = 1;
    if (!tmpl || !vars)
        fprintf(stderr, "tok_driver: jinja: cannot read the files\n");
    else if (jinja_parse(tmpl, tn, &jt, err))
        fprintf(stderr, "tok_driver: %s\n", err);
    else {
        jinja_input in = {.vars_json = vars, .vars_len = vn, .now = 1735776000};
        size_t len;
        if (jinja_render(jt, &in, &out, &len, err))
            fprintf(stderr, "tok_driver: %s\n", err);
        else
            rc = fwrite(out, 1, len, stdout) != len;
    }
    free(out);
    jinja_free(jt);
    free(tmpl);
    free(vars);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "jinja"))
        return jinja_file(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "chat-bench"))
        return chat_bench(argv[2], atoi(argv[3]));
    const char *gguf = NULL, *json = NULL, *config = NULL, *tmpl = NULL, *date = NULL;
    int parse_special = 1, i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i++) {
        if (!strcmp(argv[i], "--gguf") && i + 1 < argc)
            gguf = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--config") && i + 1 < argc)
            config = argv[++i];
        else if (!strcmp(argv[i], "--template") && i + 1 < argc)
            tmpl = argv[++i];
        else if (!strcmp(argv[i], "--date") && i + 1 < argc)
            date = argv[++i];
        else if (!strcmp(argv[i], "--no-special"))
            parse_special = 0;
        else
            break;
    }
    if (i >= argc || (!gguf && !json)) {
        fprintf(stderr, "usage: tok_driver (--gguf F | --json F [--config F]) [--no-special] [--template NAME] [--date D] cases F | bench F | load | chat SYS USER | conv ADD_GEN ROLE CONTENT...\n");
        return 2;
    }
    char err[TOK_ERR_LEN] = "";
    tokenizer *t;
    double t0 = now_s(), load_ms = 0;
    if (gguf ? load_gguf(gguf, &t, &load_ms, err) : tok_load_json(json, config, &t, err)) {
        fprintf(stderr, "tok_driver: %s\n", err);
        return 1;
    }
    if (!gguf)
        load_ms = (now_s() - t0) * 1e3; /* file read and JSON parse included */
    int rc = 0;
    const char *mode = argv[i];
    if (!strcmp(mode, "cases") && i + 1 < argc)
        rc = run_cases(t, argv[i + 1], parse_special);
    else if (!strcmp(mode, "bench") && i + 1 < argc)
        rc = run_bench(t, argv[i + 1]);
    else if (!strcmp(mode, "load"))
        printf("%.2f %zu\n", load_ms, tok_vocab_size(t));
    else if (!strcmp(mode, "chat") && i + 2 < argc) {
        char *out;
        if (tok_chat_render_at(t, tmpl, strcmp(argv[i + 1], "-") ? argv[i + 1] : NULL, argv[i + 2], date, &out, err)) {
            fprintf(stderr, "tok_driver: %s\n", err);
            rc = 1;
        } else {
            fputs(out, stdout);
            free(out);
        }
    } else if (!strcmp(mode, "conv") && i + 2 < argc && (argc - i - 2) % 2 == 0) {
        size_t n = (size_t)(argc - i - 2) / 2;
        tok_chat_msg *msgs = malloc(n * sizeof *msgs);
        char *out;
        for (size_t k = 0; k < n; k++)
            msgs[k] = (tok_chat_msg){argv[i + 2 + 2 * k], argv[i + 3 + 2 * k]};
        rc = tok_chat_render_messages(t, tmpl, date, msgs, n, atoi(argv[i + 1]), &out, err);
        if (rc) {
            fprintf(stderr, "tok_driver: %s\n", err);
            rc = rc == TOK_CHAT_E_ARG ? 3 : 1;
        } else {
            fputs(out, stdout);
            free(out);
        }
        free(msgs);
    } else {
        fprintf(stderr, "tok_driver: unknown mode %s\n", mode);
        rc = 2;
    }
    tok_free(t);
    return rc;
}
