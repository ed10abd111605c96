/* http.c - the server's HTTP side (http.h) on libmicrohttpd, one thread per
 * connection: a handler may block while its request generates (a non-streamed
 * answer waits; a stream's reader waits for the next piece), which keeps the code a
 * plain loop. The slots never wait for a connection: a piece is appended to its
 * job's buffer and the reader takes what has gathered, so a slow reader delays
 * only itself. A client gone is noticed by the write that fails (a stream) or by a
 * peek at its socket while waiting (a plain answer); its jobs are cancelled and
 * their slots free at the next step. */
#include "http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "openai.h"

/* One TCP connection, for the receive deadline. */
typedef struct conn_rec {
    int fd;
    double since;              /* receiving (a request not yet whole) since then */
    int receiving, dropped;
    struct conn_rec *prev, *next;
} conn_rec;

enum { N_CODES = 10 };
static const int codes[N_CODES] = {200, 400, 401, 404, 405, 413, 429, 500, 503, 0};

struct serve_http {
    serve_http_options o;
    struct MHD_Daemon *d;
    pthread_mutex_t mu;        /* everything below */
    int ready, draining, busy; /* busy: handlers running */
    int streams;               /* stream responses not yet freed (a drain waits for their [DONE]) */
    llmgen_model *m;
    serve_slots *S;
    char name[256];
    request base;
    conn_rec *conns;
    unsigned long long next_id;
    long by_code[N_CODES];     /* responses by status (the last: any other) */
    double started;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void logf_(serve_http *H, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(serve_http *H, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llmgen: serve: ", H->o.log);
    vfprintf(H->o.log, fmt, ap);
    fputc('\n', H->o.log);
    fflush(H->o.log);
    va_end(ap);
}

static void mhd_log(void *cls, const char *fmt, va_list ap) {
    serve_http *H = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    logf_(H, "http: %s", line);
}

static void count_status(serve_http *H, int status) {
    int i = 0;
    while (i < N_CODES - 1 && codes[i] != status) i++;
    pthread_mutex_lock(&H->mu);
    H->by_code[i]++;
    pthread_mutex_unlock(&H->mu);
}

/* ---- responses ------------------------------------------------------------------------ */

static enum MHD_Result respond_text(serve_http *H, struct MHD_Connection *c, int status, const char *type,
                                    const char *body, size_t len, const char *retry_after) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry_after) MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry_after);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    count_status(H, status);
    return ok;
}

static enum MHD_Result respond_json(serve_http *H, struct MHD_Connection *c, int status, json_t *o,
                                    const char *retry_after) {
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) return MHD_NO;
    enum MHD_Result ok = respond_text(H, c, status, "application/json", s, strlen(s), retry_after);
    free(s);
    return ok;
}

static enum MHD_Result respond_error(serve_http *H, struct MHD_Connection *c, const openai_error *e) {
    const char *retry = e->status == 429 ? "1" : NULL;
    return respond_json(H, c, e->status, openai_error_json(e), retry);
}

static enum MHD_Result fail(serve_http *H, struct MHD_Connection *c, int status, const char *type, const char *param,
                            const char *code, const char *msg) {
    openai_error e;
    openai_fail(&e, status, type, param, code, "%s", msg);
    return respond_error(H, c, &e);
}

/* ---- a generation: its jobs, for a plain answer or a stream ----------------------------- */

typedef struct {
    serve_http *H;
    openai_req r;
    serve_job *jobs[OPENAI_MAX_N * OPENAI_MAX_PROMPTS];
    int n_jobs;
    int final_sent[OPENAI_MAX_N * OPENAI_MAX_PROMPTS];
    openai_think think[OPENAI_MAX_N * OPENAI_MAX_PROMPTS]; /* chat streams: <think> apart */
    openai_toolhold hold[OPENAI_MAX_N * OPENAI_MAX_PROMPTS]; /* chat streams with tools: calls apart */
    long prompt_tokens;        /* once per prompt, as OpenAI counts */
    pthread_cond_t wake;
    char id[64];
    long created;
    const char *model;         /* what the answer reports */
    char *out;                 /* SSE bytes formatted, not yet handed to the connection */
    size_t n_out, off_out, cap_out;
    int phase;                 /* 0 before the first event, 1 streaming, 2 [DONE] formatted */
    double last_out;           /* when bytes were last formatted (a stream holding back a tool call is quiet) */
    int refs;                  /* the request's and the stream response's */
} gen;

