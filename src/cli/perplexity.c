/* perplexity.c - `llmgen perplexity`: perplexity of a text and KL divergence against a
 * base run, scored as llama.cpp's llama-perplexity scores them.
 *
 * Tokens: the whole text through the model's tokenizer with its special tokens (a BOS
 * where the model adds one), or ids from --ids-file. Chunks of CTX tokens, each in a
 * fresh context (the session is reset), the first token of each chunk replaced by BOS
 * when the tokenizer adds one; the logits of positions CTX/2 .. CTX-2 score the tokens
 * after them (CTX - 1 - CTX/2 per chunk), so every scored token has at least CTX/2
 * tokens of context. As llama-perplexity, at least 2 * CTX tokens are needed, and the
 * chunks are the first min(N, tokens / CTX).
 *
 * --kl-divergence-base FILE writes llama-perplexity's base file (its --kl-divergence-base
 * format, so either program reads the other's): "_logits_", u32 n_ctx, i32 n_vocab,
 * i32 n_chunk, i32 tokens[n_chunk * n_ctx] (as tokenized, before the BOS replacement),
 * then per chunk and scored position one row of nv = 2 * ((n_vocab + 1) / 2) + 4 u16:
 * f32 scale and f32 min_log_prob in the first four, then the log-probabilities within 16
 * of the largest, quantized as round((logit - min_logit) / scale) with
 * scale = (max - min) / 65535 (0 for those below; decoded as scale * q + min_log_prob).
 * Little-endian, as both programs write it on the machines they run on.
 * With --kl-divergence the tokens and CTX come from that file and the run is compared
 * to it: mean / percentiles of the KL divergence (terms where the base log-probability
 * is above -16), PPL ratio with its uncertainty, RMS of the change of the correct
 * token's probability, and the rate at which both runs have the same most likely token,
 * each computed as llama-perplexity computes it.
 *
 * Part of the CLI (see cli.h): progress goes to io->diag, results to io->out. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "progress.h"
#include "request.h"

#define KLD_MAGIC "_logits_"

enum { P_FILE = CLI_OWN, P_IDS_FILE, P_CHUNKS, P_BASE, P_KLD };

static const cli_opt table[] = {
    CLI_OPT_MODEL("MODEL", "the model"),
    {P_FILE, 'f', "file", "FILE", "the text (UTF-8; \"-\": stdin), tokenized with the model's tokenizer"},
    {P_IDS_FILE, 0, "ids-file", "FILE", "token ids instead (separated by commas or whitespace; \"-\": stdin)"},
    CLI_OPT_CTX("tokens per chunk, 4..model context (default 512)"),
    {P_CHUNKS, 0, "chunks", "N", "at most N chunks (default: all)"},
    {P_BASE, 0, "kl-divergence-base", "BASE", "write the log-probabilities of this run to BASE (llama-perplexity's\n"
                                              "format); with --kl-divergence, read BASE instead"},
    {P_KLD, 0, "kl-divergence", NULL, "use BASE's tokens and CTX, and compare this run with it (KL divergence,\n"
                                      "PPL ratio, RMS of the change in the correct token's probability,\n"
                                      "same top token; --chunks N: its first N chunks)"},
    CLI_OPT_THREADS,
    CLI_OPT_EXACT,
    CLI_OPT_KERNELS,
    CLI_OPT_PROGRESS,
    CLI_OPT_SPLIT_ALL,
    CLI_OPT_HELP,
    {0, 0, NULL, NULL, NULL},
};

static int print_help(FILE *f) {
    return fputs("usage: llmgen perplexity -m MODEL (-f FILE | --ids-file FILE) [-c CTX] [--chunks N]\n"
                 "                         [--kl-divergence-base BASE [--kl-divergence]] [-t N] [--exact]\n"
                 "                         [--kernels NAME]\n"
                 "Perplexity of a text as llama.cpp's llama-perplexity computes it: chunks of CTX tokens\n"
                 "(default 512), each in a fresh context with a BOS first where the model adds one, the\n"
                 "second half of each chunk scored; at least 2*CTX tokens. Progress on stderr; the last\n"
                 "line on stdout is `PPL = x +/- e`.\n\n",
                 f) == EOF || cli_print_options(f, table) ? -1 : 0;
}

typedef struct {
    cli_common c; /* -m, -c, -t, --exact, --kernels, -h */
    const char *file, *ids_file, *base;
    int ctx, chunks, kld;
} ppl_args;

