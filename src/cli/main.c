/* main.c - the llmgen command line: options, reading input, printing, exit codes.
 *
 * The only file that prints or exits, and a thin client of the public API in
 * llmgen.h (generation is llmgen_generate, chat llmgen_chat_turn; the --batch
 * line format lives in request.c): everything it does, an embedding program can do.
 *
 * Output contract: generated text (or ids) goes to stdout, flushed per token;
 * every diagnostic is one line on stderr starting with "llmgen: ". A closed
 * stdout (EPIPE, e.g. `| head -c 20`) ends the run quietly with status 0;
 * Ctrl-C (SIGINT) or SIGTERM stops after the current token, flushes what was
 * generated and exits 130 (in -i mode it stops the reply, not the program). */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch_run.h"
#include "chat_template.h"
#include "think.h"
#include "cli.h"
#include "progress.h"
#include "llmgen.h"
#include "options.h"
#include "request.h"
#include "version.h" /* LLMGEN_COMMIT, written by the Makefile */

#define ERRLEN ERR_LEN

/* Set by the signal handler, read between tokens: the one piece of global
 * state, as a signal handler can reach nothing else. */
static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { (void)sig; interrupted = 1; }

static int usage(FILE *f) {
    if (fputs("usage: llmgen -m PATH [options] [-p TEXT | -f FILE | --prompt-ids LIST | --batch FILE.jsonl]\n"
              "       llmgen -m PATH -i [--system TEXT]           chat on the terminal\n"
              "       llmgen (-m PATH | --tokenizer PATH) --tokenize | --detokenize [-p ... | -f ... | --batch ...]\n"
              "       llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]\n"
              "       llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json [options]\n"
              "       llmgen verify REFS.jsonl [-m MODEL] [--tolerance GAP] [options]   check against references\n"
              "       llmgen perplexity -m MODEL (-f FILE | --ids-file FILE) [-c CTX] [--chunks N] [options]\n"
              "       llmgen serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N]   OpenAI HTTP API\n"
              "Generate text on the CPU with a model of a family llama, mistral, qwen2, qwen3, qwen3.5, gemma3,\n"
              "gemma4, phi3, smollm3, granite, lfm2, gpt-oss, or the experts' qwen3-moe, qwen2-moe, mixtral,\n"
              "olmoe, granite-moe, lfm2-moe. Without a prompt, or with -p - / -f -, it is read from stdin.\n\n",
              f) == EOF ||
        options_print_help(f))
        return -1;
    return fputs("\nExit status: 0 ok (also when stdout is closed early), 1 usage or input error or conflicting\n"
                 "options (verify: a failed case), 2 bad model file, 3 I/O error, 4 out of context (prompt too\n"
                 "long, or generation stopped by a full context before -n tokens; not with -n -1), 5 out of\n"
                 "memory, 6 the chat template (the model has none, it refused the messages, or it is outside\n"
                 "the supported Jinja subset), 130 interrupted.\n", f) == EOF ? -1 : 0;
}

/* Print one diagnostic line on stderr and return the exit code. */
static int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llmgen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

#define exit_code cli_exit_code

/* ---- input and output --------------------------------------------------------------- */

/* stdout with write errors remembered; EPIPE means the reader is gone (quiet 0). */
typedef struct {
    int failed, err;
    int open_line;    /* bytes written since the last newline: end the line before a diagnostic */
} sink;

static int emit(sink *o, const char *s, size_t n) {
    if (o->failed) return -1;
    if ((n && fwrite(s, 1, n, stdout) != n) || fflush(stdout) != 0) {
        o->failed = 1;
        o->err = errno ? errno : EIO;
        return -1;
    }
    if (n) o->open_line = s[n - 1] != '\n';
    return 0;
}

static int emit_ids(sink *o, const int32_t *ids, int n, int comma) {
    for (int i = 0; i < n; i++) {
        char b[16];
        if (emit(o, b, (size_t)snprintf(b, sizeof b, "%s%d", i || comma ? "," : "", ids[i]))) return -1;
    }
    return 0;
}

static int emit_json(sink *out, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    int rc = s ? emit(out, s, strlen(s)) || emit(out, "\n", 1) : -1;
    free(s);
    return rc;
}