static void gen_unref(gen *g) {
    serve_http *H = g->H;
    pthread_mutex_lock(&H->mu);
    int last = --g->refs == 0;
    pthread_mutex_unlock(&H->mu);
    if (!last) return;
    for (int i = 0; i < g->n_jobs; i++) serve_job_release(H->S, g->jobs[i]); /* cancels what still runs */
    openai_req_free(&g->r);
    for (int i = 0; i < g->n_jobs; i++) openai_think_free(&g->think[i]);
    for (int i = 0; i < g->n_jobs; i++) openai_toolhold_free(&g->hold[i]);
    pthread_cond_destroy(&g->wake);
    free(g->out);
    free(g);
}

static int out_add(gen *g, const char *s, size_t n) {
    if (g->n_out + n > g->cap_out) {
        size_t cap = g->cap_out ? g->cap_out : 1024;
        while (cap < g->n_out + n) cap *= 2;
        char *p = realloc(g->out, cap);
        if (!p) return -1;
        g->out = p;
        g->cap_out = cap;
    }
    memcpy(g->out + g->n_out, s, n);
    g->n_out += n;
    return 0;
}

#define out_lit(g, s) out_add(g, s, sizeof s - 1)

/* One SSE event "data: {json}\n\n" (o is consumed). */
static void out_event(gen *g, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s) return;
    out_add(g, "data: ", 6);
    out_add(g, s, strlen(s));
    out_add(g, "\n\n", 2);
    free(s);
}

static json_t *chunk(gen *g, json_t *choice) {
    json_t *o = openai_envelope(g->r.kind, 1, g->id, g->created, g->model), *a = json_array();
    if (choice) json_array_append_new(a, choice);
    json_object_set_new(o, "choices", a);
    return o;
}

static void usage_totals(gen *g, long *completion, long *cached) {
    *completion = *cached = 0;
    for (int i = 0; i < g->n_jobs; i++) {
        *completion += g->jobs[i]->r.n_ids;
        if (i % g->r.n == 0) *cached += g->jobs[i]->r.n_cached;
    }
}

/* Format the next events into g->out: the pieces gathered, the ends, [DONE]; or, after a
 * quiet keepalive_ms, an SSE comment. */
