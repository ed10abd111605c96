/* main.c - the llmgen command line: options, prompt input, streaming output,
 * exit codes. The only file that prints or exits; everything else goes through
 * the public API in llmgen.h (plus the tokenizer library). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llmgen.h"
#include "model.h"
#include "tokenizer.h"
#include "util.h"

enum { EXIT_USAGE = 1, EXIT_MODEL = 2, EXIT_IO = 3, EXIT_CONTEXT = 4 };

typedef struct {
    const char *model_path;
    const char *prompt;       /* -p TEXT ("-" = stdin) */
    const char *prompt_ids;   /* --prompt-ids 1,2,3 */
    const char *dump_logits;  /* --dump-logits FILE */
    const char *kernels;
    const char *system;
    int chat;
    int n_predict;
    int n_threads;
    int ctx;
    int ids_only;
    int ignore_eos;
    llmgen_sampler_params sp;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: llmgen -m PATH [options]\n"
            "Generate text with a Llama-family model on the CPU.\n\n"
            "  -m, --model PATH       a .gguf file or a Hugging Face model directory\n"
            "  -p, --prompt TEXT      prompt text (\"-\" or no prompt: read stdin)\n"
            "      --prompt-ids LIST  prompt as comma-separated token ids (no tokenizer needed)\n"
            "      --chat             wrap the prompt in the model's chat template\n"
            "      --system TEXT      system message for --chat\n"
            "  -n, --max-tokens N     tokens to generate (default 128)\n"
            "      --temp T           temperature (default 0 = greedy)\n"
            "      --top-k K          keep the K most likely tokens (0 = off)\n"
            "      --top-p P          nucleus sampling mass (1 = off)\n"
            "      --min-p P          drop tokens below P times the top probability (0 = off)\n"
            "      --repeat-penalty R repetition penalty (1 = off)\n"
            "      --seed S           sampling seed (default 0)\n"
            "  -t, --threads N        threads (default 2)\n"
            "  -c, --ctx-size N       context size in tokens (default min(model, 4096))\n"
            "      --ids              print generated token ids (comma-separated) instead of text\n"
            "      --ignore-eos       do not stop at end-of-sequence tokens\n"
            "      --dump-logits FILE write the logits of every generated step (f32 rows)\n"
            "      --kernels NAME     force a kernel set: scalar, avx2, avx512, neon\n"
            "  -h, --help             this help\n"
            "      --version          print the version\n\n"
            "Exit status: 0 ok, 1 usage error, 2 bad model file, 3 I/O error, 4 out of context.\n");
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

/* Strict integer option parsing: the whole string, within [lo, hi]. */
static int parse_int(const char *opt, const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "llmgen: %s: invalid value '%s' (expected an integer from %ld to %ld)\n", opt, s, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int parse_float(const char *opt, const char *s, double lo, double hi, float *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        fprintf(stderr, "llmgen: %s: invalid value '%s' (expected a number from %g to %g)\n", opt, s, lo, hi);
        return -1;
    }
    *out = (float)v;
    return 0;
}

