/* verify.c - `llmgen verify REFS.jsonl`: token-exact regression checks against stored
 * reference outputs (one JSON object per line, see verify_refs.h).
 *
 * Each case runs greedy generation of len(expected_ids) tokens through llmgen_generate
 * (end-of-sequence ids do not stop it) and stops at the first step where the produced
 * id differs from the expected one. By default the expected ids are the drafts of
 * speculative decoding (teacher forcing): after the prompt, llmgen_decode_rows passes of
 * 8, 16, 32 ... of them give every step's logits at once, the bits step-by-step
 * decoding gives (llmgen.h), so the lines are those of --no-teacher-forcing, which runs
 * one decode step per token. A difference where the reference's top-2 logit gap
 * is below the tolerance is a near-tie: the two implementations may round either way
 * there, so the case passes (and says so); any other difference fails. After a
 * difference nothing more can be compared: the two continuations have different
 * contexts from that step on.
 *
 * Every line is parsed before any model is opened: a bad line is one diagnostic and
 * exit 1, with nothing run. Models are opened as the cases name them (-m overrides
 * every case's "model"; a relative "model" is relative to the directory of REFS),
 * consecutive cases of one model share it.
 *
 * Part of the CLI (see cli.h): one line per case on io->out, then "N passed, M failed". */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "progress.h"
#include "request.h"
#include "verify_refs.h"

enum { V_TOLERANCE = CLI_OWN, V_NO_TF };

static const cli_opt table[] = {
    CLI_OPT_MODEL("MODEL", "use MODEL for every case (else each case's \"model\", relative to REFS)"),
    {V_TOLERANCE, 0, "tolerance", "GAP", "near-tie threshold on the reference's top-2 logit gap (default 0.001)"},
    CLI_OPT_CTX("context size (default: min(model, " CLI_STR(LLMGEN_DEFAULT_CONTEXT) "))"),
    CLI_OPT_THREADS,
    CLI_OPT_EXACT,
    CLI_OPT_KERNELS,
    CLI_OPT_PROGRESS,
    CLI_OPT_SPLIT_ALL,
    {V_NO_TF, 0, "no-teacher-forcing", NULL,
     "one decode step per token (default: the expected ids run as drafts,\n"
     "8, 16, 32 ... per pass, which gives the same logits bits and lines, faster)"},
    CLI_OPT_HELP,
    {0, 0, NULL, NULL, NULL},
};

static int print_help(FILE *f) {
    return fputs("usage: llmgen verify REFS.jsonl [-m MODEL] [--tolerance GAP] [-c CTX] [-t N] [--exact]\n"
                 "                    [--kernels NAME] [--no-teacher-forcing]\n"
                 "Check greedy generation against reference ids. Each line of REFS.jsonl is\n"
                 "  {\"id\": ..., \"model\"?: path, \"prompt\": text | \"prompt_ids\": [ids], \"chat\"?: bool,\n"
                 "   \"expected_ids\": [ids], \"top2_gap\"?: [floats]}\n"
                 "(tests/gen/write_verify_refs.py writes such a file with HF transformers). Each case\n"
                 "generates len(expected_ids) tokens greedily (end tokens do not stop it) and prints `ok`, or\n"
                 "the first differing step with the expected and produced ids and the reference's top-2 logit\n"
                 "gap there; the last line is `N passed, M failed`. A difference where that gap is below GAP\n"
                 "(default 1e-3) is a near-tie and passes. Exit status 0 when all pass, 1 when any fails.\n"
                 "Use --exact for references made in full precision: the fast default mode may differ from them.\n\n",
                 f) == EOF || cli_print_options(f, table) ? -1 : 0;
}

typedef struct {
    cli_common c; /* -m, -c, -t, --exact, --kernels, -h */
    const char *refs;
    double tolerance;
    int no_tf; /* --no-teacher-forcing */
} verify_args;