static int parse(int argc, char **argv, ppl_args *a, const cli_io *io) {
    memset(a, 0, sizeof *a);
    a->chunks = -1;
    cli_args args;
    cli_args_init(&args, argc, argv);
    char err[ERR_LEN];
    const char *v;
    int id;
    double x;
    while ((id = cli_next(&args, table, &v, err)) != CLI_DONE) {
        int taken = id > 0 ? cli_common_take(&a->c, id, v, err) : 0;
        if (id == CLI_BAD || taken < 0) return cli_fail(io, EXIT_USAGE, "perplexity: %s", err);
        if (a->c.help) return 0;
        if (id == P_FILE || id == P_IDS_FILE || id == P_BASE) {
            *(id == P_FILE ? &a->file : id == P_IDS_FILE ? &a->ids_file : &a->base) = v;
        } else if (id == P_KLD) {
            a->kld = 1;
        } else if (id == P_CHUNKS) {
            if (cli_value("--chunks", v, 1, 1 << 30, 1, &x, err))
                return cli_fail(io, EXIT_USAGE, "perplexity: %s", err);
            a->chunks = (int)x;
        } else if (id == CLI_ARG) {
            return cli_fail(io, EXIT_USAGE, "perplexity: unexpected argument '%s' (see llmgen perplexity --help)", v);
        }
    }
    if (a->c.ctx && a->c.ctx < 4)
        return cli_fail(io, EXIT_USAGE, "perplexity: --ctx-size: invalid value '%d' (expected an integer from 4 to %d)",
                        a->c.ctx, LLMGEN_MAX_CONTEXT);
    a->ctx = a->c.ctx ? a->c.ctx : 512;
    if (!a->c.model) return cli_fail(io, EXIT_USAGE, "perplexity: no model given: use -m MODEL");
    if (a->kld && !a->base) return cli_fail(io, EXIT_USAGE, "perplexity: --kl-divergence needs --kl-divergence-base BASE");
    if (a->kld && (a->file || a->ids_file || a->c.ctx))
        return cli_fail(io, EXIT_USAGE, "perplexity: --kl-divergence takes its tokens and context size from the base "
                                        "file (no -f, --ids-file or -c)");
    if (!a->kld && !!a->file + !!a->ids_file != 1)
        return cli_fail(io, EXIT_USAGE, "perplexity: give one of -f FILE and --ids-file FILE");
    return 0;
}

/* ---- statistics (as llama-perplexity's) --------------------------------------------- */

typedef struct {
    double nll, nll2, nll_base, nll_base2, nll_nll_base, kld, kld2, dp, dp2, dp4;
    long count, same_top;
    float *kld_values, *dp_values; /* (count) per scored token, for the percentiles */
} ppl_stats;