static int parse_args(int argc, char **argv, options *o) {
    enum { O_IDS = 256, O_PROMPT_IDS, O_TEMP, O_SEED, O_IGNORE_EOS, O_DUMP, O_KERNELS, O_VERSION,
           O_TOPK, O_TOPP, O_MINP, O_REPEAT, O_CHAT, O_SYSTEM };
    static const struct option longs[] = {
        {"model", required_argument, 0, 'm'},       {"prompt", required_argument, 0, 'p'},
        {"max-tokens", required_argument, 0, 'n'},  {"threads", required_argument, 0, 't'},
        {"ctx-size", required_argument, 0, 'c'},    {"help", no_argument, 0, 'h'},
        {"ids", no_argument, 0, O_IDS},             {"prompt-ids", required_argument, 0, O_PROMPT_IDS},
        {"temp", required_argument, 0, O_TEMP},     {"seed", required_argument, 0, O_SEED},
        {"ignore-eos", no_argument, 0, O_IGNORE_EOS}, {"dump-logits", required_argument, 0, O_DUMP},
        {"kernels", required_argument, 0, O_KERNELS}, {"version", no_argument, 0, O_VERSION},
        {"top-k", required_argument, 0, O_TOPK},    {"top-p", required_argument, 0, O_TOPP},
        {"min-p", required_argument, 0, O_MINP},    {"repeat-penalty", required_argument, 0, O_REPEAT},
        {"chat", no_argument, 0, O_CHAT},           {"system", required_argument, 0, O_SYSTEM},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->n_predict = 128;
    o->n_threads = 2;
    llmgen_sampler_defaults(&o->sp);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":m:p:n:t:c:h", longs, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_path = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'n': if (parse_int("--max-tokens", optarg, 0, 1 << 24, &o->n_predict)) return -1; break;
        case 't': if (parse_int("--threads", optarg, 1, 256, &o->n_threads)) return -1; break;
        case 'c': if (parse_int("--ctx-size", optarg, 1, 1 << 24, &o->ctx)) return -1; break;
        case 'h': usage(stdout); exit(0);
        case O_VERSION: printf("llmgen %s\n", LLMGEN_VERSION); exit(0);
        case O_IDS: o->ids_only = 1; break;
        case O_PROMPT_IDS: o->prompt_ids = optarg; break;
        case O_TEMP: if (parse_float("--temp", optarg, 0, 100, &o->sp.temperature)) return -1; break;
        case O_TOPK: if (parse_int("--top-k", optarg, 0, INT_MAX, &o->sp.top_k)) return -1; break;
        case O_TOPP: if (parse_float("--top-p", optarg, 0, 1, &o->sp.top_p)) return -1; break;
        case O_MINP: if (parse_float("--min-p", optarg, 0, 1, &o->sp.min_p)) return -1; break;
        case O_REPEAT: if (parse_float("--repeat-penalty", optarg, 0.01, 100, &o->sp.repeat_penalty)) return -1; break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "llmgen: --seed: invalid value '%s' (expected a non-negative integer)\n", optarg);
                return -1;
            }
            o->sp.seed = v;
            break;
        }
        case O_IGNORE_EOS: o->ignore_eos = 1; break;
        case O_DUMP: o->dump_logits = optarg; break;
        case O_KERNELS: o->kernels = optarg; break;
        case O_CHAT: o->chat = 1; break;
        case O_SYSTEM: o->system = optarg; break;
        case ':': fprintf(stderr, "llmgen: option %s needs a value\n", argv[optind - 1]); return -1;
        default: fprintf(stderr, "llmgen: unknown option %s (see --help)\n", argv[optind - 1]); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "llmgen: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (!o->model_path) {
        fprintf(stderr, "llmgen: no model given: use -m PATH (see --help)\n");
        return -1;
    }
    if (o->prompt && o->prompt_ids) {
        fprintf(stderr, "llmgen: give either --prompt or --prompt-ids, not both\n");
        return -1;
    }
    return 0;
}

/* "1,2,3" -> ids. */
static int parse_id_list(const char *s, int32_t **out, int *n) {
    size_t cap = 16, k = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            free(ids);
            return -1;
        }
        if (k == cap) {
            int32_t *b = realloc(ids, (cap *= 2) * sizeof *ids);
            if (!b) {
                free(ids);
                return -1;
            }
            ids = b;
        }
        ids[k++] = (int32_t)v;
        p = *end ? end + 1 : end;
    }
    *out = ids;
    *n = (int)k;
    return 0;
}

static char *read_stream(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                return NULL;
            }
            buf = b;
        }
    }
    if (ferror(f)) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

/* Write and flush; 0 on success. A closed pipe is not an error worth a message. */
static int emit(const char *s, size_t n) {
    if (n && fwrite(s, 1, n, stdout) != n) return -1;
    return fflush(stdout) == 0 ? 0 : -1;
}

