/* serve.c - `llmgen serve`: options, the model, the slots, the HTTP daemon, and the
 * drain on SIGTERM / SIGINT (stop accepting, let running requests finish within the
 * grace period, then cancel what is left and exit 0). The server front end, above
 * the CLI (it uses the CLI's option parser and request format); it writes only to
 * the streams main.c hands it. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "http.h"
#include "slots.h"

enum { S_HOST = CLI_OWN, S_PORT, S_PARALLEL, S_API_KEY, S_API_KEY_FILE, S_MAX_BODY, S_QUEUE, S_TIMEOUT, S_GRACE,
       S_MAX_CONN, S_KEEPALIVE, S_TEMPLATE_FILE };

static const cli_opt table[] = {
    CLI_OPT_HELP,
    CLI_OPT_MODEL("PATH", "the model to serve (.gguf, a Hugging Face or MLX directory)"),
    CLI_OPT_THREADS,
    CLI_OPT_CTX("context of each slot, in tokens (default: the model's, at most " CLI_STR(LLMGEN_DEFAULT_CONTEXT) ")"),
    CLI_OPT_KERNELS,
    CLI_OPT_EXACT,
    {S_HOST, 0, "host", "ADDR", "address to listen on (default 127.0.0.1: this machine only)"},
    {S_PORT, 0, "port", "N", "TCP port, 0..65535 (default 8080; 0: any free one, logged)"},
    {S_PARALLEL, 0, "parallel", "N", "slots: requests generating at once, stepped together, 1.." CLI_STR(LLMGEN_MAX_SEQUENCES)
                                     " (default 4)"},
    {S_API_KEY, 0, "api-key", "KEY", "require \"Authorization: Bearer KEY\" (every route but /health)"},
    {S_API_KEY_FILE, 0, "api-key-file", "FILE", "the same, the key read from the first line of FILE"},
    {S_MAX_BODY, 0, "max-body", "BYTES", "largest request body (default 1048576; more: 413)"},
    {S_QUEUE, 0, "queue", "N", "requests that may wait for a slot (default 64; more: 429)"},
    {S_TIMEOUT, 0, "timeout", "SECONDS", "a request must arrive whole within this, and an idle connection\n"
                                        "is closed after it (default 10)"},
    {S_GRACE, 0, "grace", "SECONDS", "on SIGTERM / SIGINT, running requests may finish within this (default 30)"},
    {S_MAX_CONN, 0, "max-connections", "N", "open connections at most (default 256)"},
    {S_KEEPALIVE, 0, "keepalive", "SECONDS", "an SSE comment on a stream quiet this long (default 2)"},
    {S_TEMPLATE_FILE, 0, "chat-template-file", "FILE", "render chats with this Jinja template instead of the model's\n"
                                                       "(e.g. one that shows 'tools' to the model)"},
    {0, 0, NULL, NULL, NULL},
};

static int print_help(FILE *f) {
    if (fputs("usage: llmgen serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [-c CTX]\n"
              "                    [--api-key KEY | --api-key-file FILE] [options]\n"
              "An OpenAI-compatible HTTP server: POST /v1/chat/completions, /v1/completions, /tokenize,\n"
              "/detokenize; GET /v1/models, /health (503 until the model is loaded), /metrics (Prometheus).\n"
              "Requests join the running batch at step boundaries; each slot keeps its prefix cache.\n\n",
              f) == EOF || cli_print_options(f, table))
        return -1;
    return fputs("\nExit status: 0 after SIGTERM / SIGINT (requests drained), 1 usage error, 2 bad model file,\n"
                 "3 I/O error (cannot listen, unreadable key file), 5 out of memory.\n", f) == EOF ? -1 : 0;
}

typedef struct {
    cli_common common;
    serve_http_options http;
    int parallel, queue, grace;
    const char *key_file, *template_file;
} serve_args;

static int parse(int argc, char **argv, serve_args *a, char *err) {
    cli_args args;
    const char *v;
    double x;
    int c;
    memset(a, 0, sizeof *a);
    a->http = (serve_http_options){.host = "127.0.0.1", .port = 8080, .max_body = 1 << 20, .timeout_s = 10,
                                   .max_connections = 256, .keepalive_ms = 2000};
    a->parallel = 4;
    a->queue = 64;
    a->grace = 30;
    cli_args_init(&args, argc, argv);
    while ((c = cli_next(&args, table, &v, err)) != CLI_DONE) {
        if (c == CLI_BAD) return -1;
        if (c == CLI_ARG) return snprintf(err, ERR_LEN, "unexpected argument '%s' (see llmgen serve --help)", v), -1;
        int taken = cli_common_take(&a->common, c, v, err);
        if (taken < 0) return -1;
        if (taken) continue;
        switch (c) {
        case S_HOST: a->http.host = v; break;
        case S_PORT:
            if (cli_value("--port", v, 0, 65535, 1, &x, err)) return -1;
            a->http.port = (int)x;
            break;
        case S_PARALLEL:
            if (cli_value("--parallel", v, 1, LLMGEN_MAX_SEQUENCES, 1, &x, err)) return -1;
            a->parallel = (int)x;
            break;
        case S_API_KEY: a->http.api_key = v; break;
        case S_API_KEY_FILE: a->key_file = v; break;
        case S_TEMPLATE_FILE: a->template_file = v; break;
        case S_MAX_BODY:
            if (cli_value("--max-body", v, 64, 1 << 30, 1, &x, err)) return -1;
            a->http.max_body = (size_t)x;
            break;
        case S_QUEUE:
            if (cli_value("--queue", v, 0, 100000, 1, &x, err)) return -1;
            a->queue = (int)x;
            break;
        case S_TIMEOUT:
            if (cli_value("--timeout", v, 1, 86400, 1, &x, err)) return -1;
            a->http.timeout_s = (int)x;
            break;
        case S_GRACE:
            if (cli_value("--grace", v, 0, 86400, 1, &x, err)) return -1;
            a->grace = (int)x;
            break;
        case S_MAX_CONN:
            if (cli_value("--max-connections", v, 1, 100000, 1, &x, err)) return -1;
            a->http.max_connections = (int)x;
            break;
        case S_KEEPALIVE:
            if (cli_value("--keepalive", v, 0.05, 3600, 0, &x, err)) return -1;
            a->http.keepalive_ms = (int)(x * 1000);
            break;
        }
        if (a->common.help) return 0;
    }
    if (a->common.help) return 0;
    if (!a->common.model) return snprintf(err, ERR_LEN, "no model given: use -m PATH (see llmgen serve --help)"), -1;
    if (a->http.api_key && a->key_file) return snprintf(err, ERR_LEN, "give only one of --api-key, --api-key-file"), -1;
    if (a->http.api_key && !*a->http.api_key) return snprintf(err, ERR_LEN, "--api-key: the key is empty"), -1;
    return 0;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The model's name in /v1/models: its file or directory name. */