static int parse(int argc, char **argv, verify_args *a, const cli_io *io) {
    memset(a, 0, sizeof *a);
    a->tolerance = 1e-3;
    cli_args args;
    cli_args_init(&args, argc, argv);
    char err[ERR_LEN];
    const char *v;
    int id;
    while ((id = cli_next(&args, table, &v, err)) != CLI_DONE) {
        int taken = id > 0 ? cli_common_take(&a->c, id, v, err) : 0;
        if (id == CLI_BAD || taken < 0) return cli_fail(io, EXIT_USAGE, "verify: %s", err);
        if (a->c.help) return 0;
        if (id == V_TOLERANCE) {
            if (cli_number(v, 0, 1e30, 0, &a->tolerance))
                return cli_fail(io, EXIT_USAGE, "verify: --tolerance: expected a number >= 0, got '%s'", v);
        } else if (id == V_NO_TF) {
            a->no_tf = 1;
        } else if (id == CLI_ARG && !a->refs) {
            a->refs = v;
        } else if (id == CLI_ARG) {
            return cli_fail(io, EXIT_USAGE, "verify: unexpected argument '%s'", v);
        }
    }
    if (!a->refs) return cli_fail(io, EXIT_USAGE, "usage: llmgen verify REFS.jsonl [-m MODEL] [--tolerance GAP]");
    return 0;
}

/* Every line of the file parsed (blank lines skipped). */
static int read_cases(const char *path, verify_case **out, int *n, const cli_io *io) {
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f) return cli_fail(io, EXIT_IO, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL, err[ERR_LEN];
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0, ncap = 0;
    errno = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
        if ((size_t)len <= strspn(line, " \t")) continue;
        if (*n == ncap) {
            verify_case *c = realloc(*out, (size_t)(ncap = ncap ? 2 * ncap : 16) * sizeof *c);
            if (!c) {
                rc = cli_fail(io, EXIT_NOMEM, "out of memory");
                break;
            }
            *out = c;
        }
        if (verify_case_parse(line, (size_t)len, &(*out)[*n], err)) {
            rc = cli_fail(io, EXIT_USAGE, "%s:%ld: %s", path, lineno, err);
            break;
        }
        (*n)++;
        errno = 0;
    }
    if (!rc && ferror(f)) rc = cli_fail(io, EXIT_IO, "%s: read error: %s", path, strerror(errno));
    if (!rc && !*n) rc = cli_fail(io, EXIT_USAGE, "%s: no references in the file", path);
    free(line);
    if (f != stdin) fclose(f);
    return rc;
}

/* The per-piece callback: stop at the first id that differs from the reference. */
typedef struct {
    const int32_t *expected;
    int step, diff; /* diff: the step of the first difference, or -1 */
    volatile sig_atomic_t *interrupted;
    int n_prompt, n_expected;
    int pass_max; /* the next pass's drafts: 8, doubling while every draft was the produced id */
    const float *logits; /* the logits of the step being checked (valid until the next step) */
    int vocab;
    float own_gap;       /* at the difference: llmgen's top-2 log-probability gap */
} check;

static int on_logits(void *user, const float *logits, int n_vocab) {
    check *C = user;
    C->logits = logits;
    C->vocab = n_vocab;
    return 0;
}

/* The two largest log-probabilities of lg apart (first index on ties), computed as
 * llmgen_generate's logprobs are (log-softmax in double, each rounded to float): only
 * at the difference, not at every step. */
static float top2_gap(const float *lg, int V) {
    float mx = lg[0];
    for (int i = 1; i < V; i++)
        if (lg[i] > mx) mx = lg[i];
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)lg[i] - mx);
    double lse = (double)mx + log(sum);
    int a = 0, b = -1;
    for (int i = 1; i < V; i++)
        if (lg[i] > lg[a]) b = a, a = i;
        else if (b < 0 || lg[i] > lg[b]) b = i;
    return (float)((double)lg[a] - lse) - (float)((double)lg[b] - lse);
}

static int on_piece(void *user, int32_t id, const char *text, size_t len) {
    check *C = user;
    (void)text, (void)len;
    if (id < 0) return 0;
    if (id != C->expected[C->step] && C->diff < 0) {
        C->diff = C->step;
        C->own_gap = top2_gap(C->logits, C->vocab);
    }
    C->step++;
    return C->diff >= 0 || *C->interrupted;
}