static int is_eos(const model *m, const tokenizer *tok, int32_t id) {
    for (int i = 0; i < m->cfg.n_eos; i++)
        if (m->cfg.eos_ids[i] == id) return 1;
    return tok && tok_eos(tok) == id;
}

typedef struct {
    options *o;
    llmgen_model *m;
    llmgen_session *s;
    llmgen_sampler *smp;
    tok_stream *ts;
    FILE *dump;
    int32_t *hist; /* prompt + generated ids */
    int n_hist;
} run;

static int generate(run *r, int n_prompt) {
    char err[ERR_LEN];
    const float *logits;
    const model *m = r->m;
    int V = m->cfg.vocab_size;
    llmgen_status st = llmgen_prefill(r->s, r->hist, n_prompt, &logits, err, sizeof err);
    int first = 1;
    for (int i = 0; i < r->o->n_predict; i++) {
        if (st) return die(st == LLMGEN_E_CONTEXT ? EXIT_CONTEXT : EXIT_USAGE, "%s", err);
        if (r->dump && fwrite(logits, sizeof(float), (size_t)V, r->dump) != (size_t)V)
            return die(EXIT_IO, "%s: write failed: %s", r->o->dump_logits, strerror(errno));
        int32_t id = llmgen_sample(r->smp, logits, r->hist, r->n_hist);
        if (!r->o->ignore_eos && is_eos(m, m->tok, id)) break;
        r->hist[r->n_hist++] = id;
        if (r->o->ids_only) {
            char buf[16];
            int k = snprintf(buf, sizeof buf, "%s%d", first ? "" : ",", id);
            if (emit(buf, (size_t)k)) return errno == EPIPE ? 0 : die(EXIT_IO, "stdout: %s", strerror(errno));
        } else {
            const char *piece;
            size_t len;
            if (tok_stream_put(r->ts, id, &piece, &len, err)) return die(EXIT_MODEL, "%s", err);
            if (emit(piece, len)) return errno == EPIPE ? 0 : die(EXIT_IO, "stdout: %s", strerror(errno));
        }
        first = 0;
        if (i + 1 < r->o->n_predict) {
            if (llmgen_session_pos(r->s) >= llmgen_session_ctx(r->s)) {
                st = LLMGEN_E_CONTEXT;
                snprintf(err, sizeof err, "out of context after %d tokens (context size %d; raise -c)",
                         llmgen_session_pos(r->s), llmgen_session_ctx(r->s));
                continue;
            }
            st = llmgen_decode_step(r->s, id, &logits, err, sizeof err);
        }
    }
    if (!r->o->ids_only && r->ts) {
        const char *piece;
        size_t len;
        tok_stream_flush(r->ts, &piece, &len);
        if (emit(piece, len)) return errno == EPIPE ? 0 : die(EXIT_IO, "stdout: %s", strerror(errno));
    }
    if (emit("\n", 1)) return errno == EPIPE ? 0 : die(EXIT_IO, "stdout: %s", strerror(errno));
    return 0;
}

/* Token ids of the prompt: from --prompt-ids, or text from -p / stdin through the tokenizer. */
static int prompt_tokens(const options *o, const model *m, int32_t **ids, int *n) {
    char err[TOK_ERR_LEN];
    if (o->prompt_ids) {
        if (parse_id_list(o->prompt_ids, ids, n))
            return die(EXIT_USAGE, "--prompt-ids: expected comma-separated non-negative integers, got '%s'",
                       o->prompt_ids);
        return 0;
    }
    if (!m->tok)
        return die(EXIT_USAGE, "%s: this model has no tokenizer: use --prompt-ids and --ids", m->path);
    char *text;
    size_t len;
    if (!o->prompt || !strcmp(o->prompt, "-")) {
        if (!(text = read_stream(stdin, &len))) return die(EXIT_IO, "stdin: read error");
    } else {
        if (!(text = strdup(o->prompt))) return die(EXIT_IO, "out of memory");
        len = strlen(text);
    }
    if (o->chat) {
        char *chat;
        if (tok_chat_render(m->tok, NULL, o->system, text, &chat, err)) {
            free(text);
            return die(EXIT_MODEL, "%s", err);
        }
        free(text);
        text = chat;
        len = strlen(text);
    }
    size_t nids;
    int rc = tok_encode(m->tok, text, len, 1, 1, ids, &nids, err);
    free(text);
    if (rc) return die(EXIT_USAGE, "prompt: %s", err);
    *n = (int)nids;
    return 0;
}

