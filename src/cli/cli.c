/* cli.c - helpers the subcommands share (see cli.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <string.h>

#include "cli.h"
#include "progress.h"

int cli_exit_code(llmgen_status st) {
    switch (st) {
    case LLMGEN_OK: return EXIT_OK;
    case LLMGEN_E_FORMAT: case LLMGEN_E_TOKENIZER: return EXIT_MODEL;
    case LLMGEN_E_IO: return EXIT_IO;
    case LLMGEN_E_CONTEXT: return EXIT_CONTEXT;
    case LLMGEN_E_NOMEM: return EXIT_NOMEM;
    case LLMGEN_E_TEMPLATE: return EXIT_TEMPLATE;
    default: return EXIT_USAGE;
    }
}

int cli_fail(const cli_io *io, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("llmgen: ", io->diag);
    vfprintf(io->diag, fmt, ap);
    fputc('\n', io->diag);
    va_end(ap);
    return code;
}

int cli_number(const char *s, double lo, double hi, int integer, double *out) {
    char *end;
    if (!s || !*s) return -1;
    if (integer) { /* decimal digits only: no 1e3, 0x10, 1.0 or spaces */
        const char *d = s + (*s == '-' || *s == '+');
        if (!*d || d[strspn(d, "0123456789")]) return -1;
    }
    double v = strtod(s, &end);
    if (*end || end == s || !isfinite(v) || v < lo || v > hi || (integer && v != floor(v))) return -1;
    *out = v;
    return 0;
}

void cli_threads_note(FILE *diag, int asked, const llmgen_capabilities *caps) {
    if (asked > caps->cpus && caps->cpus > 0)
        fprintf(diag, "llmgen: note: -t %d is more than the %d CPU%s this process may use (%s): the threads will "
                "wait for one another\n", asked, caps->cpus, caps->cpus == 1 ? "" : "s", caps->cpus_from);
}

json_t *cli_threads_json(const llmgen_capabilities *caps) {
    json_t *t = json_object();
    json_object_set_new(t, "used", json_integer(caps->n_threads));
    json_object_set_new(t, "cpus", json_integer(caps->cpus));
    json_object_set_new(t, "cpus_from", json_string(caps->cpus_from));
    return t;
}

void cli_print_stats(double t_load, int n_prompt, const llmgen_result *r, const request *q,
                     const llmgen_capabilities *caps, const llmgen_session *s, int drafting) {
    int ring;
    double kv = (double)llmgen_session_kv_bytes(s, &ring) / (1 << 20);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int steps = r->n_ids > 1 ? r->n_ids - 1 : 0;
    char seed[40] = "", rate[32] = "-"; /* one token: no decode step to time */
    if (steps && r->decode_s > 0) snprintf(rate, sizeof rate, "%.1f", steps / r->decode_s);
    if (q->sp.temperature > 0) snprintf(seed, sizeof seed, " | seed %llu", (unsigned long long)q->sp.seed);
    char sync[80] = "";
    if (steps && r->n_syncs)
        snprintf(sync, sizeof sync, " | %.1f syncs/token", (double)r->n_syncs / steps);
    if (steps && r->n_solo)
        snprintf(sync + strlen(sync), sizeof sync - strlen(sync), " (%.0f%% on one thread: other work holds the CPUs)",
                 100.0 * (double)r->n_solo / (double)r->n_syncs);
    fprintf(stderr, "llmgen: load %.3f s | %d thread%s (%d CPU%s: %s) | prompt %d token%s in %.3f s (%.1f tokens/s) | "
            "first token %.3f s | generation %d token%s, %s tokens/s%s | peak RSS %.1f MiB | KV cache %.1f MiB "
            "(ring %d)%s\n",
            t_load, caps->n_threads, caps->n_threads == 1 ? "" : "s", caps->cpus, caps->cpus == 1 ? "" : "s",
            caps->cpus_from, n_prompt, n_prompt == 1 ? "" : "s", r->prefill_s,
            r->prefill_s > 0 ? n_prompt / r->prefill_s : 0.0,
            r->first_token_s, r->n_ids, r->n_ids == 1 ? "" : "s", rate, sync, (double)ru.ru_maxrss / 1024.0,
            kv, ring, seed);
    if (q->draft_lookup || drafting)
        fprintf(stderr, "llmgen: speculation: %d passes, %d drafted, %d accepted (%.1f%%)%s\n", r->n_passes,
                r->n_drafted, r->n_accepted, r->n_drafted ? 100.0 * r->n_accepted / r->n_drafted : 0.0,
                q->sp.temperature > 0 ? " (off: sampling)" : "");
    if (r->n_closed)
        fprintf(stderr, "llmgen: grammar: %d pick%s changed to complete the output within the budget\n", r->n_closed,
                r->n_closed == 1 ? "" : "s");
}

