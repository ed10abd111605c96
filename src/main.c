/* main.c - the llmgen command line: options, prompt input, streaming output,
 * --json / --batch results, statistics, signals and exit codes.
 *
 * The only file that prints or exits, and a thin client of the public API in
 * llmgen.h: everything it does, an embedding program can do too.
 *
 * Output contract: generated text (or ids) goes to stdout, flushed per token;
 * every diagnostic is one line on stderr starting with "llmgen: ". A closed
 * stdout (EPIPE, e.g. `| head -c 20`) ends the run quietly with status 0;
 * Ctrl-C (SIGINT) or SIGTERM stops after the current token, flushes what was
 * generated and exits 130. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "llmgen.h"

/* Exit codes (documented in --help and the man page). */
enum {
    EXIT_OK = 0,
    EXIT_USAGE = 1,     /* bad option, bad option value, bad or empty prompt, bad batch line */
    EXIT_MODEL = 2,     /* bad or unsupported model file */
    EXIT_IO = 3,        /* missing / unreadable input, unwritable output */
    EXIT_CONTEXT = 4,   /* prompt or generation does not fit the context size */
    EXIT_NOMEM = 5,     /* out of memory */
    EXIT_TEMPLATE = 6,  /* the chat template refused the messages (raise_exception) or is outside the Jinja subset */
    EXIT_INTERRUPT = 130, /* SIGINT / SIGTERM */
};

#define ERRLEN 512
#define MAX_STOPS 16

/* Set by the signal handler, read between tokens: the one piece of global
 * state, as a signal handler can reach nothing else. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
}

/* ---- options ---------------------------------------------------------------------- */

typedef struct {
    const char *model_path;
    const char *prompt;       /* -p TEXT ("-" = stdin) */
    const char *prompt_file;  /* -f FILE ("-" = stdin) */
    const char *prompt_ids;   /* --prompt-ids 1,2,3 */
    const char *dump_logits;  /* --dump-logits FILE */
    const char *batch;        /* --batch FILE.jsonl ("-" = stdin) */
    const char *kernels;
    const char *system;
    const char *template_name; /* --template NAME: force a chat template family */
    const char *template_file; /* --chat-template-file FILE */
    char *template_text;       /* its text (owned) */
    const char *date;          /* --date "02 Jan 2025": the date Llama 3.1+ templates print */
    const char *stops[MAX_STOPS];
    int n_stops;
    int chat;
    int n_predict;
    int n_threads;
    int ctx;
    int ids_only;
    int ignore_eos;
    int exact;
    int echo;
    int json;
    int stats;
    llmgen_sampler_params sp;
} options;

static void usage(FILE *f) {
    fprintf(f,
            "usage: llmgen -m PATH [options] [-p TEXT | -f FILE | --prompt-ids LIST | --batch FILE.jsonl]\n"
            "       llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]\n"
            "       llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json [options]\n"
            "Generate text with a Llama-family model on the CPU. Without a prompt, or with -p - / -f -,\n"
            "the prompt is read from stdin.\n\n"
            "  -m, --model PATH         a .gguf file or a Hugging Face model directory\n"
            "  -p, --prompt TEXT        prompt text (\"-\": read stdin)\n"
            "  -f, --file FILE          read the prompt from FILE (\"-\": stdin)\n"
            "      --prompt-ids LIST    prompt as comma-separated token ids (no tokenizer needed)\n"
            "      --chat               wrap the prompt in the model's chat template\n"
            "      --system TEXT        system message for --chat\n"
            "      --template NAME      use a built-in chat template: chatml, llama3, llama3.1, llama3.2,\n"
            "                           llama2, mistral-v0.1, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7\n"
            "      --chat-template-file FILE  render --chat with this Jinja template instead of the model's\n"
            "      --date \"DD Mon YYYY\" the date Llama 3.1+ templates print (default: as transformers)\n"
            "  -n, --max-tokens N       tokens to generate, 1..16777216 (default 128)\n"
            "      --temp T             temperature, 0..100 (default 0 = greedy)\n"
            "      --top-k K            keep the K most likely tokens (0 = off)\n"
            "      --top-p P            keep the most likely tokens up to mass P, 0..1 (1 = off)\n"
            "      --min-p P            drop tokens below P times the top probability, 0..1 (0 = off)\n"
            "      --repeat-penalty R   penalize tokens already seen, 0.01..100 (1 = off)\n"
            "      --seed S             sampling seed, 0..2^64-1 (default 0)\n"
            "  -t, --threads N          threads, 1..256 (default 2)\n"
            "  -c, --ctx-size N         context size in tokens (default min(model, 4096))\n"
            "      --stop STRING        stop when the text contains STRING (\\n \\t escapes; repeatable, up to %d)\n"
            "      --ignore-eos         do not stop at end-of-sequence tokens (generate exactly -n)\n"
            "      --ids                print generated token ids (comma-separated) instead of text\n"
            "      --echo               print the prompt before the completion\n"
            "      --json               print one JSON object: prompt ids, ids, text, timings\n"
            "      --batch FILE.jsonl   one JSON request per line in, one JSON result per line out\n"
            "      --stats              print load time, tokens/s, time to first token, peak RSS on stderr\n"
            "      --dump-logits FILE   write the logits of every generated step (f32 rows)\n"
            "      --kernels NAME       force a kernel set: scalar, avx2, avx512, neon\n"
            "      --exact              f32 activations: greedy ids equal HF transformers' (slower)\n"
            "  -h, --help               this help\n"
            "      --version            print the version\n\n"
            "Exit status: 0 ok (also when stdout is closed early), 1 usage or input error,\n"
            "2 bad model file, 3 I/O error, 4 out of context, 5 out of memory, 6 the chat template\n"
            "refused the messages or is outside the supported Jinja subset, 130 interrupted.\n",
            MAX_STOPS);
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

/* Write one message into err (ERRLEN bytes); long inner messages are cut. */
static void seterr(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void seterr(char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERRLEN, fmt, ap);
    va_end(ap);
}

static int exit_code(llmgen_status st) {
    switch (st) {
    case LLMGEN_OK: return EXIT_OK;
    case LLMGEN_E_FORMAT: return EXIT_MODEL;
    case LLMGEN_E_IO: return EXIT_IO;
    case LLMGEN_E_CONTEXT: return EXIT_CONTEXT;
    case LLMGEN_E_NOMEM: return EXIT_NOMEM;
    case LLMGEN_E_TEMPLATE: return EXIT_TEMPLATE;
    default: return EXIT_USAGE;
    }
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

static int parse_seed(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') {
        fprintf(stderr, "llmgen: --seed: invalid value '%s' (expected an integer from 0 to 2^64-1)\n", s);
        return -1;
    }
    *out = v;
    return 0;
}

/* --stop takes C escapes so that a newline can be typed: \n \t \r \\ (others stay as
 * written). Decodes in place (argv strings are writable; the result is never longer). */
static void unescape(char *s) {
    char *w = s;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *w++ = *s;
            continue;
        }
        char c = *++s;
        if (c == 'n') *w++ = '\n';
        else if (c == 't') *w++ = '\t';
        else if (c == 'r') *w++ = '\r';
        else if (c == '\\') *w++ = '\\';
        else *w++ = '\\', *w++ = c; /* unknown escape: kept as written (two bytes from two) */
    }
    *w = '\0';
}