static void sse_fill(gen *g) {
    serve_http *H = g->H;
    serve_slots *S = H->S;
    if (g->phase == 0) {
        g->phase = 1;
        g->last_out = now_s();
        if (g->r.kind == OPENAI_CHAT) /* the role first, at once, as OpenAI sends it */
            for (int i = 0; i < g->n_jobs; i++) out_event(g, chunk(g, openai_chunk_choice(OPENAI_CHAT, i, "", 0, 1, NULL)));
        else out_lit(g, ": started\n\n");
        return;
    }
    char *texts[OPENAI_MAX_N * OPENAI_MAX_PROMPTS];
    size_t lens[OPENAI_MAX_N * OPENAI_MAX_PROMPTS];
    int ended[OPENAI_MAX_N * OPENAI_MAX_PROMPTS], any = 0, all_done;
    serve_slots_lock(S);
    for (int pass = 0; pass < 2; pass++) {
        all_done = 1;
        for (int i = 0; i < g->n_jobs; i++) {
            serve_job *j = g->jobs[i];
            texts[i] = NULL;
            lens[i] = 0;
            ended[i] = j->done && !g->final_sent[i];
            if (j->n_pending) {
                texts[i] = malloc(j->n_pending);
                if (texts[i]) memcpy(texts[i], j->pending, lens[i] = j->n_pending);
                j->n_pending = 0;
            }
            any |= texts[i] != NULL || ended[i];
            all_done &= j->done;
        }
        if (any || all_done || pass) break;
        serve_slots_wait(S, &g->wake, H->o.keepalive_ms);
    }
    serve_slots_unlock(S);
    if (!any && !all_done) {
        out_lit(g, ": keep-alive\n\n"); /* also how a gone client is noticed during a long prefill */
        g->last_out = now_s();
        return;
    }
    size_t n_out = g->n_out;
    for (int i = 0; i < g->n_jobs; i++) {
        if (g->r.kind == OPENAI_CHAT && (texts[i] || ended[i])) {
            openai_think *t = &g->think[i];
            if (!openai_think_feed(t, texts[i] ? texts[i] : "", lens[i], ended[i])) {
                const char *c = t->c;
                size_t n_c = t->n_c;
                if (t->n_r) out_event(g, chunk(g, openai_chunk_reasoning(i, t->r, t->n_r)));
                if (g->r.tool_calls && openai_toolhold_feed(&g->hold[i], g->r.tool_format, c, n_c, ended[i], &c, &n_c))
                    n_c = 0;
                if (n_c) out_event(g, chunk(g, openai_chunk_choice(OPENAI_CHAT, i, c, n_c, 0, NULL)));
                if (g->hold[i].calls) out_event(g, chunk(g, openai_chunk_tool_calls(i, g->hold[i].calls, g->id)));
            }
        } else if (texts[i]) {
            out_event(g, chunk(g, openai_chunk_choice(g->r.kind, i, texts[i], lens[i], 0, NULL)));
        }
        free(texts[i]);
        if (!ended[i]) continue;
        serve_job *j = g->jobs[i]; /* done: its result is final, read without the lock */
        g->final_sent[i] = 1;
        if (j->st) {
            openai_error e;
            openai_fail(&e, 500, "server_error", NULL, NULL, "%s", j->err);
            out_event(g, openai_error_json(&e));
        } else {
            const char *finish = g->hold[i].calls ? "tool_calls" : openai_finish_reason(j->r.stop_reason);
            out_event(g, chunk(g, openai_chunk_choice(g->r.kind, i, NULL, 0, 0, finish)));
        }
    }
    int finals = 1;
    for (int i = 0; i < g->n_jobs; i++) finals &= g->final_sent[i];
    if (all_done && finals) {
        if (g->r.include_usage) {
            long completion, cached;
            usage_totals(g, &completion, &cached);
            json_t *o = chunk(g, NULL);
            json_object_set_new(o, "usage", openai_usage(g->prompt_tokens, completion, cached));
            out_event(g, o);
        }
        out_lit(g, "data: [DONE]\n\n");
        g->phase = 2;
    }
    if (g->n_out > n_out) g->last_out = now_s();
    else if (now_s() - g->last_out >= H->o.keepalive_ms * 1e-3) { /* pieces came, all held back */
        out_lit(g, ": keep-alive\n\n");
        g->last_out = now_s();
    }
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max) {
    gen *g = cls;
    (void)pos;
    for (;;) {
        if (g->off_out < g->n_out) {
            size_t n = g->n_out - g->off_out < max ? g->n_out - g->off_out : max;
            memcpy(buf, g->out + g->off_out, n);
            g->off_out += n;
            return (ssize_t)n;
        }
        g->n_out = g->off_out = 0;
        if (g->phase == 2) return MHD_CONTENT_READER_END_OF_STREAM;
        sse_fill(g);
    }
}

static void sse_free(void *cls) {
    gen *g = cls;
    serve_http *H = g->H;
    gen_unref(g);
    pthread_mutex_lock(&H->mu);
    H->streams--;
    pthread_mutex_unlock(&H->mu);
}