int main(int argc, char **argv) {
    options o;
    char err[ERR_LEN];
    signal(SIGPIPE, SIG_IGN); /* a closed stdout ends the run quietly via EPIPE */
    if (parse_args(argc, argv, &o)) return EXIT_USAGE;

    llmgen_model_options mo = {.n_threads = o.n_threads, .kernels = o.kernels};
    llmgen_model *m;
    llmgen_status st = llmgen_model_open(o.model_path, &mo, &m, err, sizeof err);
    if (st) return die(st == LLMGEN_E_IO ? EXIT_IO : st == LLMGEN_E_USAGE ? EXIT_USAGE : EXIT_MODEL, "%s", err);
    if (!o.ids_only && !m->tok) {
        llmgen_model_free(m);
        return die(EXIT_USAGE, "%s: this model has no tokenizer: use --prompt-ids and --ids", o.model_path);
    }

    int rc = 0, n_prompt = 0;
    int32_t *prompt = NULL;
    run r = {.o = &o, .m = m};
    if ((rc = prompt_tokens(&o, m, &prompt, &n_prompt))) goto out;
    if (n_prompt == 0) {
        rc = die(EXIT_USAGE, "empty prompt: nothing to continue from");
        goto out;
    }
    if ((st = llmgen_session_new(m, o.ctx, &r.s, err, sizeof err))) {
        rc = die(st == LLMGEN_E_NOMEM ? EXIT_IO : EXIT_USAGE, "%s", err);
        goto out;
    }
    if (n_prompt > llmgen_session_ctx(r.s)) {
        fprintf(stderr, "llmgen: prompt of %d tokens does not fit the context size %d (raise -c)\n", n_prompt,
                llmgen_session_ctx(r.s));
        rc = EXIT_CONTEXT;
        goto out;
    }
    r.hist = malloc(((size_t)n_prompt + (size_t)o.n_predict + 1) * sizeof *r.hist);
    r.smp = llmgen_sampler_new(&o.sp, m->cfg.vocab_size);
    if (!r.hist || !r.smp) {
        rc = die(EXIT_IO, "out of memory");
        goto out;
    }
    memcpy(r.hist, prompt, (size_t)n_prompt * sizeof *prompt);
    r.n_hist = n_prompt;
    if (!o.ids_only && !(r.ts = tok_stream_new(m->tok))) {
        rc = die(EXIT_IO, "out of memory");
        goto out;
    }
    if (o.dump_logits && !(r.dump = fopen(o.dump_logits, "wb"))) {
        rc = die(EXIT_IO, "%s: cannot write: %s", o.dump_logits, strerror(errno));
        goto out;
    }
    if (o.n_predict > 0) rc = generate(&r, n_prompt);
    if (r.dump && fclose(r.dump) != 0 && !rc) rc = die(EXIT_IO, "%s: write failed: %s", o.dump_logits, strerror(errno));
    r.dump = NULL;
out:
    if (r.dump) fclose(r.dump);
    if (r.ts) tok_stream_free(r.ts);
    llmgen_sampler_free(r.smp);
    llmgen_session_free(r.s);
    free(r.hist);
    free(prompt);
    llmgen_model_free(m);
    return rc;
}