#define MAX_PREDICT (1 << 24)


/* "%d %b %Y" as the Llama 3.1+ templates print it: "02 Jan 2025". */
static int valid_date(const char *d) {
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                         "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    if (strlen(d) != 11 || d[2] != ' ' || d[6] != ' ') return 0;
    for (int i = 0; i < 11; i++)
        if ((i < 2 || i > 6) && (d[i] < '0' || d[i] > '9')) return 0;
    int day = (d[0] - '0') * 10 + (d[1] - '0'), month = 0;
    for (int m = 0; m < 12; m++)
        if (!strncmp(d + 3, months[m], 3)) month = m + 1;
    return month && day >= 1 && day <= 31;
}
static int parse_args(int argc, char **argv, options *o) {
    enum { O_IDS = 256, O_PROMPT_IDS, O_TEMP, O_SEED, O_IGNORE_EOS, O_DUMP, O_KERNELS, O_VERSION,
           O_TOPK, O_TOPP, O_MINP, O_REPEAT, O_CHAT, O_SYSTEM, O_TEMPLATE, O_DATE, O_STOP, O_ECHO, O_JSON, O_STATS, O_BATCH, O_EXACT, O_TEMPLATE_FILE };
    static const struct option longs[] = {
        {"model", required_argument, 0, 'm'},       {"prompt", required_argument, 0, 'p'},
        {"file", required_argument, 0, 'f'},        {"max-tokens", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'},     {"ctx-size", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},              {"ids", no_argument, 0, O_IDS},
        {"prompt-ids", required_argument, 0, O_PROMPT_IDS}, {"temp", required_argument, 0, O_TEMP},
        {"seed", required_argument, 0, O_SEED},     {"ignore-eos", no_argument, 0, O_IGNORE_EOS},
        {"dump-logits", required_argument, 0, O_DUMP}, {"kernels", required_argument, 0, O_KERNELS},
        {"version", no_argument, 0, O_VERSION},     {"top-k", required_argument, 0, O_TOPK},
        {"top-p", required_argument, 0, O_TOPP},    {"min-p", required_argument, 0, O_MINP},
        {"repeat-penalty", required_argument, 0, O_REPEAT}, {"chat", no_argument, 0, O_CHAT},
        {"system", required_argument, 0, O_SYSTEM}, {"template", required_argument, 0, O_TEMPLATE},
        {"date", required_argument, 0, O_DATE}, {"stop", required_argument, 0, O_STOP},
        {"echo", no_argument, 0, O_ECHO},           {"json", no_argument, 0, O_JSON},
        {"stats", no_argument, 0, O_STATS},         {"batch", required_argument, 0, O_BATCH},
        {"exact", no_argument, 0, O_EXACT}, {"chat-template-file", required_argument, 0, O_TEMPLATE_FILE},
        {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->n_predict = 128;
    o->n_threads = 2;
    llmgen_sampler_defaults(&o->sp);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":m:p:f:n:t:c:h", longs, NULL)) != -1) {
        switch (c) {
        case 'm': o->model_path = optarg; break;
        case 'p': o->prompt = optarg; break;
        case 'f': o->prompt_file = optarg; break;
        case 'n': if (parse_int("--max-tokens", optarg, 1, MAX_PREDICT, &o->n_predict)) return -1; break;
        case 't': if (parse_int("--threads", optarg, 1, 256, &o->n_threads)) return -1; break;
        case 'c': if (parse_int("--ctx-size", optarg, 1, 1 << 24, &o->ctx)) return -1; break;
        case 'h': usage(stdout); exit(fflush(stdout) ? EXIT_IO : EXIT_OK);
        case O_VERSION: printf("llmgen %s\n", LLMGEN_VERSION); exit(fflush(stdout) ? EXIT_IO : EXIT_OK);
        case O_IDS: o->ids_only = 1; break;
        case O_PROMPT_IDS: o->prompt_ids = optarg; break;
        case O_TEMP: if (parse_float("--temp", optarg, 0, 100, &o->sp.temperature)) return -1; break;
        case O_TOPK: if (parse_int("--top-k", optarg, 0, INT_MAX, &o->sp.top_k)) return -1; break;
        case O_TOPP: if (parse_float("--top-p", optarg, 0, 1, &o->sp.top_p)) return -1; break;
        case O_MINP: if (parse_float("--min-p", optarg, 0, 1, &o->sp.min_p)) return -1; break;
        case O_REPEAT: if (parse_float("--repeat-penalty", optarg, 0.01, 100, &o->sp.repeat_penalty)) return -1; break;
        case O_SEED: if (parse_seed(optarg, &o->sp.seed)) return -1; break;
        case O_IGNORE_EOS: o->ignore_eos = 1; break;
        case O_DUMP: o->dump_logits = optarg; break;
        case O_KERNELS: o->kernels = optarg; break;
        case O_EXACT: o->exact = 1; break;
        case O_CHAT: o->chat = 1; break;
        case O_SYSTEM: o->system = optarg; break;
        case O_TEMPLATE: o->template_name = optarg; break;
        case O_TEMPLATE_FILE: o->template_file = optarg; break;
        case O_DATE: o->date = optarg; break;
        case O_STOP:
            unescape(optarg);
            if (!*optarg) return die(-1, "--stop: the stop string is empty"), -1;
            if (o->n_stops == MAX_STOPS) return die(-1, "--stop: at most %d stop strings", MAX_STOPS), -1;
            o->stops[o->n_stops++] = optarg;
            break;
        case O_ECHO: o->echo = 1; break;
        case O_JSON: o->json = 1; break;
        case O_STATS: o->stats = 1; break;
        case O_BATCH: o->batch = optarg; break;
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
    int sources = !!o->prompt + !!o->prompt_file + !!o->prompt_ids + !!o->batch;
    if (sources > 1) {
        fprintf(stderr, "llmgen: give only one of --prompt, --file, --prompt-ids, --batch\n");
        return -1;
    }
    if (o->date && !valid_date(o->date)) {
        fprintf(stderr, "llmgen: --date: expected \"DD Mon YYYY\" (e.g. \"02 Jan 2025\"), got '%s'\n", o->date);
        return -1;
    }
    if ((o->template_name || o->template_file || o->date) && !o->chat && !o->batch) {
        fprintf(stderr, "llmgen: --%s needs --chat\n",
                o->template_name ? "template" : o->template_file ? "chat-template-file" : "date");
        return -1;
    }
    if (o->template_name && o->template_file) {
        fprintf(stderr, "llmgen: give only one of --template, --chat-template-file\n");
        return -1;
    }
    if (o->system && !o->chat && !o->batch) {
        fprintf(stderr, "llmgen: --system needs --chat\n");
        return -1;
    }
    if (o->batch && (o->echo || o->dump_logits)) {
        fprintf(stderr, "llmgen: --batch cannot be combined with %s\n", o->echo ? "--echo" : "--dump-logits");
        return -1;
    }
    return 0;
}

/* ---- small helpers ----------------------------------------------------------------- */

/* "1,2,3" -> ids (malloc'd). */
static int parse_id_list(const char *s, int32_t **out, int *n) {
    size_t cap = 16, k = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return -1;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < 0 || v > INT32_MAX || (*end && *end != ',') || k >= INT_MAX / 2) {
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

/* Whole stream into a NUL-terminated heap buffer; NULL with errno on failure. */
static char *read_stream(FILE *f, size_t *len) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = cap > SIZE_MAX / 2 ? NULL : realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = b;
        }
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        errno = e ? e : EIO;
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A growable byte buffer (generated text). */
typedef struct {
    char *p;
    size_t n, cap;
} buf;

static int buf_put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

/* Length of the valid UTF-8 sequence at s[0..n), 0 if invalid (RFC 3629: no
 * overlongs, no surrogates, at most U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, min = 0x10000;
    else return 0;
    if (n < len) return 0;
    unsigned cp = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

/* Offset of the first invalid UTF-8 byte, or n if all valid. */
static size_t utf8_invalid_at(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (!k) return i;
        i += k;
    }
    return n;
}

/* A JSON string of possibly invalid UTF-8: invalid bytes become U+FFFD (as a
 * lossy decoder would), since JSON text must be valid Unicode. */
static json_t *json_text(const char *s, size_t n) {
    if (utf8_invalid_at(s, n) == n) return json_stringn(s, n);
    buf b = {0};
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq((const unsigned char *)s + i, n - i);
        if (buf_put(&b, k ? s + i : "\xEF\xBF\xBD", k ? k : 3)) break;
        i += k ? k : 1;
    }
    json_t *j = json_stringn(b.p ? b.p : "", b.n);
    free(b.p);
    return j;
}