/* 1 when the peer of c has closed its side (or the socket failed). */
static int peer_gone(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    char b;
    ssize_t k = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result answer_whole(gen *g, struct MHD_Connection *c) {
    serve_http *H = g->H;
    serve_slots *S = H->S;
    serve_slots_lock(S);
    for (;;) {
        int all = 1;
        for (int i = 0; i < g->n_jobs; i++) all &= g->jobs[i]->done;
        if (all) break;
        if (peer_gone(c)) {
            serve_slots_unlock(S);
            return MHD_NO; /* gen_unref (by the caller) cancels the jobs */
        }
        serve_slots_wait(S, &g->wake, 100);
    }
    serve_slots_unlock(S);
    json_t *o = openai_envelope(g->r.kind, 0, g->id, g->created, g->model), *choices = json_array();
    for (int i = 0; i < g->n_jobs; i++) {
        serve_job *j = g->jobs[i];
        if (j->st) {
            json_decref(o);
            json_decref(choices);
            return fail(H, c, j->st == LLMGEN_E_CONTEXT ? 400 : 500, j->st == LLMGEN_E_CONTEXT ? "invalid_request_error"
                        : "server_error", NULL, j->st == LLMGEN_E_CONTEXT ? "context_length_exceeded" : NULL, j->err);
        }
        json_array_append_new(choices, openai_choice(&g->r, H->m, i, &j->r, g->id));
    }
    long completion, cached;
    usage_totals(g, &completion, &cached);
    json_object_set_new(o, "choices", choices);
    json_object_set_new(o, "usage", openai_usage(g->prompt_tokens, completion, cached));
    return respond_json(H, c, 200, o, NULL);
}

static uint64_t random_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return s & ((1ull << 53) - 1);
}

/* POST /v1/completions, /v1/chat/completions. */
static enum MHD_Result generate(serve_http *H, struct MHD_Connection *c, openai_kind kind, const char *body,
                                size_t len) {
    json_error_t je;
    openai_error e;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        openai_fail(&e, 400, "invalid_request_error", NULL, NULL, "the body is not valid JSON: %s (line %d, column %d)",
                    je.text, je.line, je.column);
        return respond_error(H, c, &e);
    }
    gen *g = calloc(1, sizeof *g);
    if (!g) {
        json_decref(root);
        return MHD_NO;
    }
    g->H = H;
    g->refs = 1;
    pthread_cond_init(&g->wake, NULL);
    int bad = openai_parse(root, kind, &H->base, &g->r, &e);
    json_decref(root);
    if (bad) {
        gen_unref(g);
        return respond_error(H, c, &e);
    }
    pthread_mutex_lock(&H->mu);
    snprintf(g->id, sizeof g->id, "%s-%llx%06llx", kind == OPENAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)time(NULL), H->next_id++);
    pthread_mutex_unlock(&H->mu);
    g->created = (long)time(NULL);
    g->model = g->r.model ? g->r.model : H->name;
    int ctx = serve_slots_ctx(H->S);
    for (int p = 0; p < g->r.n_prompts; p++) {
        request q = g->r.q;
        if (g->r.prompts) {
            json_t *s = json_array_get(g->r.prompts, (size_t)p);
            q.text = json_string_value(s);
            q.text_len = json_string_length(s);
        }
        int32_t *ids = NULL;
        int n = 0;
        char err[ERR_LEN], *rendered = NULL;
        llmgen_status st = request_prompt(H->m, &q, &ids, &n, g->r.tools ? &rendered : NULL, err);
        if (!st && g->r.tools) { /* the call format is the one the rendered prompt asks for */
            int bad = openai_tools_prepare(&g->r, rendered, &e);
            free(rendered);
            if (bad) {
                free(ids);
                gen_unref(g);
                return respond_error(H, c, &e);
            }
            q.grammar = g->r.q.grammar;
        }
        if (!st && n > ctx) {
            snprintf(err, sizeof err, "this model's maximum context length is %d tokens; the prompt has %d", ctx, n);
            st = LLMGEN_E_CONTEXT;
        }
        if (st) {
            free(ids);
            gen_unref(g);
            return fail(H, c, 400, "invalid_request_error", kind == OPENAI_CHAT ? "messages" : "prompt",
                        st == LLMGEN_E_CONTEXT ? "context_length_exceeded" : NULL, err);
        }
        g->prompt_tokens += n;
        for (int k = 0; k < g->r.n; k++) {
            request qk = q;
            if (qk.sp.temperature > 0) qk.sp.seed = qk.seed_given ? qk.sp.seed + (uint64_t)k : random_seed();
            int32_t *copy = k + 1 < g->r.n ? malloc((size_t)n * sizeof *copy) : ids;
            if (copy && copy != ids) memcpy(copy, ids, (size_t)n * sizeof *copy);
            serve_job *j = copy ? serve_job_new(&qk, copy, n, &g->wake) : NULL;
            if (!j) {
                if (copy != ids) free(ids);
                gen_unref(g);
                return fail(H, c, 500, "server_error", NULL, NULL, "out of memory");
            }
            g->jobs[g->n_jobs++] = j;
        }
    }
    if (serve_slots_submit(H->S, g->jobs, g->n_jobs)) {
        for (int i = 0; i < g->n_jobs; i++) serve_job_release(H->S, g->jobs[i]), serve_job_release(H->S, g->jobs[i]);
        g->n_jobs = 0;
        gen_unref(g);
        return fail(H, c, 429, "rate_limit_error", NULL, "queue_full", "the queue of requests is full: retry later");
    }
    if (!g->r.stream) {
        enum MHD_Result ok = answer_whole(g, c);
        gen_unref(g);
        return ok;
    }
    g->refs = 2; /* this handler's and the response's */
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, g, sse_free);
    if (!r) {
        gen_unref(g);
        gen_unref(g);
        return MHD_NO;
    }
    pthread_mutex_lock(&H->mu);
    H->streams++;
    pthread_mutex_unlock(&H->mu);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    count_status(H, 200);
    gen_unref(g);
    return ok;
}