static const char *model_name(const char *path, char *buf, size_t n) {
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t start = len;
    while (start > 0 && path[start - 1] != '/') start--;
    snprintf(buf, n, "%.*s", (int)(len - start), path + start);
    return buf;
}

int serve_main(int argc, char **argv, const cli_io *io) {
    serve_args a;
    char err[ERR_LEN], *key = NULL, *template_text = NULL;
    if (parse(argc, argv, &a, err)) return cli_fail(io, EXIT_USAGE, "serve: %s", err);
    if (a.common.help) return print_help(io->out) || fflush(io->out) ? EXIT_IO : EXIT_OK;
    if (a.key_file) {
        llmgen_status st = cli_read_file(a.key_file, "--api-key-file", &key, err);
        if (st) return cli_fail(io, cli_exit_code(st), "serve: %s", err);
        key[strcspn(key, "\r\n")] = '\0';
        if (!*key) {
            free(key);
            return cli_fail(io, EXIT_USAGE, "serve: --api-key-file: %s: the first line is empty", a.key_file);
        }
        a.http.api_key = key;
    }
    if (a.template_file) {
        llmgen_status st = cli_read_file(a.template_file, "--chat-template-file", &template_text, err);
        if (st) {
            free(key);
            return cli_fail(io, cli_exit_code(st), "serve: %s", err);
        }
    }
    a.http.log = io->diag;
    serve_http *H = NULL;
    if (serve_http_start(&a.http, &H, err)) {
        free(key);
        free(template_text);
        return cli_fail(io, EXIT_IO, "serve: %s", err);
    }
    fprintf(io->diag, "llmgen: serve: listening on http://%s%s%s:%d (loading %s)\n", strchr(a.http.host, ':') ? "[" : "",
            a.http.host, strchr(a.http.host, ':') ? "]" : "", serve_http_port(H), a.common.model);
    fflush(io->diag);
    llmgen_model *m = NULL;
    serve_slots *S = NULL;
    int rc = EXIT_OK;
    llmgen_status st = cli_model_open(&a.common, NULL, 0, &m, err);
    if (!st) {
        llmgen_capabilities caps;
        llmgen_model_capabilities(m, &caps);
        cli_threads_note(io->diag, a.common.threads, &caps);
        if (!caps.has_tokenizer) {
            snprintf(err, sizeof err, "%s: this model has no tokenizer: it cannot be served", a.common.model);
            st = LLMGEN_E_USAGE;
        }
    }
    if (!st) st = serve_slots_new(m, a.parallel, a.common.ctx, a.queue, &S, err, sizeof err);
    if (st) {
        rc = cli_fail(io, cli_exit_code(st), "serve: %s", err);
        goto out;
    }
    request base;
    memset(&base, 0, sizeof base);
    llmgen_sampler_defaults(&base.sp);
    base.sp.temperature = 1; /* OpenAI's default */
    base.max_tokens = -1;    /* until the end of sequence or a full context; completions: 16 (openai.c) */
    base.reuse_prefix = 1;
    base.template_text = template_text;
    char name[256];
    serve_http_ready(H, m, S, model_name(a.common.model, name, sizeof name), &base);
    fprintf(io->diag, "llmgen: serve: ready: %s, %d slots of %d tokens\n", name, a.parallel, serve_slots_ctx(S));
    fflush(io->diag);
    while (!*io->interrupted) {
        serve_http_tick(H);
        sleep_ms(100);
    }
    fprintf(io->diag, "llmgen: serve: stopping: no new connections; %d requests running (grace %d s)\n",
            serve_slots_active(S), a.grace);
    fflush(io->diag);
    serve_http_drain(H);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        serve_http_tick(H);
        if (!serve_slots_active(S) && !serve_http_busy(H)) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > a.grace) {
            fprintf(io->diag, "llmgen: serve: grace period over: %d requests cancelled\n", serve_slots_active(S));
            serve_slots_cancel_all(S);
            break;
        }
        sleep_ms(50);
    }
out:
    serve_http_stop(H); /* closes every connection: nothing reads the slots after it */
    serve_slots_free(S);
    llmgen_model_free(m);
    free(key);
    free(template_text);
    if (!rc) fprintf(io->diag, "llmgen: serve: stopped\n");
    return rc;
}