static json_t *json_ids(const int32_t *ids, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

/* ---- output ------------------------------------------------------------------------ */

/* Where generated output goes: stdout, with write errors remembered. EPIPE
 * means the reader is gone: stop quietly. */
typedef struct {
    int failed;   /* a write failed */
    int err;      /* its errno */
} sink;

static int emit(sink *o, const char *s, size_t n) {
    if (o->failed) return -1;
    if ((n && fwrite(s, 1, n, stdout) != n) || fflush(stdout) != 0) {
        o->failed = 1;
        o->err = errno ? errno : EIO;
        return -1;
    }
    return 0;
}

/* Exit code for a failed write: quiet 0 for a closed pipe, else an I/O error. */
static int sink_exit(const sink *o) {
    if (o->err == EPIPE) return EXIT_OK;
    return die(EXIT_IO, "stdout: write error: %s", strerror(o->err));
}

/* ---- one generation request --------------------------------------------------------- */

typedef struct {
    /* the prompt: text (tokenized, after the chat template if chat) or ids */
    const char *text;          /* may contain NULs: text_len counts */
    size_t text_len;
    int32_t *ids;              /* owned when set: --prompt-ids / "prompt_ids" */
    int n_ids;
    const char *source;        /* names the prompt in messages: "stdin", a file, "--prompt", "line 3" */
    int chat;
    const char *system;
    const char *sys_source;    /* names the system message in messages */
    const char *template_name; /* --template, or NULL: the model's own */
    const char *template_text; /* --chat-template-file's text, or NULL */
    const char *date;          /* --date, or NULL */
    int n_predict;
    int ignore_eos;
    const char *stops[MAX_STOPS];
    int n_stops;
    llmgen_sampler_params sp;
} request;

typedef struct {
    int32_t *prompt;           /* (n_prompt) owned */
    int n_prompt;
    int32_t *gen;              /* (n_gen) generated ids, owned */
    int n_gen;
    buf text;                  /* generated text (without a matched stop string) */
    const char *stop_reason;   /* "eos", "length", "stop", "interrupted" */
    double t_prefill, t_decode, t_first; /* seconds: prefill, all decode steps, until the first token */
} result;

static void result_free(result *r) {
    free(r->prompt);
    free(r->gen);
    free(r->text.p);
    memset(r, 0, sizeof *r);
}

/* Token ids of the prompt: from ids, or text through the chat template and the tokenizer. */
static int prompt_tokens(llmgen_model *m, const request *q, result *r, buf *echo, char *err) {
    if (q->ids) {
        if (!(r->prompt = malloc(((size_t)q->n_ids + 1) * sizeof *r->prompt))) return EXIT_NOMEM;
        memcpy(r->prompt, q->ids, (size_t)q->n_ids * sizeof *r->prompt);
        r->n_prompt = q->n_ids;
    } else {
        size_t bad = utf8_invalid_at(q->text, q->text_len);
        if (bad < q->text_len) {
            seterr(err, "%s: invalid UTF-8 at byte %zu of the prompt", q->source, bad);
            return EXIT_USAGE;
        }
        if (q->text_len == 0) {
            seterr(err, "%s: empty prompt: nothing to continue from", q->source);
            return EXIT_USAGE;
        }
        if (memchr(q->text, '\0', q->text_len)) {
            seterr(err, "%s: the prompt contains a NUL byte", q->source);
            return EXIT_USAGE;
        }
        if (q->chat && q->system && (bad = utf8_invalid_at(q->system, strlen(q->system))) < strlen(q->system)) {
            seterr(err, "%s: invalid UTF-8 at byte %zu of the system message", q->sys_source, bad);
            return EXIT_USAGE;
        }
        char *chat = NULL, e[ERRLEN];
        const char *text = q->text;
        size_t len = q->text_len;
        llmgen_status st;
        if (q->chat && q->template_text) {
            llmgen_message msgs[2] = {{"system", q->system}, {"user", q->text}};
            llmgen_chat_options co = {.date = q->date, .template_text = q->template_text};
            if ((st = llmgen_chat_render_messages(m, q->system ? msgs : msgs + 1, q->system ? 2 : 1, 1, &co, &chat,
                                                  e, sizeof e))) {
                seterr(err, "--chat: %s", e);
                return exit_code(st);
            }
            text = chat;
            len = strlen(chat);
        } else if (q->chat) {
            if ((st = llmgen_chat_render_as(m, q->template_name, q->date, q->system, q->text, &chat, e, sizeof e))) {
                seterr(err, "--chat: %s", e);
                return st == LLMGEN_E_TOKENIZER ? EXIT_MODEL : exit_code(st);
            }
            text = chat;
            len = strlen(chat);
        }
        size_t n;
        st = llmgen_tokenize(m, text, len, 1, 1, &r->prompt, &n, e, sizeof e);
        if (!st && echo && buf_put(echo, text, len)) st = LLMGEN_E_NOMEM;
        llmgen_free(chat);
        if (st) {
            seterr(err, "%s: %s", q->source, e);
            return exit_code(st);
        }
        if (n > INT_MAX / 2) {
            seterr(err, "%s: prompt too long", q->source);
            return EXIT_CONTEXT;
        }
        r->n_prompt = (int)n;
    }
    if (r->n_prompt == 0) {
        seterr(err, "%s: empty prompt: nothing to continue from", q->source);
        return EXIT_USAGE;
    }
    return 0;
}

/* Longest suffix of s[0..n) that is a proper prefix of a stop string. */
static size_t stop_holdback(const request *q, const char *s, size_t n) {
    size_t best = 0;
    for (int i = 0; i < q->n_stops; i++) {
        size_t L = strlen(q->stops[i]);
        for (size_t k = L - 1 < n ? L - 1 : n; k > best; k--)
            if (!memcmp(s + n - k, q->stops[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

/* First match of any stop string in s[from..n) (returns its offset or -1). */
static long stop_find(const request *q, const char *s, size_t n, size_t from) {
    long best = -1;
    for (int i = 0; i < q->n_stops; i++) {
        const char *hit = memmem(s + from, n - from, q->stops[i], strlen(q->stops[i]));
        if (hit && (best < 0 || hit - s < best)) best = hit - s;
    }
    return best;
}

typedef struct {
    llmgen_model *m;
    llmgen_session *s;
    const options *o;
    int stream_text;           /* print text as it comes */
    int stream_ids;            /* print ids as they come */
    FILE *dump;                /* --dump-logits or NULL */
    sink *out;
} runner;

/* Decode loop for one request: fills r, streams if asked. Returns an exit code
 * (0 ok) and writes the message into err for non-zero codes it reports. */
static int generate(runner *R, const request *q, result *r, char *err) {
    char e[ERRLEN];
    llmgen_capabilities caps;
    llmgen_model_capabilities(R->m, &caps);
    int V = caps.vocab_size, rc = 0;
    llmgen_sampler *smp = llmgen_sampler_new(&q->sp, V);
    int32_t *hist = malloc(((size_t)r->n_prompt + (size_t)q->n_predict + 1) * sizeof *hist);
    llmgen_detok *dt = NULL;
    r->gen = malloc(((size_t)q->n_predict + 1) * sizeof *r->gen);
    if (!smp || !hist || !r->gen) {
        rc = EXIT_NOMEM;
        seterr(err, "out of memory");
        goto out;
    }
    if (caps.has_tokenizer && llmgen_detok_new(R->m, &dt, e, sizeof e)) {
        rc = EXIT_NOMEM;
        seterr(err, "%s", e);
        goto out;
    }
    memcpy(hist, r->prompt, (size_t)r->n_prompt * sizeof *hist);
    int n_hist = r->n_prompt;
    size_t printed = 0; /* bytes of r->text already written to stdout */
    const float *logits;
    llmgen_session_reset(R->s);
    double t0 = now();
    llmgen_status st = llmgen_prefill(R->s, r->prompt, r->n_prompt, &logits, e, sizeof e);
    r->t_prefill = now() - t0;
    double t_dec0 = now();
    r->stop_reason = "length";
    for (int i = 0; i < q->n_predict; i++) {
        if (st) {
            rc = exit_code(st);
            seterr(err, "%s", e);
            break;
        }
        if (R->dump && fwrite(logits, sizeof(float), (size_t)V, R->dump) != (size_t)V) {
            rc = EXIT_IO;
            seterr(err, "%s: write failed: %s", R->o->dump_logits, strerror(errno));
            break;
        }
        int32_t id = llmgen_sample(smp, logits, hist, n_hist);
        if (i == 0) r->t_first = now() - t0;
        if (!q->ignore_eos && llmgen_is_eos(R->m, id)) {
            r->stop_reason = "eos";
            break;
        }
        hist[n_hist++] = id;
        r->gen[r->n_gen++] = id;
        if (R->stream_ids) {
            char b[16];
            int k = snprintf(b, sizeof b, "%s%d", i || (R->o->echo && r->n_prompt) ? "," : "", id);
            if (emit(R->out, b, (size_t)k)) break;
        }
        int stopped = 0;
        if (dt) {
            const char *piece;
            size_t len, before = r->text.n;
            if (llmgen_detok_put(dt, id, &piece, &len, e, sizeof e)) {
                rc = EXIT_MODEL;
                seterr(err, "%s", e);
                break;
            }
            if (buf_put(&r->text, piece, len)) {
                rc = EXIT_NOMEM;
                seterr(err, "out of memory");
                break;
            }
            size_t safe = r->text.n;
            if (q->n_stops) {
                /* a new match ends past `before`, so it starts at most max_len - 1 bytes earlier */
                size_t back = 0;
                for (int s = 0; s < q->n_stops; s++)
                    if (strlen(q->stops[s]) > back) back = strlen(q->stops[s]);
                long hit = stop_find(q, r->text.p, r->text.n, before >= back ? before - back + 1 : 0);
                if (hit >= 0) {
                    r->text.n = (size_t)hit;
                    r->text.p[hit] = '\0';
                    safe = (size_t)hit;
                    stopped = 1;
                } else {
                    safe = r->text.n - stop_holdback(q, r->text.p, r->text.n);
                }
            }
            if (R->stream_text && safe > printed) {
                if (emit(R->out, r->text.p + printed, safe - printed)) break;
                printed = safe;
            }
        }
        if (stopped) {
            r->stop_reason = "stop";
            break;
        }
        if (interrupted) {
            r->stop_reason = "interrupted";
            break;
        }
        if (i + 1 < q->n_predict) {
            if (llmgen_session_pos(R->s) >= llmgen_session_ctx(R->s)) {
                rc = EXIT_CONTEXT;
                seterr(err, "out of context after %d tokens (context size %d; raise -c)",
                         llmgen_session_pos(R->s), llmgen_session_ctx(R->s));
                break;
            }
            st = llmgen_decode_step(R->s, id, &logits, e, sizeof e);
        }
    }
    r->t_decode = now() - t_dec0;
    if (dt && strcmp(r->stop_reason, "stop") != 0) {
        const char *piece;
        size_t len;
        llmgen_detok_flush(dt, &piece, &len);
        if (buf_put(&r->text, piece, len) && !rc) {
            rc = EXIT_NOMEM;
            seterr(err, "out of memory");
        }
    }
    if (R->stream_text && r->text.n > printed) emit(R->out, r->text.p + printed, r->text.n - printed);
out:
    llmgen_detok_free(dt);
    llmgen_sampler_free(smp);
    free(hist);
    return rc;
}

/* ---- JSON results ------------------------------------------------------------------ */

static json_t *result_json(const result *r, int has_text) {
    json_t *o = json_object();
    json_object_set_new(o, "prompt_ids", json_ids(r->prompt, r->n_prompt));
    json_object_set_new(o, "ids", json_ids(r->gen, r->n_gen));
    json_object_set_new(o, "text", has_text ? json_text(r->text.p ? r->text.p : "", r->text.n) : json_null());
    json_object_set_new(o, "stop_reason", json_string(r->stop_reason ? r->stop_reason : "length"));
    json_t *t = json_object();
    int steps = r->n_gen > 1 ? r->n_gen - 1 : 0;
    json_object_set_new(t, "prompt_tokens", json_integer(r->n_prompt));
    json_object_set_new(t, "generated_tokens", json_integer(r->n_gen));
    json_object_set_new(t, "prefill_s", json_real(r->t_prefill));
    json_object_set_new(t, "decode_s", json_real(r->t_decode));
    json_object_set_new(t, "first_token_s", json_real(r->t_first));
    json_object_set_new(t, "prompt_tokens_per_s", json_real(r->t_prefill > 0 ? r->n_prompt / r->t_prefill : 0));
    json_object_set_new(t, "generation_tokens_per_s", json_real(r->t_decode > 0 ? steps / r->t_decode : 0));
    json_object_set_new(o, "timings", t);
    return o;
}

/* One compact JSON line on stdout. */
static int emit_json(sink *out, json_t *o) {
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    int rc = s ? emit(out, s, strlen(s)) || emit(out, "\n", 1) : -1;
    free(s);
    return rc;
}

/* ---- --stats ---------------------------------------------------------------------- */

static void print_stats(double t_load, const result *r) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int steps = r->n_gen > 1 ? r->n_gen - 1 : 0;
    fprintf(stderr, "llmgen: load %.3f s | prompt %d tokens in %.3f s (%.1f tokens/s) | first token %.3f s | "
                    "generation %d tokens, %.1f tokens/s | peak RSS %.1f MiB\n",
            t_load, r->n_prompt, r->t_prefill, r->t_prefill > 0 ? r->n_prompt / r->t_prefill : 0.0, r->t_first,
            r->n_gen, r->t_decode > 0 ? steps / r->t_decode : 0.0, (double)ru.ru_maxrss / 1024.0);
}

/* ---- --batch ----------------------------------------------------------------------- */

/* Fill q from one JSONL request (defaults from the command line). The request
 * keeps pointers into root, which the caller frees with json_decref. */
static int batch_parse(json_t *root, const options *o, request *q, char *err) {
    const char *k;
    json_t *v;
    if (!json_is_object(root)) return seterr(err, "a request must be a JSON object"), -1;
    q->n_predict = o->n_predict;
    q->ignore_eos = o->ignore_eos;
    q->chat = o->chat;
    q->system = o->system;
    q->template_name = o->template_name;
    q->template_text = o->template_text;
    q->date = o->date;
    q->sp = o->sp;
    q->n_stops = o->n_stops;
    memcpy(q->stops, o->stops, sizeof q->stops);
    int has_prompt = 0;
    json_object_foreach(root, k, v) {
        if (!strcmp(k, "id")) continue; /* echoed back as is */
        if (!strcmp(k, "prompt")) {
            if (!json_is_string(v)) return seterr(err, "\"prompt\" must be a string"), -1;
            q->text = json_string_value(v);
            q->text_len = json_string_length(v);
            has_prompt++;
        } else if (!strcmp(k, "prompt_ids")) {
            size_t n = json_array_size(v), i;
            json_t *x;
            if (!json_is_array(v) || n > INT_MAX / 2)
                return seterr(err, "\"prompt_ids\" must be an array of token ids"), -1;
            free(q->ids);
            if (!(q->ids = malloc((n + 1) * sizeof *q->ids))) return seterr(err, "out of memory"), -1;
            json_array_foreach(v, i, x) {
                if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX)
                    return seterr(err, "\"prompt_ids\"[%zu] is not a token id", i), -1;
                q->ids[i] = (int32_t)json_integer_value(x);
            }
            q->n_ids = (int)n;
            has_prompt++;
        } else if (!strcmp(k, "max_tokens")) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_PREDICT)
                return seterr(err, "\"max_tokens\" must be an integer from 1 to %d", MAX_PREDICT), -1;
            q->n_predict = (int)json_integer_value(v);
        } else if (!strcmp(k, "temp") || !strcmp(k, "top_p") || !strcmp(k, "min_p") ||
                   !strcmp(k, "repeat_penalty")) {
            if (!json_is_number(v)) return seterr(err, "\"%s\" must be a number", k), -1;
            float f = (float)json_number_value(v);
            *(k[0] == 't' && k[1] == 'e' ? &q->sp.temperature
              : k[0] == 't'              ? &q->sp.top_p
              : k[0] == 'm'              ? &q->sp.min_p
                                         : &q->sp.repeat_penalty) = f;
        } else if (!strcmp(k, "top_k")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT_MAX)
                return seterr(err, "\"top_k\" must be a non-negative integer"), -1;
            q->sp.top_k = (int)json_integer_value(v);
        } else if (!strcmp(k, "seed")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0)
                return seterr(err, "\"seed\" must be a non-negative integer"), -1;
            q->sp.seed = (uint64_t)json_integer_value(v);
        } else if (!strcmp(k, "chat") || !strcmp(k, "ignore_eos")) {
            if (!json_is_boolean(v)) return seterr(err, "\"%s\" must be true or false", k), -1;
            *(k[0] == 'c' ? &q->chat : &q->ignore_eos) = json_is_true(v);
        } else if (!strcmp(k, "system")) {
            if (!json_is_string(v) || memchr(json_string_value(v), '\0', json_string_length(v)))
                return seterr(err, "\"system\" must be a string without NUL"), -1;
            q->system = json_string_value(v);
        } else if (!strcmp(k, "stop")) {
            size_t i;
            json_t *x;
            if (!json_is_array(v) || json_array_size(v) > MAX_STOPS)
                return seterr(err, "\"stop\" must be an array of at most %d strings", MAX_STOPS), -1;
            q->n_stops = 0;
            json_array_foreach(v, i, x) {
                if (!json_is_string(x) || json_string_length(x) == 0 ||
                    memchr(json_string_value(x), '\0', json_string_length(x)))
                    return seterr(err, "\"stop\"[%zu] must be a non-empty string", i), -1;
                q->stops[q->n_stops++] = json_string_value(x);
            }
        } else {
            return seterr(err, "unknown key \"%s\"", k), -1;
        }
    }
    if (has_prompt != 1) return seterr(err, "give exactly one of \"prompt\" and \"prompt_ids\""), -1;
    char e[ERRLEN];
    if (llmgen_sampler_check(&q->sp, e, sizeof e)) return seterr(err, "%s", e), -1;
    return 0;
}