/* ---- the other routes ------------------------------------------------------------------ */

static enum MHD_Result tokenize(serve_http *H, struct MHD_Connection *c, const char *body, size_t len, int detok) {
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return fail(H, c, 400, "invalid_request_error", NULL, NULL, "the body must be a JSON object");
    }
    char err[ERR_LEN];
    json_t *out = json_object();
    if (!detok) {
        json_t *content = json_object_get(root, "content"), *add = json_object_get(root, "add_special"),
               *pieces = json_object_get(root, "with_pieces");
        int32_t *ids = NULL;
        size_t n = 0;
        if (!json_is_string(content) || (add && !json_is_boolean(add)) || (pieces && !json_is_boolean(pieces))) {
            json_decref(root);
            json_decref(out);
            return fail(H, c, 400, "invalid_request_error", "content", NULL,
                        "expected {\"content\": string, \"add_special\": boolean, \"with_pieces\": boolean}");
        }
        if (llmgen_tokenize(H->m, json_string_value(content), json_string_length(content), json_is_true(add), 1, &ids, &n,
                            err, sizeof err)) {
            json_decref(root);
            json_decref(out);
            return fail(H, c, 400, "invalid_request_error", "content", NULL, err);
        }
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            if (!json_is_true(pieces)) {
                json_array_append_new(a, json_integer(ids[i]));
                continue;
            }
            size_t bl = 0;
            const char *b = llmgen_token_bytes(H->m, ids[i], &bl);
            json_t *t = json_object();
            json_object_set_new(t, "id", json_integer(ids[i]));
            json_object_set_new(t, "piece", json_text(b ? b : "", bl));
            json_array_append_new(a, t);
        }
        llmgen_free(ids);
        json_object_set_new(out, "tokens", a);
    } else {
        json_t *toks = json_object_get(root, "tokens"), *x;
        size_t n = json_array_size(toks), i;
        int32_t *ids = malloc((n + 1) * sizeof *ids);
        int ok = json_is_array(toks) && ids;
        json_array_foreach(toks, i, x) {
            if (!ok) break;
            ok = json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= INT32_MAX;
            if (ok) ids[i] = (int32_t)json_integer_value(x);
        }
        char *text = NULL;
        size_t tl = 0;
        if (!ok || llmgen_detokenize(H->m, ids, n, &text, &tl, err, sizeof err)) {
            if (!ok) snprintf(err, sizeof err, "expected {\"tokens\": [token ids]}");
            free(ids);
            json_decref(root);
            json_decref(out);
            return fail(H, c, 400, "invalid_request_error", "tokens", NULL, err);
        }
        free(ids);
        json_object_set_new(out, "content", json_text(text, tl));
        llmgen_free(text);
    }
    json_decref(root);
    return respond_json(H, c, 200, out, NULL);
}