int cli_open_draft(const char *path, const llmgen_model_options *target, llmgen_session *s, llmgen_model **dm,
                   llmgen_session **ds, char *err) {
    llmgen_model_options mo = {.n_threads = target->n_threads, .kernels = target->kernels, .no_tokenizer = 1};
    llmgen_capabilities dc;
    llmgen_status st = llmgen_model_open(path, &mo, dm, err, CLI_ERR_LEN);
    if (st) return cli_exit_code(st);
    llmgen_model_capabilities(*dm, &dc);
    int ctx = llmgen_session_ctx(s);
    st = llmgen_session_new(*dm, ctx < dc.context_length ? ctx : dc.context_length, ds, err, CLI_ERR_LEN);
    return st ? cli_exit_code(st) : 0;
}

int cli_value(const char *opt, const char *s, double lo, double hi, int integer, double *out, char *err) {
    if (!cli_number(s, lo, hi, integer, out)) return 0;
    if (integer)
        snprintf(err, ERR_LEN, "%s: invalid value '%s' (expected an integer from %.0f to %.0f)", opt, s, lo, hi);
    else
        snprintf(err, ERR_LEN, "%s: invalid value '%s' (expected a number from %g to %g)", opt, s, lo, hi);
    return -1;
}

/* ---- options -------------------------------------------------------------------------- */

void cli_args_init(cli_args *a, int argc, char **argv) { *a = (cli_args){.argc = argc, .i = 1, .argv = argv}; }

/* llama.cpp's options a user may bring, and what llmgen says to them. */
static const struct { const char *names, *why; } habits[] = {
    {" -ngl --n-gpu-layers --gpu-layers -ngld --n-gpu-layers-draft -mg --main-gpu -sm --split-mode -ts "
     "--tensor-split -dev --device --no-kv-offload -nkvo ",
     "llmgen runs on the CPU and has no GPU offload"},
    {" -fa --flash-attn ", "llmgen's attention is always fused on the CPU: there is nothing to turn on"},
    {" -hf --hf-repo -hff --hf-file -mu --model-url -hft --hf-token ",
     "llmgen does not download models: give a local file or directory with -m"},
    {" -cnv --conversation ", "for a conversation on the terminal use -i (--chat for one turn)"},
    {" -no-cnv --no-conversation -st --single-turn ",
     "llmgen answers one prompt unless -i is given: drop this option"},
    {" -co --color ", "llmgen prints plain text (no colors)"},
    {" -if --interactive-first -i-first ", "llmgen -i waits for the first line of stdin before it generates: use -i"},
    {" -sys --system-prompt ", "use --system TEXT (with --chat or -i)"},
    {" --jinja ", "llmgen always renders the model's own Jinja chat template with --chat and -i: drop this option"},
    {" --log-disable --log-file --log-verbose -lv --verbosity ",
     "llmgen prints only errors and warnings on stderr (--stats adds timings; --no-progress drops progress lines)"},
    {" --mlock ", "llmgen maps the model read-only and does not lock it in memory: drop this option"},
    {" --no-mmap ", "llmgen always maps the model file (packed weights are copied once at load): drop this option"},
    {" -tb --threads-batch ", "one thread count serves prefill and decode: use -t"},
    {" --repeat-last-n ", "--repeat-penalty looks at the whole prompt and output (no window)"},
    {" --mirostat --mirostat-lr --mirostat-ent ", "llmgen has no mirostat sampler: use --temp with --top-p or --min-p"},
    {" --keep ", "llmgen never shifts the context: a full context ends generation (stop reason context)"},
};

/* llama.cpp's options that change nothing in llmgen: accepted and ignored (man page, LLAMA.CPP HABITS),
 * so that scripts keep working. */
static const struct { const char *names; int takes_value; } noops[] = {
    {" -e --escape ", 0},                                    /* -p processes escapes already */
    {" -no-cnv --no-conversation -st --single-turn ", 0},   /* one prompt, one answer unless -i */
    {" --no-display-prompt ", 0},                          /* only the completion is printed */
    {" -fa --flash-attn ", 1},                               /* attention is always fused */
    {" -b --batch-size -ub --ubatch-size ", 1},              /* llmgen picks its prefill chunk */
};

const char *cli_opt_name(const cli_opt *o, char *buf, size_t n) {
    if (o->long_name) snprintf(buf, n, "--%s", o->long_name);
    else snprintf(buf, n, "-%c", o->short_name);
    return buf;
}