/* Per-line error object: {"id": ..., "line": N, "error": "...", "exit": code}. */
static json_t *batch_error(json_t *id, long line, const char *msg, int code) {
    json_t *o = json_object();
    if (id) json_object_set(o, "id", id);
    json_object_set_new(o, "line", json_integer(line));
    json_object_set_new(o, "error", json_text(msg, strlen(msg)));
    json_object_set_new(o, "exit", json_integer(code));
    return o;
}

static int run_batch(runner *R, int has_tokenizer) {
    const options *o = R->o;
    FILE *in = strcmp(o->batch, "-") ? fopen(o->batch, "r") : stdin;
    if (!in) return die(EXIT_IO, "%s: cannot open: %s", o->batch, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int first_fail = 0;
    char err[ERRLEN], src[64];
    errno = 0;
    while (!interrupted && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        size_t sp = strspn(line, " \t");
        if ((size_t)len <= sp) continue; /* blank lines are allowed */
        json_error_t je;
        json_t *root = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &je), *out;
        request q = {0};
        result r = {0};
        int rc = 0;
        snprintf(src, sizeof src, "%s:%ld", strcmp(o->batch, "-") ? o->batch : "stdin", lineno);
        q.source = q.sys_source = src;
        if (!root) {
            seterr(err, "not JSON: %s (column %d)", je.text, je.column);
            rc = EXIT_USAGE;
        } else if (batch_parse(root, o, &q, err)) {
            rc = EXIT_USAGE;
        } else if (!q.ids && !has_tokenizer) {
            seterr(err, "this model has no tokenizer: use \"prompt_ids\"");
            rc = EXIT_USAGE;
        } else if (!(rc = prompt_tokens(R->m, &q, &r, NULL, err))) {
            rc = generate(R, &q, &r, err);
        }
        if (rc) {
            out = batch_error(root ? json_object_get(root, "id") : NULL, lineno, err, rc);
            if (!first_fail) first_fail = rc;
        } else {
            out = result_json(&r, has_tokenizer);
            json_t *id = json_object_get(root, "id");
            if (id) json_object_set(out, "id", id);
            json_object_set_new(out, "line", json_integer(lineno));
        }
        int wr = emit_json(R->out, out);
        json_decref(out);
        json_decref(root);
        free(q.ids);
        result_free(&r);
        if (wr) break;
        errno = 0;
    }
    int read_err = ferror(in) ? errno : 0;
    free(line);
    if (in != stdin) fclose(in);
    if (R->out->failed) return sink_exit(R->out);
    if (interrupted) return EXIT_INTERRUPT;
    if (read_err) return die(EXIT_IO, "%s: read error: %s", o->batch, strerror(read_err));
    return first_fail;
}