/* Teacher forcing: the drafts are the expected ids after those generated so far, in passes
 * of 8, 16, 32 ... drafts, so that a difference early in a case wastes few rows. */
static int expected_draft(void *user, const int32_t *ids, int n, int32_t *draft, int max) {
    check *C = user;
    int done = n - C->n_prompt, k = C->n_expected - done < max ? C->n_expected - done : max;
    (void)ids;
    if (C->diff >= 0 || k <= 0) return 0;
    if (k > C->pass_max) k = C->pass_max;
    C->pass_max *= 2;
    memcpy(draft, C->expected + done, (size_t)k * sizeof *draft);
    return k;
}

/* The model a case runs on: path of -m, else the case's, relative to REFS' directory. */
static char *model_path(const verify_args *a, const verify_case *c) {
    const char *p = a->c.model ? a->c.model : c->model;
    if (!p) return NULL;
    if (a->c.model || p[0] == '/' || !strcmp(a->refs, "-")) return strdup(p);
    char *d = strdup(a->refs), *out = NULL;
    if (d && asprintf(&out, "%s/%s", dirname(d), p) < 0) out = NULL;
    free(d);
    return out;
}

/* Run one case: 0 = passed, 1 = failed, or an exit code > 1 (the model could not run). */
static int run_case(const verify_args *a, const verify_case *c, llmgen_model *m, llmgen_session *s, const cli_io *io) {
    char err[ERR_LEN];
    request q = {.text = c->prompt, .text_len = c->prompt_len, .ids = c->prompt_ids, .n_ids = c->n_prompt_ids,
                 .source = c->name, .chat = c->chat};
    int32_t *prompt = NULL;
    int n = 0, rc = 1;
    llmgen_status st = request_prompt(m, &q, &prompt, &n, NULL, err);
    if (st) {
        fprintf(io->out, "FAIL %s: %s\n", c->name, err);
        return st == LLMGEN_E_USAGE || st == LLMGEN_E_CONTEXT ? 1 : cli_exit_code(st);
    }
    llmgen_generate_params p;
    llmgen_generate_defaults(&p);
    p.max_tokens = c->n_expected;
    p.ignore_eos = 1;
    check C = {c->expected, 0, -1, io->interrupted, n, c->n_expected, 8, NULL, 0, 0};
    p.on_piece = on_piece;
    p.on_logits = on_logits;
    p.user = &C;
    if (!a->no_tf) {
        p.draft_fn = expected_draft;
        p.draft_user = &C;
        p.draft_max = 127;
    }
    llmgen_result r;
    st = llmgen_generate(s, prompt, n, &p, &r, err, sizeof err);
    if (st) {
        fprintf(io->out, "FAIL %s: %s\n", c->name, err);
        rc = st == LLMGEN_E_USAGE || st == LLMGEN_E_CONTEXT ? 1 : cli_exit_code(st);
    } else if (C.diff >= 0) {
        int k = C.diff;
        char own[64] = "";
        if (C.vocab >= 2) snprintf(own, sizeof own, "; llmgen's %.6g", (double)C.own_gap);
        if (c->gap && c->gap[k] < a->tolerance) {
            fprintf(io->out, "ok %s: near-tie at step %d: expected %d, produced %d (reference top-2 gap %.6g < %g%s)\n",
                    c->name, k, c->expected[k], r.ids[k], c->gap[k], a->tolerance, own);
            rc = 0;
        } else if (c->gap) {
            fprintf(io->out, "FAIL %s: step %d: expected %d, produced %d (reference top-2 gap %.6g%s)\n", c->name, k,
                    c->expected[k], r.ids[k], c->gap[k], own);
        } else {
            fprintf(io->out, "FAIL %s: step %d: expected %d, produced %d (the reference gives no top-2 gap%s)\n",
                    c->name, k, c->expected[k], r.ids[k], own);
        }
    } else if (r.n_ids < c->n_expected) {
        fprintf(io->out, "FAIL %s: stopped (%s) after %d of %d tokens%s\n", c->name,
                llmgen_stop_reason_name(r.stop_reason), r.n_ids, c->n_expected,
                r.stop_reason == LLMGEN_STOP_CONTEXT ? " (raise -c)" : "");
        rc = r.stop_reason == LLMGEN_STOP_CANCELLED && *io->interrupted ? EXIT_INTERRUPT : 1;
    } else {
        fprintf(io->out, "ok %s (%d tokens)\n", c->name, c->n_expected);
        rc = 0;
    }
    fflush(io->out);
    llmgen_result_free(&r);
    free(prompt);
    return rc;
}