static int unknown(const char *word, const cli_opt *table, char *err) {
    char key[64];
    snprintf(key, sizeof key, " %.*s ", (int)strcspn(word, "="), word);
    for (size_t i = 0; i < sizeof habits / sizeof *habits; i++)
        if (strstr(habits[i].names, key)) {
            snprintf(err, ERR_LEN, "unknown option %.*s: %s", (int)strcspn(word, "="), word, habits[i].why);
            return CLI_BAD;
        }
    const char *w = word + strspn(word, "-");
    size_t len = strcspn(w, "="), k = 0;
    if (word[1] != '-') { /* -in: not a bundle of -i and -n (see cli.h) */
        size_t shorts = 0;
        for (size_t i = 0; i < len; i++)
            for (const cli_opt *o = table; o->id; o++)
                if (o->short_name == w[i]) {
                    shorts++;
                    break;
                }
        if (shorts == len) {
            snprintf(err, ERR_LEN, "unknown option %s (short options are not bundled: write -%c -%c...)", word, w[0],
                     w[1]);
            return CLI_BAD;
        }
        len = 0;
    }
    /* a prefix of long options: name them (none is picked: see cli.h) */
    char hint[256] = "";
    for (const cli_opt *o = table; o->id && len; o++)
        if (o->long_name && !strncmp(o->long_name, w, len) && k < 4)
            k += snprintf(hint + strlen(hint), sizeof hint - strlen(hint), "%s--%s", k ? ", " : "", o->long_name) > 0;
    if (k) snprintf(err, ERR_LEN, "unknown option %.*s (did you mean %s?)", (int)strcspn(word, "="), word, hint);
    else snprintf(err, ERR_LEN, "unknown option %.*s (see --help)", (int)strcspn(word, "="), word);
    return CLI_BAD;
}

int cli_next(cli_args *a, const cli_opt *table, const char **value, char *err) {
    *value = NULL;
    if (a->i >= a->argc) return CLI_DONE;
    const char *w = a->argv[a->i++];
    if (a->no_more || w[0] != '-' || !w[1]) {
        *value = w;
        return CLI_ARG;
    }
    if (!strcmp(w, "--")) {
        a->no_more = 1;
        return cli_next(a, table, value, err);
    }
    const cli_opt *o = table;
    const char *eq = NULL;
    if (w[1] == '-') {
        eq = strchr(w, '=');
        size_t len = eq ? (size_t)(eq - w - 2) : strlen(w + 2);
        while (o->id && !(o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, w + 2, len))) o++;
    } else if (!w[2]) {
        while (o->id && o->short_name != w[1]) o++;
    } else {
        o = NULL;
    }
    if ((!o || !o->id) && w[1] != '-' && w[2] == '=') { /* -n=4: as -n 4 */
        for (o = table; o->id && o->short_name != w[1]; o++) {}
        if (o->id && o->arg) eq = w + 2;
        else o = NULL;
    }
    if (!o || !o->id) {
        char key[64];
        snprintf(key, sizeof key, " %.*s ", (int)strcspn(w, "="), w);
        for (size_t i = 0; i < sizeof noops / sizeof *noops; i++)
            if (strlen(key) < sizeof key - 1 && strstr(noops[i].names, key)) {
                if (noops[i].takes_value && !strchr(w, '=')) {
                    if (a->i >= a->argc) {
                        snprintf(err, ERR_LEN, "option %s needs a value (ignored by llmgen, as a no-op)", w);
                        return CLI_BAD;
                    }
                    a->i++;
                }
                return cli_next(a, table, value, err);
            }
        return unknown(w, table, err);
    }
    char name[64];
    if (!o->arg && eq) {
        snprintf(err, ERR_LEN, "option %s takes no value", cli_opt_name(o, name, sizeof name));
        return CLI_BAD;
    }
    if (o->arg && !eq && a->i >= a->argc) {
        snprintf(err, ERR_LEN, "option %s needs a value (%s)", w, o->arg);
        return CLI_BAD;
    }
    if (o->arg) *value = eq ? eq + 1 : a->argv[a->i++];
    return o->id;
}

int cli_print_options(FILE *f, const cli_opt *table) {
    enum { COL = 27 };
    for (const cli_opt *o = table; o->id; o++) {
        char head[96];
        int n = snprintf(head, sizeof head, "  %c%c%s%s%s%s%s", o->short_name ? '-' : ' ',
                         o->short_name ? o->short_name : ' ', o->short_name && o->long_name ? ", " : "  ",
                         o->long_name ? "--" : "", o->long_name ? o->long_name : "", o->arg ? " " : "",
                         o->arg ? o->arg : "");
        if (fprintf(f, "%s%*s", head, n <= COL - 2 ? COL - n : 2, "") < 0) return -1;
        for (const char *h = o->help; *h;) {
            size_t k = strcspn(h, "\n");
            if (fprintf(f, "%.*s\n", (int)k, h) < 0) return -1;
            h += k;
            if (*h == '\n' && *++h && fprintf(f, "%*s", COL, "") < 0) return -1;
        }
    }
    return 0;
}