/* ---- the single-prompt run --------------------------------------------------------- */

/* Read the prompt text the options name (file, stdin or -p) into *text. */
static int read_prompt(const options *o, request *q, char **owned) {
    const char *path = o->prompt_file;
    if (o->prompt && strcmp(o->prompt, "-")) {
        q->text = o->prompt;
        q->text_len = strlen(o->prompt);
        q->source = "--prompt";
        return 0;
    }
    FILE *f = stdin;
    q->source = "stdin";
    if (path && strcmp(path, "-")) {
        if (!(f = fopen(path, "rb"))) return die(EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
        q->source = path;
    }
    size_t len;
    char *t = read_stream(f, &len);
    int e = errno;
    if (f != stdin) fclose(f);
    if (!t) {
        if (interrupted) return EXIT_INTERRUPT;
        return die(e == ENOMEM ? EXIT_NOMEM : EXIT_IO, "%s: read error: %s", q->source, strerror(e));
    }
    *owned = t;
    q->text = t;
    q->text_len = len;
    return 0;
}

static int run_single(runner *R, int has_tokenizer, double t_load) {
    const options *o = R->o;
    request q = {.chat = o->chat, .system = o->system, .sys_source = "--system", .template_name = o->template_name,
                 .template_text = o->template_text, .date = o->date, .n_predict = o->n_predict, .ignore_eos = o->ignore_eos,
                 .n_stops = o->n_stops, .sp = o->sp};
    memcpy(q.stops, o->stops, sizeof q.stops);
    result r = {0};
    buf echo = {0};
    char *owned = NULL, err[ERRLEN];
    int rc;
    if (o->prompt_ids) {
        q.source = "--prompt-ids";
        if (parse_id_list(o->prompt_ids, &q.ids, &q.n_ids)) {
            rc = die(EXIT_USAGE, "--prompt-ids: expected comma-separated non-negative integers, got '%s'",
                     o->prompt_ids);
            goto out;
        }
        if (o->chat) {
            rc = die(EXIT_USAGE, "--chat needs a text prompt, not --prompt-ids");
            goto out;
        }
    } else if ((rc = read_prompt(o, &q, &owned))) {
        goto out;
    }
    if ((rc = prompt_tokens(R->m, &q, &r, o->echo && !q.ids ? &echo : NULL, err))) {
        rc = die(rc, "%s", err);
        goto out;
    }
    if (r.n_prompt > llmgen_session_ctx(R->s)) {
        rc = die(EXIT_CONTEXT, "%s: prompt of %d tokens does not fit the context size %d (raise -c)", q.source,
                 r.n_prompt, llmgen_session_ctx(R->s));
        goto out;
    }
    if (o->echo && !o->json) {
        if (o->ids_only) {
            for (int i = 0; i < r.n_prompt && !R->out->failed; i++) {
                char b[16];
                int k = snprintf(b, sizeof b, "%s%d", i ? "," : "", r.prompt[i]);
                emit(R->out, b, (size_t)k);
            }
        } else if (q.ids) {
            char *t;
            size_t len;
            if (!llmgen_detokenize(R->m, r.prompt, (size_t)r.n_prompt, &t, &len, err, sizeof err)) {
                emit(R->out, t, len);
                llmgen_free(t);
            }
        } else {
            emit(R->out, echo.p, echo.n);
        }
    }
    rc = generate(R, &q, &r, err);
    if (rc) {
        if (!o->json) emit(R->out, "\n", 1); /* end the partial line before the diagnostic */
        die(rc, "%s", err);
        goto out;
    }
    if (o->json) {
        json_t *j = result_json(&r, has_tokenizer);
        json_object_set_new(json_object_get(j, "timings"), "load_s", json_real(t_load));
        emit_json(R->out, j);
        json_decref(j);
    } else {
        emit(R->out, "\n", 1);
    }
    if (o->stats) print_stats(t_load, &r);
    if (R->out->failed) rc = sink_exit(R->out);
    else if (!strcmp(r.stop_reason, "interrupted")) rc = EXIT_INTERRUPT;
out:
    free(echo.p);
    free(owned);
    free(q.ids);
    result_free(&r);
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

/* `llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]`: write an MLX
 * affine checkpoint (llmgen_quantize does the work; this only parses and reports). */
static int quantize_main(int argc, char **argv) {
    static const char *use = "usage: llmgen quantize IN_DIR OUT_DIR [--bits 4|8] [--group-size 32|64|128]";
    const char *in = NULL, *out = NULL;
    int bits = 4, group = 64;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s\nWrite an MLX affine-quantized copy of a bf16/f16/f32 safetensors model\n"
                   "(defaults: --bits 4 --group-size 64). OUT_DIR must not exist.\n", use);
            return EXIT_OK;
        }
        if (!strcmp(a, "--bits") || !strcmp(a, "--group-size")) {
            char *end;
            long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || *end || end == argv[i + 1] || v < 0 || v > 1024)
                return die(EXIT_USAGE, "quantize: %s needs a number (see llmgen quantize --help)", a);
            *(a[2] == 'b' ? &bits : &group) = (int)v;
            i++;
        } else if (a[0] == '-' && a[1]) {
            return die(EXIT_USAGE, "quantize: unknown option %s (see llmgen quantize --help)", a);
        } else if (!in || !out) {
            *(!in ? &in : &out) = a;
        } else {
            return die(EXIT_USAGE, "quantize: unexpected argument '%s'", a);
        }
    }
    if (!in || !out) return die(EXIT_USAGE, "%s", use);
    char err[ERRLEN];
    llmgen_status st = llmgen_quantize(in, out, bits, group, err, sizeof err);
    return st ? die(exit_code(st), "quantize: %s", err) : EXIT_OK;
}