static int sink_exit(const sink *o) {
    return o->err == EPIPE ? EXIT_OK : die(EXIT_IO, "stdout: write error: %s", strerror(o->err));
}

/* What the per-piece callback streams: text or ids, and the logits dump. */
typedef struct {
    sink *out;
    int text, ids, n;    /* stream text / ids; ids printed so far (commas) */
    FILE *dump;
    int dump_err;
    think_filter *th;    /* --chat: the thinking block apart (think.h), or NULL */
} stream;

/* What to print of generated text: the answer only under --chat (think.h). final: the end. */
static int emit_answer(stream *S, const char *text, size_t len, int final) {
    if (S->th && think_filter_feed(S->th, text, len, final, &text, &len)) return 1;
    return S->text && len ? emit(S->out, text, len) : 0;
}

static int on_piece(void *user, int32_t id, const char *text, size_t len) {
    stream *S = user;
    if (S->ids && id >= 0 && emit_ids(S->out, &id, 1, S->n++ > 0)) return 1;
    if ((S->text || S->th) && emit_answer(S, text, len, 0)) return 1;
    return (S->th && S->th->over) || interrupted;
}


static int on_logits(void *user, const float *logits, int n_vocab) {
    stream *S = user;
    if (S->dump && fwrite(logits, sizeof(float), (size_t)n_vocab, S->dump) != (size_t)n_vocab) S->dump_err = errno;
    return S->dump_err || interrupted;
}

typedef struct {
    llmgen_model *m;
    llmgen_session *s;
    llmgen_model *dm;   /* --draft-model, or NULL */
    llmgen_session *ds; /* its session */
    const options *o;
    llmgen_capabilities caps;
    sink out;
    double t_load;
    progress pg;          /* --batch: requests done of total (progress.h) */
    volatile long n_total;
    long n_done, n_tokens;
} app;