/* Mean and its standard error of a sum of `count` values and their squares. */
static void mean_unc(double sum, double sum2, long count, double *mean, double *unc) {
    *mean = count ? sum / (double)count : 0;
    double var = count ? sum2 / (double)count - *mean * *mean : 0;
    *unc = var > 0 && count > 10 ? sqrt(var / (double)(count - 1)) : 0;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between the sorted values around fraction * (n - 1). */
static double percentile(const float *v, long n, double fraction) {
    if (fraction <= 0) return v[0];
    if (fraction >= 1) return v[n - 1];
    double p = fraction * (double)(n - 1);
    long ip = (long)p;
    p -= (double)ip;
    return (1 - p) * v[ip] + p * v[ip + 1 < n ? ip + 1 : n - 1];
}

static double median(const float *v, long n) { return n % 2 ? v[n / 2] : 0.5 * (v[n / 2] + v[n / 2 - 1]); }

static void print_kld(FILE *f, ppl_stats *S) {
    long n = S->count;
    double lp, lpu, lb, lbu, k, ku, m2, m2u, dp, dpu;
    mean_unc(S->nll, S->nll2, n, &lp, &lpu);
    mean_unc(S->nll_base, S->nll_base2, n, &lb, &lbu);
    double cov = n < 10 ? 0 : (S->nll_nll_base / (double)n - (S->nll / (double)n) * (S->nll_base / (double)n)) /
                                  (double)(n - 1);
    double ratio_unc = sqrt(lpu * lpu + lbu * lbu - 2 * cov), ppl = exp(lp), base = exp(lb);
    fprintf(f, "Mean PPL(Q)                   : %10.6f +/- %10.6f\n", ppl, ppl * lpu);
    fprintf(f, "Mean PPL(base)                : %10.6f +/- %10.6f\n", base, base * lbu);
    fprintf(f, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100 * cov / (lpu * lbu));
    fprintf(f, "Mean ln(PPL(Q)/PPL(base))     : %10.6f +/- %10.6f\n", lp - lb, ratio_unc);
    fprintf(f, "Mean PPL(Q)/PPL(base)         : %10.6f +/- %10.6f\n", exp(lp - lb), exp(lp - lb) * ratio_unc);
    double pu = ppl * lpu, bu = base * lbu;
    fprintf(f, "Mean PPL(Q)-PPL(base)         : %10.6f +/- %10.6f\n", ppl - base,
            sqrt(pu * pu + bu * bu - 2 * ppl * base * cov));
    mean_unc(S->kld, S->kld2, n, &k, &ku);
    qsort(S->kld_values, (size_t)n, sizeof(float), cmp_float);
    qsort(S->dp_values, (size_t)n, sizeof(float), cmp_float);
    fprintf(f, "Mean    KLD: %10.6f +/- %10.6f\n", k, ku);
    static const struct { const char *name; double frac; } pk[] = {
        {"Maximum", 1}, {"99.9%  ", 0.999}, {"99.0%  ", 0.99}, {"95.0%  ", 0.95}, {"90.0%  ", 0.9}, {"Median ", -1},
        {"10.0%  ", 0.1}, {" 5.0%  ", 0.05}, {" 1.0%  ", 0.01}, {" 0.1%  ", 0.001}, {"Minimum", 0}};
    for (size_t i = 0; i < sizeof pk / sizeof *pk; i++)
        fprintf(f, "%s KLD: %10.6f\n", pk[i].name,
                pk[i].frac < 0 ? median(S->kld_values, n) : percentile(S->kld_values, n, pk[i].frac));
    mean_unc(S->dp, S->dp2, n, &dp, &dpu);
    fprintf(f, "Mean    Δp: %6.3f +/- %5.3f %%\n", 100 * dp, 100 * dpu);
    fprintf(f, "Maximum Δp: %6.3f%%\n", 100 * S->dp_values[n - 1]);
    fprintf(f, "Median  Δp: %6.3f%%\n", 100 * median(S->dp_values, n));
    fprintf(f, "Minimum Δp: %6.3f%%\n", 100 * S->dp_values[0]);
    mean_unc(S->dp2, S->dp4, n, &m2, &m2u);
    fprintf(f, "RMS Δp    : %6.3f +/- %5.3f %%\n", 100 * sqrt(m2), m2 > 0 ? 100 * 0.5 / sqrt(m2) * m2u : 0.0);
    double top = (double)S->same_top / (double)n;
    fprintf(f, "Same top p: %6.3f +/- %5.3f %%\n", 100 * top, n > 1 ? 100 * sqrt(top * (1 - top) / (double)(n - 1)) : 0.0);
}

/* ---- one chunk's rows ---------------------------------------------------------------- */

typedef struct {
    const int32_t *tokens;   /* the chunk's tokens (before the BOS replacement): targets */
    int first, V, nv;
    ppl_stats *S;
    uint16_t *rows;          /* (n_score, nv): written (base) or read (--kl-divergence) */
    int kld;
} chunk_job;

/* log-softmax facts of one row of logits: max, its index (first on ties), log sum exp. */
static void row_lse(const float *lg, int V, float *mx, int *imax, float *lse) {
    *mx = lg[0];
    *imax = 0;
    for (int i = 1; i < V; i++)
        if (lg[i] > *mx) *mx = lg[i], *imax = i;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)lg[i] - *mx);
    *lse = (float)log(sum);
}