int verify_main(int argc, char **argv, const cli_io *io) {
    verify_args a;
    verify_case *cases = NULL;
    int n = 0, rc = parse(argc, argv, &a, io), passed = 0, failed = 0;
    if (rc) return rc;
    if (a.c.help)
        return print_help(io->out) || fflush(io->out) || ferror(io->out) ? cli_fail(io, EXIT_IO, "stdout: write error")
                                                                          : EXIT_OK;
    if ((rc = read_cases(a.refs, &cases, &n, io))) goto out;
    for (int i = 0; i < n; i++)
        if (!a.c.model && !cases[i].model) {
            rc = cli_fail(io, EXIT_USAGE, "%s: case %s names no \"model\": give -m MODEL", a.refs, cases[i].name);
            goto out;
        }
    llmgen_model *m = NULL;
    llmgen_session *s = NULL;
    char *open_path = NULL, err[ERR_LEN];
    int noted = 0; /* the -t note, once */
    progress pg;
    progress_init(&pg, io->diag, a.c.progress);
    for (int i = 0; i < n && !rc; i++) {
        char *path = model_path(&a, &cases[i]);
        if (!path) {
            rc = cli_fail(io, EXIT_NOMEM, "out of memory");
            break;
        }
        if (!open_path || strcmp(path, open_path)) {
            llmgen_session_free(s);
            llmgen_model_free(m);
            s = NULL;
            m = NULL;
            free(open_path);
            open_path = path;
            llmgen_status st = cli_model_open(&a.c, path, 0, &m, err);
            if (!st) st = llmgen_session_new(m, a.c.ctx, &s, err, sizeof err);
            if (!st && !noted++) {
                llmgen_capabilities caps;
                llmgen_model_capabilities(m, &caps);
                cli_threads_note(io->diag, a.c.threads, &caps);
            }
            if (st) {
                rc = cli_fail(io, cli_exit_code(st), "%s", err);
                break;
            }
        } else {
            free(path);
        }
        progress_clear(&pg); /* the result line goes where it would without one */
        int r = *io->interrupted ? EXIT_INTERRUPT : run_case(&a, &cases[i], m, s, io);
        if (r > 1) rc = r;
        else if (r) failed++;
        else passed++;
        char left[32];
        double t = progress_elapsed(&pg);
        fflush(io->out);
        progress_update(&pg, i + 1 == n, "verify: %d/%d references, %d failed, %s left", i + 1, n, failed,
                        progress_time(t / (i + 1) * (n - i - 1), left, sizeof left));
    }
    progress_clear(&pg);
    llmgen_session_free(s);
    llmgen_model_free(m);
    free(open_path);
    if (!rc) {
        fprintf(io->out, "%d passed, %d failed\n", passed, failed);
        if (fflush(io->out) || ferror(io->out)) rc = cli_fail(io, EXIT_IO, "stdout: write error: %s", strerror(errno));
        else rc = failed ? EXIT_USAGE : EXIT_OK;
        if (failed && !a.c.exact)
            fprintf(io->diag, "llmgen: note: verify ran in the fast mode, which is not token-exact with transformers: "
                    "references made with it (write_verify_refs.py) are checked with --exact\n");
    }
out:
    for (int i = 0; i < n; i++) verify_case_free(&cases[i]);
    free(cases);
    return rc;
}