/* The prompt text or ids the options name, into q (*owned: what to free). */
static int read_input(const options *o, request *q, char **owned) {
    if (o->prompt_ids) {
        q->source = "--prompt-ids";
        if (parse_id_list(o->prompt_ids, &q->ids, &q->n_ids))
            return die(EXIT_USAGE, "--prompt-ids: expected comma-separated non-negative integers, got '%s'",
                       o->prompt_ids);
        return o->chat ? die(EXIT_USAGE, "--chat needs a text prompt, not --prompt-ids") : 0;
    }
    if (o->prompt && strcmp(o->prompt, "-")) {
        q->text = o->prompt;
        q->text_len = strlen(o->prompt);
        q->source = "--prompt";
        return 0;
    }
    const char *path = o->prompt_file && strcmp(o->prompt_file, "-") ? o->prompt_file : NULL;
    FILE *f = path ? fopen(path, "rb") : stdin;
    q->source = path ? path : "stdin";
    if (!f) return die(EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
    char *t = read_all_fd(fileno(f), &q->text_len);
    int e = errno;
    if (path) fclose(f);
    if (!t && interrupted) return EXIT_INTERRUPT;
    if (!t) return die(e == ENOMEM ? EXIT_NOMEM : EXIT_IO, "%s: read error: %s", q->source, strerror(e));
    /* as llama.cpp's -f: the newline that ends a file (or echo's) is not part of the prompt */
    if (!o->keep_newline && q->text_len && t[q->text_len - 1] == '\n') {
        t[--q->text_len] = '\0';
        if (q->text_len && t[q->text_len - 1] == '\r') t[--q->text_len] = '\0';
    }
    q->text = *owned = t;
    return 0;
}

/* --tokenize: q's prompt ids (*ids); --detokenize: the text of q's ids (*text, *len).
 * Returns an exit code with the message in err. */
static int tokens_of(app *A, const request *q, int32_t **ids, int *n, char **text, size_t *len, char *err) {
    llmgen_status st;
    if (A->o->tokenize) {
        if (q->ids) return snprintf(err, ERRLEN, "%s: --tokenize needs text, not ids", q->source), EXIT_USAGE;
        return (st = request_prompt(A->m, q, ids, n, NULL, err)) ? exit_code(st) : 0;
    }
    if (!q->ids) return snprintf(err, ERRLEN, "%s: --detokenize needs ids (\"prompt_ids\")", q->source), EXIT_USAGE;
    char e[ERRLEN];
    if ((st = llmgen_detokenize(A->m, q->ids, (size_t)q->n_ids, text, len, e, sizeof e)))
        return snprintf(err, ERRLEN, "%.200s: %.300s", q->source, e), EXIT_USAGE; /* the tokenizer refused an id */
    return 0;
}

/* --show-pieces: "id<TAB>text" per token, the text's control bytes, backslash and
 * invalid UTF-8 as C escapes (\n, \\, \xHH) so that each token is one line. */
static int emit_pieces(app *A, const int32_t *ids, int n) {
    char err[ERRLEN], *t = NULL;
    for (int i = 0; i < n && !A->out.failed; i++) {
        size_t len = 0;
        if (llmgen_detokenize(A->m, &ids[i], 1, &t, &len, err, sizeof err)) return die(EXIT_USAGE, "%s", err);
        char *line = piece_line(ids[i], t, len, &len);
        if (!line) return llmgen_free(t), die(EXIT_NOMEM, "out of memory");
        emit(&A->out, line, len);
        free(line);
        llmgen_free(t);
        t = NULL;
    }
    return 0;
}

static int run_tokens(app *A, request *q) {
    char err[ERRLEN] = "", *owned = NULL, *text = NULL;
    int32_t *ids = NULL;
    int n = 0;
    size_t len = 0;
    int rc = read_input(A->o, q, &owned);
    if (!rc && A->o->detokenize && !q->ids && parse_id_list(q->text, &q->ids, &q->n_ids))
        rc = die(EXIT_USAGE, "%s: expected token ids separated by commas or spaces", q->source);
    if (!rc && (rc = tokens_of(A, q, &ids, &n, &text, &len, err))) rc = die(rc, "%s", err);
    if (!rc && A->o->show_pieces) rc = emit_pieces(A, ids, n);
    else if (!rc && A->o->tokenize && !emit_ids(&A->out, ids, n, 0)) emit(&A->out, "\n", 1);
    if (!rc && A->o->detokenize) emit(&A->out, text, len);
    free(owned);
    free(q->ids);
    free(ids);
    llmgen_free(text);
    return rc ? rc : A->out.failed ? sink_exit(&A->out) : 0;
}

/* ---- generation: one prompt, --batch, -i ------------------------------------------- */

static int run_single(app *A, request *q) {
    const options *o = A->o;
    char err[ERRLEN], *owned = NULL, *rendered = NULL;
    int32_t *prompt = NULL;
    int n = 0, rc = read_input(o, q, &owned);
    llmgen_result r = {0};
    stream S = {.out = &A->out, .text = !o->ids_only && !o->json, .ids = o->ids_only && !o->json};
    llmgen_status st;
    if (rc) goto out;
    int chat = (q->chat || q->messages) && !q->ids;
    if ((st = request_prompt(A->m, q, &prompt, &n, (o->echo || chat) && !q->ids ? &rendered : NULL, err))) {
        rc = die(exit_code(st), "%s", err);
        goto out;
    }
    think_filter th = {0};
    if (chat && (S.th = &th, think_filter_open(&th, rendered, o->reasoning_show, o->reasoning_budget))) {
        rc = die(EXIT_NOMEM, "out of memory");
        goto out;
    }
    if (n > llmgen_session_ctx(A->s)) {
        char h[96];
        rc = die(EXIT_CONTEXT, "%s: prompt of %d token%s does not fit the context size %d (%s)", q->source, n,
                 n == 1 ? "" : "s", llmgen_session_ctx(A->s), cli_ctx_hint(A->s, &A->caps, h, sizeof h));
        goto out;
    }
    if (o->dump_logits && !(S.dump = fopen(o->dump_logits, "wb"))) {
        rc = die(EXIT_IO, "%s: cannot write: %s", o->dump_logits, strerror(errno));
        goto out;
    }
    if (o->echo && !o->json) {
        if (o->ids_only) S.n = n, emit_ids(&A->out, prompt, n, 0);
        else if (rendered && o->echo) emit(&A->out, rendered, strlen(rendered));
        else if (!llmgen_detokenize(A->m, prompt, (size_t)n, &rendered, &(size_t){0}, err, sizeof err))
            emit(&A->out, rendered, strlen(rendered));
    }
    request_draw_seed(q);
    llmgen_generate_params p;
    request_params(q, &p);
    p.draft_session = A->ds;
    p.on_piece = on_piece;
    p.on_logits = on_logits;
    p.user = &S;
    /* a cache made otherwise: a note, and it is replaced; a file that is no cache: an error, untouched */
    if (o->prompt_cache && !access(o->prompt_cache, F_OK)) {
        st = llmgen_session_load(A->s, o->prompt_cache, err, sizeof err);
        if (st && st != LLMGEN_E_FORMAT) {
            rc = die(exit_code(st), "--prompt-cache %s%s", err,
                     st == LLMGEN_E_USAGE ? " (left as it is: give another path)" : "");
            goto out;
        }
        if (st) fprintf(stderr, "llmgen: note: %s; not used (it will be replaced)\n", err);
        p.reuse_prefix = !st;
    }
    st = llmgen_generate(A->s, prompt, n, &p, &r, err, sizeof err);
    if (!st && S.th && S.th->over) st = think_continue(A->m, A->s, S.th, prompt, n, &p, q->max_tokens, &r, err, sizeof err);
    if (!st && o->prompt_cache) st = llmgen_session_save(A->s, o->prompt_cache, err, sizeof err);
    if (S.dump && fclose(S.dump) && !S.dump_err) S.dump_err = errno ? errno : EIO;
    S.dump = NULL;
    if (!st && S.dump_err) st = LLMGEN_E_IO, snprintf(err, sizeof err, "%s: write failed: %s", o->dump_logits,
                                                      strerror(S.dump_err));
    if (st) {
        if (A->out.open_line && !o->json) emit(&A->out, "\n", 1); /* end the partial line before the diagnostic */
        rc = die(exit_code(st), "%s", err);
        goto out;
    }
    if (S.th) emit_answer(&S, "", 0, 1); /* what was held back at the end */
    if (o->json) {
        json_t *j = result_json(prompt, n, &r, A->caps.has_tokenizer ? A->m : NULL, q->sp.seed);
        if (chat) result_reasoning(j, rendered, &r);
        json_object_set_new(json_object_get(j, "timings"), "load_s", json_real(A->t_load));
        json_object_set_new(j, "threads", cli_threads_json(&A->caps));
        emit_json(&A->out, j);
        json_decref(j);
    } else {
        emit(&A->out, "\n", 1);
    }
    if (o->stats) cli_print_stats(A->t_load, n, &r, q, &A->caps, A->s, A->ds != NULL);
    if (A->out.failed) rc = sink_exit(&A->out);
    else if (r.stop_reason == LLMGEN_STOP_CANCELLED) rc = EXIT_INTERRUPT;
    else if (r.stop_reason == LLMGEN_STOP_CONTEXT && q->max_tokens != -1)
        {
            char h[96];
            rc = die(EXIT_CONTEXT, "out of context: the prompt's %d and %d generated token%s fill the context size %d "
                     "(%s)", n, r.n_ids, r.n_ids == 1 ? "" : "s", llmgen_session_ctx(A->s), cli_ctx_hint(A->s, &A->caps, h, sizeof h));
        }
out:
    if (S.dump) fclose(S.dump);
    think_filter_close(S.th);
    free(rendered);
    free(owned);
    free(prompt);
    free(q->ids);
    llmgen_result_free(&r);
    return rc;
}

/* One --batch line: a result or an error object. *code: the line's exit code. */
static json_t *batch_line(app *A, llmgen_session *s, json_t *root, const char *src, int *code) {
    char err[ERRLEN], *rendered = NULL;
    request q;
    int32_t *prompt = NULL;
    int n = 0;
    llmgen_result r = {0};
    llmgen_status st = LLMGEN_OK;
    json_t *res = NULL;
    *code = EXIT_USAGE;
    if (request_from_json(root, &A->o->base, &q, err)) goto out;
    q.source = q.sys_source = src;
    if (q.json_schema) cli_schema_note(q.json_schema, q.strict_schema, src); /* an error is the line's, below */
    if (A->o->tokenize || A->o->detokenize) {
        char *text = NULL;
        size_t len = 0;
        if ((*code = tokens_of(A, &q, &prompt, &n, &text, &len, err))) goto out;
        res = json_object();
        if (A->o->tokenize) {
            json_t *a = json_array();
            for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(prompt[i]));
            json_object_set_new(res, "ids", a);
        } else {
            json_object_set_new(res, "text", json_text(text, len));
        }
        llmgen_free(text);
        goto out;
    }
    if (!q.ids && !A->caps.has_tokenizer) {
        snprintf(err, sizeof err, "this model has no tokenizer: use \"prompt_ids\"");
        goto out;
    }
    if ((st = request_prompt(A->m, &q, &prompt, &n, &rendered, err))) goto out;
    request_draw_seed(&q);
    llmgen_generate_params p;
    request_params(&q, &p);
    p.draft_session = A->ds;
    if (!(st = llmgen_generate(s, prompt, n, &p, &r, err, sizeof err))) {
        res = result_json(prompt, n, &r, A->caps.has_tokenizer ? A->m : NULL, q.sp.seed);
        if (q.chat || q.messages) result_reasoning(res, rendered, &r);
        *code = r.stop_reason == LLMGEN_STOP_CONTEXT && q.max_tokens != -1 ? EXIT_CONTEXT : 0;
        if (*code) { /* what was generated stays; the line says it is cut short, as the exit code does */
            char h[96];
            snprintf(err, sizeof err, "out of context: the prompt's %d and %d of the %d tokens asked fill the context "
                     "size %d (%s)", n, r.n_ids, q.max_tokens, llmgen_session_ctx(s), cli_ctx_hint(A->s, &A->caps, h, sizeof h));
            json_object_set_new(res, "error", json_string(err));
            json_object_set_new(res, "exit", json_integer(*code));
        }
    }
out:
    if (st) *code = exit_code(st);
    if (!res) res = error_json(json_object_get(root, "id"), 0, err, *code);
    else if (json_object_get(root, "id")) json_object_set(res, "id", json_object_get(root, "id"));
    free(rendered);
    free(prompt);
    request_free(&q);
    llmgen_result_free(&r);
    return res;
}