/* The base file's row: the format's quantization (see the top of this file). */
static void base_row(const float *lg, int V, float mx, float lse, uint16_t *row) {
    float mn = lg[0];
    for (int i = 1; i < V; i++)
        if (lg[i] < mn) mn = lg[i];
    if (mn < mx - 16) mn = mx - 16;
    float scale = (mx - mn) / 65535.f, min_log_prob = mn - mx - lse, d[2] = {scale, min_log_prob};
    memcpy(row, d, sizeof d);
    uint16_t *q = row + 4;
    if (scale) {
        float inv = 1 / scale;
        for (int i = 0; i < V; i++) q[i] = lg[i] > mn ? (uint16_t)lrintf(inv * (lg[i] - mn)) : 0;
    } else {
        memset(q, 0, (size_t)V * sizeof *q);
    }
}

static void on_row(void *user, int i, const float *lg, int V) {
    chunk_job *J = user;
    ppl_stats *S = J->S;
    int tok = J->tokens[i + 1], k = i - J->first, imax;
    float mx, lse;
    row_lse(lg, V, &mx, &imax, &lse);
    float nll = mx + lse - lg[tok];
    S->nll += nll;
    S->nll2 += (double)nll * nll;
    uint16_t *row = J->rows ? J->rows + (size_t)k * (size_t)J->nv : NULL;
    if (row && !J->kld) base_row(lg, V, mx, lse, row);
    if (J->kld) {
        float d[2];
        memcpy(d, row, sizeof d);
        const uint16_t *q = row + 4;
        float nll_base = -(d[0] * q[tok] + d[1]);
        S->nll_base += nll_base;
        S->nll_base2 += (double)nll_base * nll_base;
        S->nll_nll_base += (double)nll * nll_base;
        double sum = 0, shift = (double)mx + lse;
        float best = 0;
        int ibest = -1;
        for (int j = 0; j < V; j++) {
            float lb = d[0] * q[j] + d[1];
            if (j == 0 || lb > best) best = lb, ibest = j;
            if (lb > -16.f) sum += exp(lb) * (lb - (lg[j] - shift));
        }
        float dp = expf(-nll) - expf(-nll_base);
        S->kld += sum;
        S->kld2 += sum * sum;
        S->dp += dp;
        S->dp2 += (double)dp * dp;
        S->dp4 += (double)dp * dp * dp * dp;
        S->same_top += imax == ibest;
        S->kld_values[S->count] = (float)sum;
        S->dp_values[S->count] = dp;
    }
    S->count++;
}

/* ---- input ----------------------------------------------------------------------------- */

/* All of path ("-": stdin). */
static char *read_file(const char *path, size_t *len, const cli_io *io, int *rc) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return *rc = cli_fail(io, EXIT_IO, "%s: cannot open: %s", path, strerror(errno)), NULL;
    char *t = read_all_fd(fileno(f), len);
    int e = errno;
    if (f != stdin) fclose(f);
    if (!t) *rc = cli_fail(io, e == ENOMEM ? EXIT_NOMEM : EXIT_IO, "%s: read error: %s", path, strerror(e));
    return t;
}