static enum MHD_Result models(serve_http *H, struct MHD_Connection *c) {
    json_t *o = json_object(), *a = json_array(), *m = json_object();
    llmgen_capabilities caps;
    llmgen_model_capabilities(H->m, &caps);
    json_object_set_new(m, "id", json_text(H->name, strlen(H->name)));
    json_object_set_new(m, "object", json_string("model"));
    json_object_set_new(m, "created", json_integer((json_int_t)time(NULL)));
    json_object_set_new(m, "owned_by", json_string("llmgen"));
    json_t *meta = json_object();
    json_object_set_new(meta, "architecture", json_string(caps.architecture));
    json_object_set_new(meta, "n_ctx", json_integer(serve_slots_ctx(H->S)));
    json_object_set_new(meta, "n_vocab", json_integer(caps.vocab_size));
    json_object_set_new(m, "meta", meta);
    json_array_append_new(a, m);
    json_object_set_new(o, "object", json_string("list"));
    json_object_set_new(o, "data", a);
    return respond_json(H, c, 200, o, NULL);
}

static enum MHD_Result metrics(serve_http *H, struct MHD_Connection *c) {
    serve_stats st;
    serve_slots_stats(H->S, &st);
    char buf[4096];
    size_t n = 0;
#define PUT(...) n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, __VA_ARGS__)
    PUT("# HELP llmgen_requests_total HTTP responses by status.\n# TYPE llmgen_requests_total counter\n");
    pthread_mutex_lock(&H->mu);
    for (int i = 0; i < N_CODES; i++)
        if (codes[i]) PUT("llmgen_requests_total{status=\"%d\"} %ld\n", codes[i], H->by_code[i]);
        else PUT("llmgen_requests_total{status=\"other\"} %ld\n", H->by_code[i]);
    pthread_mutex_unlock(&H->mu);
    PUT("# TYPE llmgen_generations_total counter\nllmgen_generations_total %ld\n", st.requests_done);
    PUT("# TYPE llmgen_prompt_tokens_total counter\nllmgen_prompt_tokens_total %ld\n", st.prompt_tokens);
    PUT("# TYPE llmgen_prompt_tokens_cached_total counter\nllmgen_prompt_tokens_cached_total %ld\n", st.cached_tokens);
    PUT("# TYPE llmgen_generated_tokens_total counter\nllmgen_generated_tokens_total %ld\n", st.generated_tokens);
    PUT("# TYPE llmgen_prefill_seconds_total counter\nllmgen_prefill_seconds_total %.6f\n", st.prefill_s);
    PUT("# TYPE llmgen_decode_seconds_total counter\nllmgen_decode_seconds_total %.6f\n", st.decode_s);
    PUT("# TYPE llmgen_queue_length gauge\nllmgen_queue_length %d\n", st.queued);
    PUT("# TYPE llmgen_slots_busy gauge\nllmgen_slots_busy %d\n", st.busy);
    PUT("# TYPE llmgen_slots_total gauge\nllmgen_slots_total %d\n", st.total);
    PUT("# TYPE llmgen_batch_passes_total counter\nllmgen_batch_passes_total %ld\n", st.passes);
    PUT("# TYPE llmgen_batch_sequence_steps_total counter\nllmgen_batch_sequence_steps_total %ld\n", st.seq_steps);
#undef PUT
    if (n >= sizeof buf) n = sizeof buf - 1;
    return respond_text(H, c, 200, "text/plain; version=0.0.4", buf, n, NULL);
}

/* ---- the access handler ---------------------------------------------------------------- */

typedef struct {
    char *body;
    size_t n, cap;
    int too_big, checked;
} req_ctx;

/* Equal strings, in time that depends on the given key's length only. */
static int key_equal(const char *given, const char *key) {
    size_t gl = strlen(given), kl = strlen(key);
    unsigned char d = (unsigned char)(gl != kl);
    for (size_t i = 0; i < gl; i++) d |= (unsigned char)given[i] ^ (unsigned char)(kl ? key[i % kl] : 0);
    return d == 0;
}