/* One non-blank --batch line of text on session s: its result or error, with "line". */
static json_t *batch_text(void *user, llmgen_session *s, const char *line, size_t len, long lineno, int *code) {
    app *A = user;
    json_error_t je;
    char src[64];
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je), *out;
    snprintf(src, sizeof src, "%s:%ld", strcmp(A->o->batch, "-") ? A->o->batch : "stdin", lineno);
    if (root) {
        out = batch_line(A, s, root, src, code);
    } else {
        char msg[ERRLEN];
        snprintf(msg, sizeof msg, "not JSON: %s (column %d)",
                 strstr(je.text, "JSON_ALLOW_NUL") ? "a string holds \\u0000 (a NUL byte), which a request cannot"
                                                   : je.text, je.column);
        out = error_json(NULL, 0, msg, *code = EXIT_USAGE);
    }
    json_object_set_new(out, "line", json_integer(lineno));
    json_decref(root);
    return out;
}

static int batch_emit(void *user, json_t *out) {
    app *A = user;
    A->n_done++;
    A->n_tokens += (long)json_integer_value(json_object_get(json_object_get(out, "timings"), "generated_tokens"));
    progress_clear(&A->pg); /* stdout may be the same terminal */
    int rc = emit_json(&A->out, out);
    if (A->n_total) {
        double t = progress_elapsed(&A->pg);
        char left[32];
        fflush(stdout);
        progress_update(&A->pg, A->n_done == A->n_total, "batch: %ld/%ld requests, %.1f tokens/s, %s left", A->n_done,
                        A->n_total, t > 0 ? (double)A->n_tokens / t : 0.0,
                        progress_time(t / (double)A->n_done * (double)(A->n_total - A->n_done), left, sizeof left));
    }
    return rc;
}