/* The base file's header and tokens; the rows stay in f for the chunks to read. */
static int read_base_header(FILE *f, const char *path, int V, int32_t **tokens, int *ctx, int *n_chunk,
                            const cli_io *io) {
    char magic[8];
    uint32_t n_ctx;
    int32_t hv[2];
    struct stat sb;
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, KLD_MAGIC, 8) || fread(&n_ctx, 4, 1, f) != 1 ||
        fread(hv, 4, 2, f) != 2)
        return cli_fail(io, EXIT_USAGE, "%s: not a log-probability base file (expected \"%s\", n_ctx, n_vocab, n_chunk)",
                        path, KLD_MAGIC);
    if (hv[0] != V)
        return cli_fail(io, EXIT_USAGE, "%s: made with a vocabulary of %d tokens, this model has %d", path, hv[0], V);
    if (n_ctx < 4 || n_ctx > LLMGEN_MAX_CONTEXT || hv[1] < 1 || hv[1] > (1 << 24))
        return cli_fail(io, EXIT_USAGE, "%s: bad header (n_ctx %u, n_chunk %d)", path, n_ctx, hv[1]);
    long long nv = 2 * ((V + 1) / 2) + 4, rows = (long long)n_ctx - 1 - n_ctx / 2;
    long long want = 20 + 4LL * n_ctx * hv[1] + 2 * nv * rows * hv[1];
    if (fstat(fileno(f), &sb) || sb.st_size != want)
        return cli_fail(io, EXIT_USAGE, "%s: %lld bytes, expected %lld for %d chunks of %u tokens and %d logits", path,
                        (long long)sb.st_size, want, hv[1], n_ctx, V);
    size_t n = (size_t)n_ctx * (size_t)hv[1];
    if (!(*tokens = malloc(n * sizeof **tokens))) return cli_fail(io, EXIT_NOMEM, "out of memory");
    if (fread(*tokens, 4, n, f) != n) return cli_fail(io, EXIT_IO, "%s: read error", path);
    for (size_t i = 0; i < n; i++)
        if ((*tokens)[i] < 0 || (*tokens)[i] >= V)
            return cli_fail(io, EXIT_USAGE, "%s: token %zu is %d, outside the vocabulary [0, %d)", path, i,
                            (*tokens)[i], V);
    *ctx = (int)n_ctx;
    *n_chunk = hv[1];
    return 0;
}

/* The tokens of -f / --ids-file. */
static int read_tokens(const ppl_args *a, llmgen_model *m, int32_t **tokens, int *n, const cli_io *io) {
    int rc = 0;
    size_t len;
    const char *path = a->file ? a->file : a->ids_file;
    char *t = read_file(path, &len, io, &rc), err[ERR_LEN];
    if (!t) return rc;
    if (a->ids_file) {
        if (parse_id_list(t, tokens, n) || !*n)
            rc = cli_fail(io, EXIT_USAGE, "%s: expected token ids separated by commas or whitespace", path);
    } else if (utf8_invalid_at(t, len) < len) { /* the text is at fault, not the model */
        rc = cli_fail(io, EXIT_USAGE, "%s: invalid UTF-8 at byte %zu", path, utf8_invalid_at(t, len));
    } else {
        size_t nt = 0;
        llmgen_status st = llmgen_tokenize(m, t, len, 1, 0, tokens, &nt, err, sizeof err);
        if (st) rc = cli_fail(io, cli_exit_code(st), "%s: %s", path, err);
        *n = (int)nt;
    }
    free(t);
    return rc;
}

/* ---- the run ----------------------------------------------------------------------------- */