/* ---- chat templates ------------------------------------------------------------------ */

/* The whole of a text file, NUL-terminated, into *out (malloc'd). */
static int slurp(const char *path, const char *what, char **out) {
    FILE *f = fopen(path, "rb");
    if (!f) return die(EXIT_IO, "%s: cannot open %s: %s", what, path, strerror(errno));
    buf b = {0};
    char tmp[65536];
    size_t n;
    int nomem = 0;
    while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
        if (buf_put(&b, tmp, n)) {
            nomem = 1;
            break;
        }
    int bad = ferror(f);
    fclose(f);
    if (nomem || buf_put(&b, "", 1)) {
        free(b.p);
        return die(EXIT_NOMEM, "%s: out of memory reading %s", what, path);
    }
    if (bad) {
        free(b.p);
        return die(EXIT_IO, "%s: read error on %s", what, path);
    }
    if (strlen(b.p) != b.n - 1) {
        free(b.p);
        return die(EXIT_USAGE, "%s: %s contains a NUL byte", what, path);
    }
    *out = b.p;
    return 0;
}

/* MESSAGES.json: a JSON array of {"role": "...", "content": "..."} objects. The
 * messages point into *root (json_decref it). */
static int read_messages(const char *path, json_t **root, llmgen_message **msgs, size_t *n) {
    json_error_t je;
    *root = NULL;
    *msgs = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return die(EXIT_IO, "--messages: cannot open %s: %s", path, strerror(errno));
    json_t *r = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!r) return die(EXIT_USAGE, "--messages: %s:%d:%d: %s", path, je.line, je.column, je.text);
    *root = r;
    if (!json_is_array(r)) return die(EXIT_USAGE, "--messages: %s: expected a JSON array of {\"role\", \"content\"} objects", path);
    *n = json_array_size(r);
    if (!(*msgs = calloc(*n ? *n : 1, sizeof **msgs))) return die(EXIT_NOMEM, "--messages: out of memory");
    for (size_t i = 0; i < *n; i++) {
        json_t *m = json_array_get(r, i), *role = json_object_get(m, "role"), *content = json_object_get(m, "content");
        if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content))
            return die(EXIT_USAGE, "--messages: %s: message %zu is not an object with string \"role\" and \"content\"",
                       path, i + 1);
        if (strlen(json_string_value(role)) != json_string_length(role) ||
            strlen(json_string_value(content)) != json_string_length(content))
            return die(EXIT_USAGE, "--messages: %s: message %zu contains a NUL character", path, i + 1);
        (*msgs)[i] = (llmgen_message){json_string_value(role), json_string_value(content)};
    }
    return 0;
}