static int run_batch(app *A) {
    const char *name = A->o->batch;
    FILE *in = strcmp(name, "-") ? fopen(name, "r") : stdin;
    if (!in) return die(EXIT_IO, "%s: cannot open: %s", name, strerror(errno));
    char err[ERRLEN];
    batch_summary sum;
    batch_parallel bp = {A->m, A->s, A->o->common.ctx, A->o->parallel, A->o->ordered, in, in == stdin ? "stdin" : name,
                         batch_text, batch_emit, A, &interrupted, A->o->resume, &A->n_total};
    progress_init(&A->pg, stderr, A->o->common.progress);
    llmgen_status st = batch_run_lines(&bp, &sum, err, sizeof err);
    progress_clear(&A->pg);
    if (in != stdin) fclose(in);
    if (A->out.failed) return sink_exit(&A->out);
    if (st) return die(exit_code(st), "%s", err);
    if (interrupted) return EXIT_INTERRUPT;
    if (!sum.failed) return 0;
    /* one line a script can read: how many failed and why the first did (each line says why) */
    char skipped[64] = "";
    if (sum.skipped) snprintf(skipped, sizeof skipped, ", %ld skipped (in %s already)", sum.skipped, A->o->resume);
    return die(sum.first_fail_code, "%ld requests: %ld ok, %ld failed%s; first failure: line %ld: %s", sum.n, sum.ok,
               sum.failed, skipped, sum.first_fail_line, sum.first_fail_why);
}