static int run(const ppl_args *a, llmgen_model *m, const cli_io *io) {
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    int V = caps.vocab_size, ctx = a->ctx, n_tok = 0, n_chunk = 0, rc = 0, bos = -1;
    int32_t *tokens = NULL, *chunk = NULL, *b = NULL;
    size_t nb = 0;
    FILE *base = NULL;
    llmgen_session *s = NULL;
    ppl_stats S = {0};
    uint16_t *rows = NULL;
    char err[ERR_LEN];
    /* the BOS the tokenizer adds (llama-perplexity puts it first in every chunk) */
    if (caps.has_tokenizer && !llmgen_tokenize(m, "", 0, 1, 0, &b, &nb, NULL, 0) && nb == 1) bos = b[0];
    llmgen_free(b);
    if (a->kld) {
        if (!(base = fopen(a->base, "rb"))) return cli_fail(io, EXIT_IO, "%s: cannot open: %s", a->base, strerror(errno));
        if ((rc = read_base_header(base, a->base, V, &tokens, &ctx, &n_chunk, io))) goto out;
        if (a->chunks > 0 && a->chunks < n_chunk) n_chunk = a->chunks; /* the base's first chunks */
        n_tok = ctx * n_chunk;
    } else {
        if ((rc = read_tokens(a, m, &tokens, &n_tok, io))) goto out;
        if (n_tok < 2 * ctx) {
            rc = cli_fail(io, EXIT_USAGE, "%s: %d tokens; a context of %d needs at least %d (lower -c)",
                          a->file ? a->file : a->ids_file, n_tok, ctx, 2 * ctx);
            goto out;
        }
        n_chunk = n_tok / ctx;
        if (a->chunks > 0 && a->chunks < n_chunk) n_chunk = a->chunks;
        if (a->base && !(base = fopen(a->base, "wb"))) {
            rc = cli_fail(io, EXIT_IO, "%s: cannot write: %s", a->base, strerror(errno));
            goto out;
        }
        uint32_t hdr[3] = {(uint32_t)ctx, (uint32_t)V, (uint32_t)n_chunk};
        if (base && (fwrite(KLD_MAGIC, 1, 8, base) != 8 || fwrite(hdr, 4, 3, base) != 3 ||
                     fwrite(tokens, 4, (size_t)ctx * n_chunk, base) != (size_t)ctx * n_chunk)) {
            rc = cli_fail(io, EXIT_IO, "%s: write error: %s", a->base, strerror(errno));
            goto out;
        }
    }
    llmgen_status st = llmgen_session_new(m, ctx, &s, err, sizeof err);
    if (st) {
        rc = cli_fail(io, st == LLMGEN_E_USAGE ? EXIT_USAGE : cli_exit_code(st), "perplexity: %s", err);
        goto out;
    }
    int first = ctx / 2, n_score = ctx - 1 - first, nv = 2 * ((V + 1) / 2) + 4;
    long total = (long)n_score * n_chunk;
    chunk = malloc((size_t)ctx * sizeof *chunk);
    rows = base ? malloc((size_t)n_score * (size_t)nv * sizeof *rows) : NULL;
    S.kld_values = a->kld ? malloc((size_t)total * sizeof(float)) : NULL;
    S.dp_values = a->kld ? malloc((size_t)total * sizeof(float)) : NULL;
    if (!chunk || (base && !rows) || (a->kld && (!S.kld_values || !S.dp_values))) {
        rc = cli_fail(io, EXIT_NOMEM, "out of memory");
        goto out;
    }
    fprintf(io->diag, "llmgen: perplexity: %d tokens, %d chunks of %d, %d scored per chunk%s\n", n_tok, n_chunk, ctx,
            n_score, bos >= 0 ? ", BOS first" : "");
    progress pg;
    progress_init(&pg, io->diag, a->c.progress);
    for (int c = 0; c < n_chunk; c++) {
        if (*io->interrupted) {
            rc = EXIT_INTERRUPT;
            goto out;
        }
        struct timespec ta, tb;
        clock_gettime(CLOCK_MONOTONIC, &ta);
        const int32_t *src = tokens + (size_t)c * ctx;
        memcpy(chunk, src, (size_t)ctx * sizeof *chunk);
        if (bos >= 0) chunk[0] = bos;
        if (a->kld && fread(rows, sizeof *rows, (size_t)n_score * nv, base) != (size_t)n_score * nv) {
            rc = cli_fail(io, EXIT_IO, "%s: read error in chunk %d", a->base, c + 1);
            goto out;
        }
        chunk_job J = {src, first, V, nv, &S, rows, a->kld};
        llmgen_session_reset(s);
        /* the last position predicts nothing inside the chunk: run it, do not score it */
        st = llmgen_prefill_rows(s, chunk, ctx - 1, first, on_row, &J, NULL, err, sizeof err);
        if (st) {
            rc = cli_fail(io, cli_exit_code(st), "perplexity: chunk %d: %s", c + 1, err);
            goto out;
        }
        if (base && !a->kld && fwrite(rows, sizeof *rows, (size_t)n_score * nv, base) != (size_t)n_score * nv) {
            rc = cli_fail(io, EXIT_IO, "%s: write error: %s", a->base, strerror(errno));
            goto out;
        }
        clock_gettime(CLOCK_MONOTONIC, &tb);
        char left[32];
        double t = progress_elapsed(&pg);
        progress_update(&pg, c + 1 == n_chunk, "perplexity: chunk %d/%d: PPL %.4f (%.2f s per chunk), %s left", c + 1,
                        n_chunk, exp(S.nll / (double)S.count),
                        (double)(tb.tv_sec - ta.tv_sec) + 1e-9 * (double)(tb.tv_nsec - ta.tv_nsec),
                        progress_time(t / (c + 1) * (n_chunk - c - 1), left, sizeof left));
    }
    progress_clear(&pg);
    if (base && !a->kld && fflush(base)) {
        rc = cli_fail(io, EXIT_IO, "%s: write error: %s", a->base, strerror(errno));
        goto out;
    }
    if (a->kld) print_kld(io->out, &S);
    double mean = S.nll / (double)S.count, var = S.nll2 / (double)S.count - mean * mean;
    double unc = var > 0 && S.count > 1 ? sqrt(var / (double)(S.count - 1)) : 0;
    fprintf(io->out, "PPL = %.4f +/- %.5f\n", exp(mean), unc * exp(mean));
    if (fflush(io->out)) rc = cli_fail(io, EXIT_IO, "stdout: write error: %s", strerror(errno));
out:
    if (base && fclose(base) && !rc && !a->kld) rc = cli_fail(io, EXIT_IO, "%s: write error: %s", a->base, strerror(errno));
    llmgen_session_free(s);
    free(tokens);
    free(chunk);
    free(rows);
    free(S.kld_values);
    free(S.dp_values);
    return rc;
}

int perplexity_main(int argc, char **argv, const cli_io *io) {
    ppl_args a;
    char err[ERR_LEN];
    int rc = parse(argc, argv, &a, io);
    if (rc) return rc;
    if (a.c.help)
        return print_help(io->out) || fflush(io->out) || ferror(io->out) ? cli_fail(io, EXIT_IO, "stdout: write error")
                                                                          : EXIT_OK;
    llmgen_model *m;
    llmgen_status st = cli_model_open(&a.c, NULL, 0, &m, err);
    if (st) return cli_fail(io, cli_exit_code(st), "%s", err);
    llmgen_capabilities caps;
    llmgen_model_capabilities(m, &caps);
    cli_threads_note(io->diag, a.c.threads, &caps);
    if (a.file && !caps.has_tokenizer)
        rc = cli_fail(io, EXIT_USAGE, "%s: this model has no tokenizer: give the tokens with --ids-file", a.c.model);
    else
        rc = run(&a, m, io);
    llmgen_model_free(m);
    return rc;
}