/* `llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json
 *  [--bos-token S] [--eos-token S] [--no-generation-prompt] [--date "DD Mon YYYY"]`:
 * print the rendered conversation to stdout with nothing added. */
static int chat_template_main(int argc, char **argv) {
    static const char *use = "usage: llmgen chat-template (-m MODEL | --template-file FILE) --messages MESSAGES.json\n"
                             "                            [--bos-token S] [--eos-token S] [--no-generation-prompt]"
                             " [--date \"DD Mon YYYY\"]";
    const char *model = NULL, *tfile = NULL, *mfile = NULL;
    llmgen_chat_options co = {0};
    int add_gen = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "-m") || !strcmp(a, "--model") ? &model
                         : !strcmp(a, "--template-file") ? &tfile
                         : !strcmp(a, "--messages") ? &mfile
                         : !strcmp(a, "--bos-token") ? &co.bos_token
                         : !strcmp(a, "--eos-token") ? &co.eos_token
                         : !strcmp(a, "--date") ? &co.date : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s\nRender a conversation (a JSON array of {\"role\", \"content\"} objects) with the model's\n"
                   "chat template, or the Jinja template in FILE, exactly as transformers' apply_chat_template\n"
                   "renders it; the text goes to stdout with nothing added.\n", use);
            return fflush(stdout) ? EXIT_IO : EXIT_OK;
        }
        if (!strcmp(a, "--no-generation-prompt")) {
            add_gen = 0;
        } else if (dst) {
            if (i + 1 >= argc) return die(EXIT_USAGE, "chat-template: %s needs a value", a);
            *dst = argv[++i];
        } else {
            return die(EXIT_USAGE, "chat-template: unexpected argument '%s' (see llmgen chat-template --help)", a);
        }
    }
    if (!!model + !!tfile != 1 || !mfile) return die(EXIT_USAGE, "%s", use);
    if (co.date && !valid_date(co.date))
        return die(EXIT_USAGE, "chat-template: --date: expected \"DD Mon YYYY\" (e.g. \"02 Jan 2025\"), got '%s'",
                   co.date);
    char *text = NULL, *out = NULL, err[ERRLEN];
    json_t *root = NULL;
    llmgen_message *msgs = NULL;
    llmgen_model *m = NULL;
    size_t n = 0;
    int rc = tfile ? slurp(tfile, "--template-file", &text) : 0;
    if (!rc) rc = read_messages(mfile, &root, &msgs, &n);
    if (!rc && model) {
        /* exact mode: nothing is repacked, only the tokenizer is needed */
        llmgen_model_options mo = {.n_threads = 1, .exact = 1};
        llmgen_status st = llmgen_model_open(model, &mo, &m, err, sizeof err);
        if (st) rc = die(exit_code(st), "%s", err);
    }
    if (!rc) {
        co.template_text = text;
        llmgen_status st = llmgen_chat_render_messages(m, msgs, n, add_gen, &co, &out, err, sizeof err);
        if (st) rc = die(exit_code(st), "chat-template: %s", err);
        else if (fwrite(out, 1, strlen(out), stdout) != strlen(out) || fflush(stdout))
            rc = errno == EPIPE ? EXIT_OK : die(EXIT_IO, "stdout: write error: %s", strerror(errno));
    }
    llmgen_free(out);
    llmgen_model_free(m);
    free(msgs);
    json_decref(root);
    free(text);
    return rc;
}