/* -i: one user turn per line of stdin, replies streamed; the KV cache is kept. */
static int run_interactive(app *A) {
    const options *o = A->o;
    request q = o->base;
    llmgen_chat_options co = {.template_name = q.template_name, .date = q.date, .template_text = q.template_text};
    llmgen_chat *chat;
    char err[ERRLEN], *line = NULL;
    size_t cap = 0;
    int rc = 0, tty = isatty(0);
    char hint[96];
    llmgen_status st = llmgen_chat_new(A->s, &co, q.system, &chat, err, sizeof err);
    if (st) return die(exit_code(st), "%s", err);
    for (;;) {
        if (tty && emit(&A->out, "> ", 2)) break;
        errno = 0;
        ssize_t len = getline(&line, &cap, stdin);
        if (len < 0) {
            if (tty) emit(&A->out, "\n", 1);
            rc = interrupted ? EXIT_INTERRUPT : ferror(stdin) ? die(EXIT_IO, "stdin: read error: %s", strerror(errno)) : 0;
            break;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
        if (!len) continue;
        if (memchr(line, '\0', (size_t)len) || utf8_invalid_at(line, (size_t)len) < (size_t)len) {
            die(0, "stdin: invalid UTF-8 or NUL in this turn: skipped");
            continue;
        }
        stream S = {.out = &A->out, .text = !o->ids_only, .ids = o->ids_only};
        llmgen_result r;
        request_draw_seed(&q);
        llmgen_generate_params p;
        request_params(&q, &p);
        p.draft_session = A->ds;
        p.on_piece = on_piece;
        p.user = &S;
        st = llmgen_chat_turn(chat, line, &p, &r, err, sizeof err);
        if (!st || A->out.open_line) emit(&A->out, "\n", 1); /* a turn that failed before a reply prints nothing */
        interrupted = 0; /* Ctrl-C ends the reply, not the chat */
        if (o->stats && !st) cli_print_stats(A->t_load, r.n_prompt, &r, &q, &A->caps, A->s, A->ds != NULL);
        int full = !st && r.stop_reason == LLMGEN_STOP_CONTEXT;
        llmgen_result_free(&r);
        if (A->out.failed) { rc = sink_exit(&A->out); break; }
        if (st == LLMGEN_E_CONTEXT) { /* this turn does not fit: it is dropped, the chat goes on */
            char h[96];
            die(0, "%s: this turn is skipped (%s)", err, cli_ctx_hint(A->s, &A->caps, h, sizeof h));
            continue;
        }
        if (st || full) {
            rc = st ? die(exit_code(st), "%s", err)
                    : die(EXIT_CONTEXT, "the context is full (%d tokens): the chat ends here (%s)",
                          llmgen_session_ctx(A->s), cli_ctx_hint(A->s, &A->caps, hint, sizeof hint));
            break;
        }
    }
    free(line);
    llmgen_chat_free(chat);
    return rc;
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal; /* no SA_RESTART: a blocked read of stdin returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed stdout ends the run quietly via EPIPE */
}

int main(int argc, char **argv) {
    options o;
    char err[ERRLEN];
    static const struct { const char *name; cli_main_fn run; int signals; } subcommands[] = {
        {"quantize", quantize_main, 0}, {"chat-template", chat_template_main, 0}, {"verify", verify_main, 1},
        {"perplexity", perplexity_main, 1}, {"serve", serve_main, 1}}; /* signals: Ctrl-C stops it between steps (exit 130) */
    cli_io io = {stdout, stderr, &interrupted};
    for (size_t i = 0; argc > 1 && i < sizeof subcommands / sizeof *subcommands; i++)
        if (!strcmp(argv[1], subcommands[i].name)) {
            if (subcommands[i].signals) install_signals();
            return subcommands[i].run(argc - 1, argv + 1, &io);
        }
    install_signals();
    if (options_parse(argc, argv, &o, err)) return die(EXIT_USAGE, "%s", err);
    if (o.common.help || o.version) {
        if (o.common.help) usage(stdout);
        else printf("llmgen %s (commit %s; kernels on this CPU: %s)\n", LLMGEN_VERSION, LLMGEN_COMMIT,
                    llmgen_kernels_default());
        return fflush(stdout) || ferror(stdout) ? die(EXIT_IO, "stdout: write error: %s", strerror(errno)) : EXIT_OK;
    }
    llmgen_status tst = options_read_files(&o, err);
    if (tst) {
        options_free(&o);
        return die(exit_code(tst), "%s", err);
    }
    if (o.base.json_schema && !o.batch && cli_schema_note(o.base.json_schema, o.base.strict_schema, NULL)) {
        options_free(&o);
        return EXIT_USAGE;
    }

    app A = {.o = &o};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *path = o.tokenizer_path ? o.tokenizer_path : o.common.model;
    llmgen_status st = cli_model_open(&o.common, path, !!o.tokenizer_path, &A.m, err);
    if (st) return die(exit_code(st), "%s", err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    A.t_load = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    llmgen_model_capabilities(A.m, &A.caps);
    if (!o.tokenizer_path) cli_threads_note(stderr, o.common.threads, &A.caps);
    char missing[256];
    if (o.base.template_name && A.caps.has_tokenizer &&
        !llmgen_chat_template_check(A.m, o.base.template_name, missing, sizeof missing, NULL, 0) && *missing)
        fprintf(stderr, "llmgen: warning: template %s: %s %s not in this model's vocabulary: written as plain text, "
                "in a format the model has not learned\n", o.base.template_name, missing,
                strchr(missing, ' ') ? "are special tokens" : "is a special token");
    request q = o.base;
    int rc = 0, tokens = o.tokenize || o.detokenize;
    if (!A.caps.has_tokenizer && (tokens || o.interactive || o.base.n_stops || o.chat ||
                                  (!o.ids_only && !o.json && !o.batch))) {
        rc = die(EXIT_USAGE, "%s: this model has no tokenizer: use --prompt-ids with --ids or --json%s", path,
                 o.base.n_stops ? " (and no --stop)" : "");
    } else if (!A.caps.has_tokenizer && !o.prompt_ids && !o.batch) {
        rc = die(EXIT_USAGE, "%s: this model has no tokenizer: give the prompt with --prompt-ids", path);
    } else if (!tokens && (st = llmgen_session_new(A.m, o.common.ctx, &A.s, err, sizeof err))) {
        rc = die(o.common.ctx && st == LLMGEN_E_USAGE ? EXIT_USAGE : exit_code(st), "%s%s",
                 o.common.ctx ? "--ctx-size: " : "", err);
    } else if (o.draft_model &&
               (rc = cli_open_draft(o.draft_model,
                                    &(llmgen_model_options){.n_threads = o.common.threads, .kernels = o.common.kernels},
                                    A.s, &A.dm, &A.ds, err))) {
        die(rc, "--draft-model: %s", err);
    } else {
        rc = o.batch ? run_batch(&A) : tokens ? run_tokens(&A, &q) : o.interactive ? run_interactive(&A)
                                                                  : run_single(&A, &q);
    }
    llmgen_session_free(A.ds);
    llmgen_model_free(A.dm);
    llmgen_session_free(A.s);
    llmgen_model_free(A.m);
    options_free(&o);
    return rc;
}