static int authorized(serve_http *H, struct MHD_Connection *c) {
    if (!H->o.api_key) return 1;
    const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!a || strncasecmp(a, "Bearer ", 7)) return 0;
    return key_equal(a + 7, H->o.api_key);
}

static conn_rec *conn_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result route(serve_http *H, struct MHD_Connection *c, const char *url, const char *method,
                             req_ctx *x) {
    int get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    if (!strncmp(url, "/v1/", 4)) url += 3; /* /v1/models and /models alike, as llama-server */
    pthread_mutex_lock(&H->mu);
    int ready = H->ready, draining = H->draining;
    pthread_mutex_unlock(&H->mu);
    if (!strcmp(url, "/health")) {
        if (!ready || draining)
            return fail(H, c, 503, "unavailable_error", NULL, NULL, ready ? "shutting down" : "loading the model");
        return respond_text(H, c, 200, "application/json", "{\"status\":\"ok\"}", 15, NULL);
    }
    static const char *const routes[] = {"/models", "/metrics", "/completions", "/chat/completions", "/tokenize",
                                         "/detokenize"};
    int r = -1;
    for (int i = 0; i < 6; i++)
        if (!strcmp(url, routes[i])) r = i;
    if (r < 0) return fail(H, c, 404, "not_found_error", NULL, NULL, "no such route");
    if ((r < 2 && !get) || (r >= 2 && !post))
        return fail(H, c, 405, "invalid_request_error", NULL, NULL, r < 2 ? "use GET" : "use POST");
    if (!authorized(H, c))
        return fail(H, c, 401, "authentication_error", NULL, "invalid_api_key", "missing or wrong API key");
    if (!ready) return fail(H, c, 503, "unavailable_error", NULL, NULL, "loading the model");
    if (draining && r >= 2) return fail(H, c, 503, "unavailable_error", NULL, NULL, "shutting down");
    if (x->too_big) return fail(H, c, 413, "invalid_request_error", NULL, "request_too_large", "the body is too large");
    switch (r) {
    case 0: return models(H, c);
    case 1: return metrics(H, c);
    case 2: return generate(H, c, OPENAI_COMPLETIONS, x->body ? x->body : "", x->n);
    case 3: return generate(H, c, OPENAI_CHAT, x->body ? x->body : "", x->n);
    default: return tokenize(H, c, x->body ? x->body : "", x->n, r == 5);
    }
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    serve_http *H = cls;
    req_ctx *x = *con_cls;
    (void)version;
    if (!x) {
        if (!(x = calloc(1, sizeof *x))) return MHD_NO;
        *con_cls = x;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > H->o.max_body) x->too_big = 1;
        if (x->too_big || (!authorized(H, c) && strcmp(url, "/health"))) /* refused before the body is read */
            return route(H, c, url, method, x);
        return MHD_YES;
    }
    if (*upload_size) {
        if (!x->too_big && x->n + *upload_size <= H->o.max_body) {
            if (x->n + *upload_size + 1 > x->cap) {
                size_t cap = x->cap ? x->cap : 4096;
                while (cap < x->n + *upload_size + 1) cap *= 2;
                char *b = realloc(x->body, cap);
                if (!b) return MHD_NO;
                x->body = b;
                x->cap = cap;
            }
            memcpy(x->body + x->n, upload, *upload_size);
            x->n += *upload_size;
        } else {
            x->too_big = 1;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    conn_rec *cr = conn_of(c);
    if (cr) {
        pthread_mutex_lock(&H->mu);
        cr->receiving = 0;
        H->busy++;
        pthread_mutex_unlock(&H->mu);
    }
    enum MHD_Result ok = route(H, c, url, method, x);
    if (cr) {
        pthread_mutex_lock(&H->mu);
        H->busy--;
        pthread_mutex_unlock(&H->mu);
    }
    return ok;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    serve_http *H = cls;
    req_ctx *x = *con_cls;
    (void)toe;
    if (x) free(x->body);
    free(x);
    *con_cls = NULL;
    conn_rec *cr = conn_of(c);
    if (cr) { /* the next request of a kept-alive connection has its own deadline */
        pthread_mutex_lock(&H->mu);
        cr->receiving = 1;
        cr->since = now_s();
        pthread_mutex_unlock(&H->mu);
    }
}

static void connection(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe) {
    serve_http *H = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_rec *cr = calloc(1, sizeof *cr);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!cr || !ci) {
            free(cr);
            return;
        }
        cr->fd = ci->connect_fd;
        cr->receiving = 1;
        cr->since = now_s();
        pthread_mutex_lock(&H->mu);
        cr->next = H->conns;
        if (H->conns) H->conns->prev = cr;
        H->conns = cr;
        pthread_mutex_unlock(&H->mu);
        *socket_context = cr;
    } else if (*socket_context) {
        conn_rec *cr = *socket_context;
        pthread_mutex_lock(&H->mu);
        if (cr->prev) cr->prev->next = cr->next;
        else H->conns = cr->next;
        if (cr->next) cr->next->prev = cr->prev;
        pthread_mutex_unlock(&H->mu);
        free(cr);
        *socket_context = NULL;
    }
}