int main(int argc, char **argv) {
    options o;
    char err[ERRLEN];
    if (argc > 1 && !strcmp(argv[1], "quantize")) return quantize_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "chat-template")) return chat_template_main(argc - 1, argv + 1);
    install_signals();
    if (parse_args(argc, argv, &o)) return EXIT_USAGE;
    int trc = o.template_file ? slurp(o.template_file, "--chat-template-file", &o.template_text) : 0;
    if (trc) return trc;

    double t0 = now();
    llmgen_model_options mo = {.n_threads = o.n_threads, .kernels = o.kernels, .exact = o.exact};
    llmgen_model *m;
    llmgen_status st = llmgen_model_open(o.model_path, &mo, &m, err, sizeof err);
    if (st) {
        free(o.template_text);
        return die(exit_code(st), "%s%s", st == LLMGEN_E_USAGE && o.kernels ? "--" : "", err);
    }
    double t_load = now() - t0;
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);

    int rc = 0;
    sink out = {0};
    runner R = {.m = m, .o = &o, .out = &out};
    if (!caps.has_tokenizer && (o.n_stops || o.chat || (!o.ids_only && !o.json && !o.batch))) {
        rc = die(EXIT_USAGE, "%s: this model has no tokenizer: use --prompt-ids with --ids or --json%s",
                 o.model_path, o.n_stops ? " (and no --stop)" : "");
        goto out;
    }
    if (!caps.has_tokenizer && !o.prompt_ids && !o.batch) {
        rc = die(EXIT_USAGE, "%s: this model has no tokenizer: give the prompt with --prompt-ids", o.model_path);
        goto out;
    }
    if ((st = llmgen_session_new(m, o.ctx, &R.s, err, sizeof err))) {
        rc = die(o.ctx && st == LLMGEN_E_USAGE ? EXIT_USAGE : exit_code(st), "%s%s", o.ctx ? "--ctx-size: " : "",
                 err);
        goto out;
    }
    if (o.dump_logits && !(R.dump = fopen(o.dump_logits, "wb"))) {
        rc = die(EXIT_IO, "%s: cannot write: %s", o.dump_logits, strerror(errno));
        goto out;
    }
    R.stream_ids = o.ids_only && !o.json && !o.batch;
    R.stream_text = !o.ids_only && !o.json && !o.batch;
    rc = o.batch ? run_batch(&R, caps.has_tokenizer) : run_single(&R, caps.has_tokenizer, t_load);
    if (R.dump && fclose(R.dump) != 0 && !rc) rc = die(EXIT_IO, "%s: write failed: %s", o.dump_logits, strerror(errno));
    R.dump = NULL;
out:
    if (R.dump) fclose(R.dump);
    llmgen_session_free(R.s);
    llmgen_model_free(m);
    free(o.template_text);
    return rc;
}