int cli_common_take(cli_common *c, int id, const char *value, char *err) {
    double x;
    switch (id) {
    case CLI_HELP: c->help = 1; return 1;
    case CLI_MODEL: c->model = value; return 1;
    case CLI_KERNELS: c->kernels = value; return 1;
    case CLI_EXACT: c->exact = 1; return 1;
    case CLI_SPLIT_ALL: c->split_all = 1; return 1;
    case CLI_PROGRESS: c->progress = PROGRESS_PLAIN; return 1;
    case CLI_NO_PROGRESS: c->progress = PROGRESS_OFF; return 1;
    case CLI_THREADS:
        if (cli_value("--threads", value, 1, LLMGEN_MAX_THREADS, 1, &x, err)) return -1;
        c->threads = (int)x;
        return 1;
    case CLI_CTX:
        if (cli_value("--ctx-size", value, 1, LLMGEN_MAX_CONTEXT, 1, &x, err)) return -1;
        c->ctx = (int)x;
        return 1;
    }
    return 0;
}

llmgen_status cli_model_open(const cli_common *c, const char *path, int tokenizer_only, llmgen_model **m, char *err) {
    llmgen_model_options mo = {.n_threads = c->threads, .kernels = c->kernels, .exact = c->exact,
                               .tokenizer_only = tokenizer_only, .split_all = c->split_all};
    char e[ERR_LEN];
    progress pg;
    progress_init(&pg, stderr, c->progress);
    progress_load_begin(&pg, path ? path : c->model);
    llmgen_status st = llmgen_model_open(path ? path : c->model, &mo, m, e, sizeof e);
    progress_load_end(&pg);
    const char *p = path ? path : c->model, *slash = strchr(p, '/');
    struct stat sb;
    if (st == LLMGEN_E_IO && slash && !strchr(slash + 1, '/') && p[0] != '.' && p[0] != '/' && stat(p, &sb)) {
        snprintf(err, ERR_LEN, "%.400s (a Hugging Face hub id? llmgen does not download models: give a local "
                 "GGUF file or model directory)", e);
        return st;
    }
    if (st) snprintf(err, ERR_LEN, "%s%.500s", st == LLMGEN_E_USAGE && c->kernels ? "--" : "", e);
    return st;
}

static llmgen_status read_fail(llmgen_status st, char *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static llmgen_status read_fail(llmgen_status st, char *err, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERR_LEN, fmt, ap);
    va_end(ap);
    return st;
}

llmgen_status cli_read_file(const char *path, const char *what, char **out, char *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return read_fail(LLMGEN_E_IO, err, "%s: cannot open %s: %s", what, path, strerror(errno));
    char *p = NULL;
    size_t n = 0, cap = 0;
    int nomem = 0;
    for (;;) {
        if (cap - n < 65536) {
            char *q = realloc(p, cap = cap * 2 + 65536);
            if (!q) { nomem = 1; break; }
            p = q;
        }
        size_t k = fread(p + n, 1, cap - n - 1, f);
        n += k;
        if (!k) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (nomem) {
        free(p);
        return read_fail(LLMGEN_E_NOMEM, err, "%s: out of memory reading %s", what, path);
    }
    if (bad) {
        free(p);
        return read_fail(LLMGEN_E_IO, err, "%s: read error on %s", what, path);
    }
    p[n] = '\0';
    if (strlen(p) != n) {
        free(p);
        return read_fail(LLMGEN_E_USAGE, err, "%s: %s contains a NUL byte", what, path);
    }
    *out = p;
    return LLMGEN_OK;
}

int cli_valid_date(const char *d) {
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

const char *cli_ctx_hint(const llmgen_session *s, const llmgen_capabilities *caps, char *buf, size_t n) {
    int ctx = s ? llmgen_session_ctx(s) : 0, max = caps->context_length;
    if (max > 0 && ctx >= max) snprintf(buf, n, "%d is the model's maximum: shorten the prompt or lower -n", max);
    else if (max > 0) snprintf(buf, n, "raise -c, up to the model's %d", max);
    else snprintf(buf, n, "raise -c");
    return buf;
}

int cli_schema_note(const char *schema, int strict, const char *src) {
    char warn[CLI_ERR_LEN], err[CLI_ERR_LEN];
    if (llmgen_json_schema_check(schema, strict, warn, sizeof warn, err, sizeof err)) {
        if (!src) fprintf(stderr, "llmgen: %s\n", err);
        return -1;
    }
    if (*warn) fprintf(stderr, "llmgen: warning: %s%s%s (--strict-schema refuses it)\n", src ? src : "", src ? ": " : "", warn);
    return 0;
}