void serve_http_tick(serve_http *H) {
    double t = now_s();
    pthread_mutex_lock(&H->mu);
    for (conn_rec *cr = H->conns; cr; cr = cr->next)
        if (cr->receiving && !cr->dropped && t - cr->since > H->o.timeout_s) {
            shutdown(cr->fd, SHUT_RDWR); /* its thread sees the end and closes it */
            cr->dropped = 1;
        }
    pthread_mutex_unlock(&H->mu);
}

/* ---- start, stop -------------------------------------------------------------------------- */

int serve_http_start(const serve_http_options *o, serve_http **out, char *err) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    struct sockaddr *sa;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, o->host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)o->port);
        sa = (struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, o->host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)o->port);
        sa = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, ERR_LEN, "--host: '%s' is not an IPv4 or IPv6 address", o->host);
        return -1;
    }
    serve_http *H = calloc(1, sizeof *H);
    if (!H) return snprintf(err, ERR_LEN, "out of memory"), -1;
    H->o = *o;
    H->started = now_s();
    pthread_mutex_init(&H->mu, NULL);
    H->d = MHD_start_daemon(flags, (uint16_t)o->port, NULL, NULL, handler, H, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, H,
                            MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, H, MHD_OPTION_NOTIFY_CONNECTION, connection, H,
                            MHD_OPTION_END);
    if (!H->d) {
        snprintf(err, ERR_LEN, "cannot listen on %s port %d: %s", o->host, o->port, strerror(errno));
        pthread_mutex_destroy(&H->mu);
        free(H);
        return -1;
    }
    *out = H;
    return 0;
}

int serve_http_port(const serve_http *H) {
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(H->d, MHD_DAEMON_INFO_BIND_PORT);
    return di ? di->port : 0;
}

void serve_http_ready(serve_http *H, llmgen_model *m, serve_slots *S, const char *name, const request *base) {
    pthread_mutex_lock(&H->mu);
    H->m = m;
    H->S = S;
    snprintf(H->name, sizeof H->name, "%s", name);
    H->base = *base;
    H->ready = 1;
    pthread_mutex_unlock(&H->mu);
}

void serve_http_drain(serve_http *H) {
    pthread_mutex_lock(&H->mu);
    H->draining = 1;
    pthread_mutex_unlock(&H->mu);
    MHD_socket fd = MHD_quiesce_daemon(H->d);
    if (fd != MHD_INVALID_SOCKET) close(fd);
}

int serve_http_busy(serve_http *H) {
    pthread_mutex_lock(&H->mu);
    int n = H->busy + H->streams;
    pthread_mutex_unlock(&H->mu);
    return n;
}

void serve_http_stop(serve_http *H) {
    if (!H) return;
    MHD_stop_daemon(H->d);
    pthread_mutex_destroy(&H->mu);
    free(H);
}
